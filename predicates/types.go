package predicates

import (
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/internal/nearest"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
)

// stateTypes is what a run's node states can hold: every named struct
// type reachable from any node's handler, and whether some interface
// field means anything else could be there too.
type stateTypes struct {
	named map[string]reflect.Type // node.TypeName -> type
	open  bool                    // an interface is reachable
	seen  map[reflect.Type]bool
}

// visit adds the named struct types reachable from t.
func (st *stateTypes) visit(t reflect.Type) {
	if st.seen[t] || state.IsTime(t) {
		return
	}
	st.seen[t] = true
	if t.Name() != "" && t.Kind() == reflect.Struct {
		st.named[node.TypeName(t)] = t
	}
	switch t.Kind() {
	case reflect.Interface:
		st.open = true
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		st.visit(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).Tag.Get("replay") != "-" {
				st.visit(t.Field(i).Type)
			}
		}
	}
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
	st := &stateTypes{named: map[string]reflect.Type{}, seen: map[reflect.Type]bool{}}
	cfg := systemConfig(tr)
	for _, id := range tr.Nodes {
		if h := sys.New(id, cfg); h != nil {
			st.visit(reflect.TypeOf(h))
		}
	}
	return st, nil
}

// genericBase is a type name without its type arguments: "mydht.LRU" for
// "mydht.LRU[github.com/you/node.ID,...]". A table may name a generic type
// so, for every instantiation.
func genericBase(name string) string {
	if i := strings.IndexByte(name, '['); i >= 0 {
		return name[:i]
	}
	return name
}

// namesType reports whether a table declared as name is of the type
// named typeName (node.TypeName): by that name, the end of an import
// path, or a generic type's name without its arguments.
func namesType(name, typeName string) bool {
	return name == typeName || strings.HasSuffix(name, "/"+typeName) ||
		!strings.Contains(name, "[") && strings.Contains(typeName, "[") && namesType(name, genericBase(typeName))
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
			if !namesType(t.name, name) {
				continue
			}
			found, t.confirmed = true, true
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
			hint := ""
			if n := nearestType(names, t.name); n != "" {
				hint = fmt.Sprintf(": did you mean %q?", n)
			}
			return fmt.Errorf("%s: table(%q): no type of that name is in any node state of %s%s (types there: %s)",
				t.pos, t.name, c.r.System().Name, hint, strings.Join(names, ", "))
		}
		if !found {
			// An interface field may hold it: the run will tell
			// (unmatchedTables).
			c.types = st
			c.unseen++
		}
	}
	return nil
}

// noteHeld records a type the scan met inside an interface, while some
// table's type is still to be confirmed by a row.
func (c *Checker) noteHeld(t reflect.Type) {
	if c.unseen > 0 && !c.types.seen[t] {
		c.types.visit(t)
	}
}

// UnmatchedTable is a table whose type no node state was found to hold:
// the fields could not tell (an interface could hold it), and no row came
// in the steps checked. Its predicates held vacuously, as over a typo.
type UnmatchedTable struct {
	Table string `json:"table"`
	// ForeignPackage: no type of the table's package was reached either
	// (a script for another system, or a package whose types the steps
	// checked did not hold).
	ForeignPackage bool `json:"foreign_package,omitempty"`
	// Reached are the types reached in the table's package (all of them,
	// for a foreign package).
	Reached []string `json:"reached"`
	// DidYouMean is the type reached whose name the table's is most
	// likely a misspelling of ("": none near).
	DidYouMean string `json:"did_you_mean,omitempty"`
}

// String is the table's line in a report.
func (u UnmatchedTable) String() string {
	if u.DidYouMean != "" {
		return fmt.Sprintf("table(%q) matched no object in the steps checked, so its predicates held vacuously: did you mean %q?",
			u.Table, u.DidYouMean)
	}
	if u.ForeignPackage {
		return fmt.Sprintf("table(%q) matched no object: no type of package %s was reached in the node states checked, in fields or through interfaces (types reached: %s), so its predicates held vacuously: is the script for this system?",
			u.Table, tablePackage(u.Table), strings.Join(u.Reached, ", "))
	}
	return fmt.Sprintf("table(%q) matched no object in the steps checked: no value of a type of that name was reached, in fields or through interfaces (types of its package reached: %s), so its predicates held vacuously; a misspelt name checks nothing",
		u.Table, strings.Join(u.Reached, ", "))
}

// tablePackage is the package part of a table's type name.
func tablePackage(name string) string {
	name = genericBase(name)
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// unmatchedTables lists the tables not confirmed at load that had no row,
// given the types reached (named: node.TypeName -> type).
func unmatchedTables(tables []tableSighting, named map[string]reflect.Type) []UnmatchedTable {
	var out []UnmatchedTable
	for _, t := range tables {
		if t.confirmed || t.rows {
			continue
		}
		u := UnmatchedTable{Table: t.name, ForeignPackage: true}
		pkg := tablePackage(t.name)
		var all []string
		for name := range named {
			all = append(all, name)
			if tablePackage(name) == pkg {
				u.ForeignPackage = false
				u.Reached = append(u.Reached, name)
			}
		}
		if u.ForeignPackage {
			u.Reached = all
		}
		slices.Sort(u.Reached)
		slices.Sort(all)
		u.DidYouMean = nearest.Typo(all, t.name)
		out = append(out, u)
	}
	return out
}

// tableSighting is what a check learnt of a table: whether its type was
// found in the state types at load, and whether it had a row.
type tableSighting struct {
	name            string
	confirmed, rows bool
}

// sightings are the checker's tables as tableSightings.
func (c *Checker) sightings() []tableSighting {
	out := make([]tableSighting, len(c.tables))
	for i, t := range c.tables {
		out[i] = tableSighting{t.name, t.confirmed, t.hadRows}
	}
	return out
}

// reached are the state types the checker knows of: from the handlers'
// types, and those met inside interfaces.
func (c *Checker) reached() map[string]reflect.Type {
	if c.types == nil {
		return nil
	}
	return c.types.named
}

// UnmatchedAcross gathers the tables that matched no object in any of
// several checks, such as the runs of a seed hunt or an exploration: a
// table with a row in one run names a type that exists, and one with a
// row in none is what a misspelt name looks like.
type UnmatchedAcross struct {
	checks int
	tables []UnmatchedTable
}

// Add counts one check's report (nil: nothing was checked).
func (u *UnmatchedAcross) Add(r *Report) {
	if r != nil {
		u.Merge(r.Unmatched, 1)
	}
}

// Merge counts checks (a shard's runs) whose tables that matched nothing
// were tables; 0 checks count nothing.
func (u *UnmatchedAcross) Merge(tables []UnmatchedTable, checks int) {
	if checks <= 0 {
		return
	}
	if u.checks == 0 {
		u.tables = slices.Clone(tables)
	} else {
		// By a set: a nested search was quadratic, and a merge of three
		// forged result files of 100,000 tables each took minutes.
		in := make(map[string]bool, len(tables))
		for _, o := range tables {
			in[o.Table] = true
		}
		u.tables = slices.DeleteFunc(u.tables, func(t UnmatchedTable) bool { return !in[t.Table] })
	}
	u.checks += checks
}

// Tables are the tables that matched no object in every check added.
func (u *UnmatchedAcross) Tables() []UnmatchedTable { return u.tables }

// In says in how many checks the tables matched nothing, what naming one
// check: "in the one run", "in all 6 runs".
func (u *UnmatchedAcross) In(what string) string {
	if u.checks != 1 {
		return fmt.Sprintf("in all %d %ss", u.checks, what)
	}
	return "in the one " + what
}

// WriteText writes a warning line per table to w, saying in how many
// checks it matched nothing; what names one check ("run").
func (u *UnmatchedAcross) WriteText(w io.Writer, what string) {
	in := u.In(what)
	for _, t := range u.tables {
		fmt.Fprintf(w, "warning: %s: %s\n", in, t)
	}
}

// nearestType is the type name in names a table's misspelt name most
// likely meant, or "": a name without its package ("Node") is matched
// against the names' last parts, so that it finds "kv.Node" rather than
// a short name a few letters away ("node.Mutex").
func nearestType(names []string, want string) string {
	if strings.Contains(want, ".") {
		return nearest.Typo(names, want)
	}
	byLast := map[string][]string{}
	var lasts []string
	for _, n := range names {
		last := n[strings.LastIndexByte(n, '.')+1:]
		if len(byLast[last]) == 0 {
			lasts = append(lasts, last)
		}
		byLast[last] = append(byLast[last], n)
	}
	if got := byLast[nearest.Typo(lasts, want)]; len(got) == 1 {
		return got[0]
	}
	return ""
}
