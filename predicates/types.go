package predicates

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
)

// stateTypes is what a run's node states can hold: every named struct
// type reachable from any node's handler, and whether some interface
// field means anything else could be there too.
type stateTypes struct {
	named map[string]reflect.Type // node.TypeName -> type
	open  bool                    // an interface is reachable
}

// runStateTypes collects the state types of every node of the run. A
// factory may build a different handler type per node (a coordinator and
// its participants), so each node's handler is built and visited; the
// walk is per distinct type, so thousands of nodes of one type cost one
// visit.
func (c *Checker) runStateTypes() (*stateTypes, error) {
	sys := c.r.System()
	tr := c.r.Trace()
	if len(tr.Nodes) == 0 {
		return nil, fmt.Errorf("the trace's header lists no nodes, so there is no state to check")
	}
	st := &stateTypes{named: map[string]reflect.Type{}}
	seen := map[reflect.Type]bool{}
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		if seen[t] || state.IsTime(t) {
			return
		}
		seen[t] = true
		if t.Name() != "" && t.Kind() == reflect.Struct {
			st.named[node.TypeName(t)] = t
		}
		switch t.Kind() {
		case reflect.Interface:
			st.open = true
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			visit(t.Elem())
		case reflect.Struct:
			for i := range t.NumField() {
				if t.Field(i).Tag.Get("replay") != "-" {
					visit(t.Field(i).Type)
				}
			}
		}
	}
	cfg := systemConfig(tr)
	for _, id := range tr.Nodes {
		if h := sys.New(id, cfg); h != nil {
			visit(reflect.TypeOf(h))
		}
	}
	return st, nil
}

// checkTableTypes rejects tables whose type is in no node's state,
// listing the types that are, and columns that are not observed fields.
func (c *Checker) checkTableTypes() error {
	st, err := c.runStateTypes()
	if err != nil {
		return err
	}
	for _, t := range c.tables {
		found := false
		for name, ty := range st.named {
			if t.name != name && !strings.HasSuffix(t.name, "/"+name) {
				continue
			}
			found = true
			for _, col := range t.columns {
				if _, ok := state.FieldByName(ty, col); !ok {
					return fmt.Errorf("%s: table(%q): column %q is not an observed field of %s (fields: %s)",
						t.pos, t.name, col, name, strings.Join(fieldNames(state.Fields(ty)), ", "))
				}
			}
			for _, l := range []struct {
				what string
				cols []string
			}{{"views", t.views}, {"chained", t.chained}} {
				for _, col := range l.cols {
					f, ok := state.FieldByName(ty, col)
					if !ok {
						return fmt.Errorf("%s: table(%q): %s: %q is not a column of %s", t.pos, t.name, l.what, col, name)
					}
					if !t.hasColumn(col) {
						return fmt.Errorf("%s: table(%q): %s: %q is a field of %s left out by columns= (add it there too)", t.pos, t.name, l.what, col, name)
					}
					ft := ty.Field(f.Index).Type
					k := ft.Kind()
					switch {
					case k == reflect.Slice || k == reflect.Array:
					case l.what == "views" && viewableMap(ft):
					case l.what == "views" && k == reflect.Map:
						return fmt.Errorf("%s: table(%q): views: %q is a map keyed by %s: a view reads maps keyed by strings, integers or booleans",
							t.pos, t.name, col, ft.Key())
					case l.what == "views":
						return fmt.Errorf("%s: table(%q): views: %q is not a list or a map (a Go slice, array or map): %s.%s is a %s",
							t.pos, t.name, col, name, col, k)
					default:
						return fmt.Errorf("%s: table(%q): %s: %q is not a list (a Go slice or array): %s.%s is a %s",
							t.pos, t.name, l.what, col, name, col, k)
					}
				}
			}
		}
		if !found && !st.open {
			names := slices.Sorted(maps.Keys(st.named))
			return fmt.Errorf("%s: table(%q): no type of that name is in any node state of %s (types there: %s)",
				t.pos, t.name, c.r.System().Name, strings.Join(names, ", "))
		}
	}
	return nil
}
