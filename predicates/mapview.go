package predicates

import (
	"fmt"
	"reflect"

	"go.starlark.net/starlark"
)

// mapView is a map column declared in table(..., views=[...]): a
// read-only window on the Go map. len(), v[k], v.get(k) and `k in v`
// cost the same at any size and convert only the value read; iteration,
// keys(), values() and items() convert the whole map, in the order its
// dict has (sorted keys). Like a list view it is valid during the step
// that read it, and kept in a derived value or an aux it is copied into
// a dict. Its reads depend on the whole column, as a dict's would.
type mapView struct{ view }

var (
	_ starlark.Mapping   = (*mapView)(nil)
	_ starlark.Sequence  = (*mapView)(nil)
	_ starlark.Container = (*mapView)(nil)
	_ starlark.HasAttrs  = (*mapView)(nil)
	// dict(view) copies it
	_ starlark.IterableMapping = (*mapView)(nil)
)

// viewableMap reports whether a map type can be read as a view: its keys
// are scalars a Starlark value converts to.
func viewableMap(t reflect.Type) bool {
	if t.Kind() != reflect.Map {
		return false
	}
	switch t.Key().Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func (m *mapView) String() string {
	m.live()
	return fmt.Sprintf("view(%s, len=%d)", m.column(), m.v.Len())
}
func (m *mapView) Type() string          { return "view" }
func (m *mapView) Freeze()               {}
func (m *mapView) Truth() starlark.Bool  { m.live(); return m.v.Len() > 0 }
func (m *mapView) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: view") }

// live fails once the state the view looks at may have moved on.
func (m *mapView) live() { m.stale("dict(view)") }

func (m *mapView) Len() int {
	m.live()
	return m.v.Len()
}

// key converts a Starlark key to the map's key type; false when no key
// of that type equals it (a string looked up in a map keyed by ints).
func (m *mapView) key(k starlark.Value) (reflect.Value, bool) {
	kt := m.v.Type().Key()
	out := reflect.New(kt).Elem()
	switch kt.Kind() {
	case reflect.String:
		s, ok := k.(starlark.String)
		if !ok {
			return out, false
		}
		out.SetString(string(s))
	case reflect.Bool:
		b, ok := k.(starlark.Bool)
		if !ok {
			return out, false
		}
		out.SetBool(bool(b))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, ok := k.(starlark.Int)
		if !ok {
			return out, false
		}
		x, exact := i.Int64()
		if !exact || out.OverflowInt(x) {
			return out, false
		}
		out.SetInt(x)
	default: // unsigned
		i, ok := k.(starlark.Int)
		if !ok {
			return out, false
		}
		x, exact := i.Uint64()
		if !exact || out.OverflowUint(x) {
			return out, false
		}
		out.SetUint(x)
	}
	return out, true
}

// Get implements v[k] (a missing key is Starlark's KeyError).
func (m *mapView) Get(k starlark.Value) (starlark.Value, bool, error) {
	m.live()
	key, ok := m.key(k)
	if !ok {
		return nil, false, nil
	}
	e := m.v.MapIndex(key)
	if !e.IsValid() {
		return nil, false, nil
	}
	return toStarlark(e, m.c.start), true, nil
}

// Has implements `k in v`.
func (m *mapView) Has(k starlark.Value) (bool, error) {
	m.live()
	key, ok := m.key(k)
	return ok && m.v.MapIndex(key).IsValid(), nil
}

// dict copies the whole view.
func (m *mapView) dict() *starlark.Dict {
	m.live()
	return toStarlark(m.v, m.c.start).(*starlark.Dict)
}

func (m *mapView) Iterate() starlark.Iterator { return m.dict().Iterate() }

// Items is every entry, as dict(view) reads them.
func (m *mapView) Items() []starlark.Tuple { return m.dict().Items() }

func (m *mapView) AttrNames() []string { return []string{"get", "items", "keys", "values"} }

func (m *mapView) Attr(name string) (starlark.Value, error) {
	switch name {
	case "get":
		return starlark.NewBuiltin("get", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var k starlark.Value
			var def starlark.Value = starlark.None
			if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &k, &def); err != nil {
				return nil, err
			}
			v, found, err := m.Get(k)
			if err != nil || !found {
				return def, err
			}
			return v, nil
		}), nil
	case "keys", "values", "items":
		return starlark.NewBuiltin(name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 0); err != nil {
				return nil, err
			}
			d := m.dict()
			var out starlark.Value
			switch name {
			case "keys":
				out = starlark.NewList(d.Keys())
			case "values":
				vs := make([]starlark.Value, 0, d.Len())
				for _, kv := range d.Items() {
					vs = append(vs, kv[1])
				}
				out = starlark.NewList(vs)
			default:
				items := make([]starlark.Value, 0, d.Len())
				for _, kv := range d.Items() {
					items = append(items, kv)
				}
				out = starlark.NewList(items)
			}
			out.Freeze()
			return out, nil
		}), nil
	}
	return nil, nil
}
