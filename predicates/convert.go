package predicates

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"sort"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"

	"github.com/replaycheck/replaycheck/state"
)

// toStarlark converts a Go value read from node state. Scalars become
// Starlark scalars; slices and maps become frozen lists and dicts; structs
// become lazy values whose fields convert on access. A time.Time becomes
// nanoseconds since origin (the start of the run), the scale of now() and
// event.time, so `now() - row.SentAt` is an age; the zero time is None.
// Nil pointers, funcs and channels become None, and so does a slice or
// map met again inside itself (through interfaces: a document map whose
// "parent" entry holds its parent), which a frozen value cannot hold:
// converted, it recursed until the stack overflowed, and the process
// died.
func toStarlark(v reflect.Value, origin int64) starlark.Value { return convert(v, origin, nil) }

// container is a slice or map being converted: its address, length (for
// a slice) and type.
type container struct {
	p uintptr
	n int
	t reflect.Type
}

// convert is toStarlark within the slices and maps being converted around
// v, outermost first.
func convert(v reflect.Value, origin int64, within []container) starlark.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return starlark.None
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return starlark.None
	}
	switch v.Kind() {
	case reflect.Bool:
		return starlark.Bool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return starlark.MakeInt64(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return starlark.MakeUint64(v.Uint())
	case reflect.Float32, reflect.Float64:
		return starlark.Float(v.Float())
	case reflect.String:
		return starlark.String(v.String())
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, v.Len())
			for i := range b {
				b[i] = byte(v.Index(i).Uint())
			}
			return starlark.Bytes(b)
		}
		if v.Kind() == reflect.Slice && v.IsNil() {
			l := starlark.NewList(nil)
			l.Freeze()
			return l
		}
		if v.Kind() == reflect.Slice {
			c := container{v.Pointer(), v.Len(), v.Type()}
			if slices.Contains(within, c) {
				return starlark.None
			}
			within = append(within, c)
		}
		elems := make([]starlark.Value, v.Len())
		for i := range elems {
			elems[i] = convert(v.Index(i), origin, within)
		}
		l := starlark.NewList(elems)
		l.Freeze()
		return l
	case reflect.Map:
		c := container{v.Pointer(), 0, v.Type()}
		if slices.Contains(within, c) {
			return starlark.None
		}
		within = append(within, c)
		d := starlark.NewDict(v.Len())
		for _, e := range state.SortedEntries(v) {
			d.SetKey(keyToStarlark(e.Key, origin), convert(e.Value, origin, within))
		}
		d.Freeze()
		return d
	case reflect.Struct:
		switch {
		case state.IsList(v.Type()): // a list of the values it holds
			if v.CanAddr() { // a value may hold the list itself
				c := container{v.UnsafeAddr(), -1, v.Type()}
				if slices.Contains(within, c) {
					return starlark.None
				}
				within = append(within, c)
			}
			var elems []starlark.Value
			state.ListElements(v, func(_ int, e reflect.Value) {
				elems = append(elems, convert(state.ElementValue(e.Elem()), origin, within))
			})
			l := starlark.NewList(elems)
			l.Freeze()
			return l
		case state.IsListElement(v.Type()): // the value it holds
			return convert(state.ElementValue(v), origin, within)
		}
		if state.IsTime(v.Type()) {
			if v.IsZero() {
				return starlark.None // Go's "not set"
			}
			if ns, ok := state.TimeNanos(v); ok && (origin >= 0 || ns < math.MaxInt64+origin) && (origin <= 0 || ns > math.MinInt64+origin) {
				return starlark.MakeInt64(ns - origin)
			}
			// Far from the run (a "never" in the year 9999): the exact
			// value, which an int64 would wrap into the past.
			sec, nsec := state.TimeInstant(v)
			n := new(big.Int).Mul(big.NewInt(sec), big.NewInt(1e9))
			n.Add(n, big.NewInt(nsec-origin))
			return starlark.MakeBigInt(n)
		}
		return &goStruct{v: v, origin: origin}
	}
	return starlark.None
}

// keyToStarlark converts a map key as toStarlark does, but for a Go array
// (of other than bytes), which becomes a tuple: a list cannot key a dict,
// and SetKey's error dropped every entry of a map keyed by pairs.
func keyToStarlark(v reflect.Value, origin int64) starlark.Value {
	k := v
	for k.IsValid() && (k.Kind() == reflect.Pointer || k.Kind() == reflect.Interface) && !k.IsNil() {
		k = k.Elem()
	}
	if !k.IsValid() || k.Kind() != reflect.Array || k.Type().Elem().Kind() == reflect.Uint8 {
		return toStarlark(v, origin)
	}
	t := make(starlark.Tuple, k.Len())
	for i := range t {
		t[i] = keyToStarlark(k.Index(i), origin)
	}
	return t
}

// goStruct is a Go struct seen from Starlark: fields convert when read.
type goStruct struct {
	v      reflect.Value
	origin int64
}

var (
	_ starlark.HasAttrs   = (*goStruct)(nil)
	_ starlark.Comparable = (*goStruct)(nil)
)

func (s *goStruct) String() string        { return fmt.Sprintf("%s%s", s.v.Type().Name(), fieldsString(s)) }
func (s *goStruct) Type() string          { return s.v.Type().String() }
func (s *goStruct) Freeze()               {}
func (s *goStruct) Truth() starlark.Bool  { return true }
func (s *goStruct) Hash() (uint32, error) { return uint32(state.HashValue(s.v)), nil }
func (s *goStruct) Attr(name string) (starlark.Value, error) {
	return fieldValue(s.v, name, s.origin), nil
}
func (s *goStruct) AttrNames() []string { return fieldNames(state.Fields(s.v.Type())) }
func (s *goStruct) CompareSameType(op syntax.Token, y starlark.Value, depth int) (bool, error) {
	return compareStructs(s, state.HashValue(s.v), op, y)
}

// compareStructs compares a Go struct value (live, or frozen) whose state
// hash is hash with y, which Starlark found of the same type (its Type()
// names the same Go type): equal when their observed fields are.
func compareStructs(x starlark.Value, hash uint64, op syntax.Token, y starlark.Value) (bool, error) {
	var eq bool
	switch y := y.(type) {
	case *goStruct:
		eq = hash == state.HashValue(y.v)
	case *frozenStruct:
		eq = hash == y.hash
	}
	switch op {
	case syntax.EQL:
		return eq, nil
	case syntax.NEQ:
		return !eq, nil
	}
	return false, fmt.Errorf("%s %s %s is not supported", x.Type(), op, y.Type())
}

// frozenStruct is a Go struct value kept past its step (in a derived
// value, a history, an aux value): its observed fields as they were and
// its state hash then. It keeps the Go type's name, so that it equals the
// same value read live later, and copies of it, as two live values of the
// type equal each other (a plain struct() snapshot equalled nothing live:
// a new user's derived log entry never matched the replica's).
type frozenStruct struct {
	typ, name string
	hash      uint64
	names     []string // in declaration order, as the live value lists them
	fields    starlark.StringDict
}

var (
	_ starlark.HasAttrs   = (*frozenStruct)(nil)
	_ starlark.Comparable = (*frozenStruct)(nil)
)

// maxFrozenDepth bounds how many structs deep a kept value is frozen, as
// the state hash bounds its walk.
const maxFrozenDepth = 4096

// freezeStruct freezes s within the structs being frozen around it
// (those reached through pointers, which have addresses): a struct met
// again inside itself is None, as a slice or map is when converted, where
// it was frozen without end and the stack overflow killed the process.
func freezeStruct(s *goStruct, within []container) starlark.Value {
	if len(within) >= maxFrozenDepth {
		return starlark.None // a list of structs linked by pointers, thousands long
	}
	if s.v.CanAddr() {
		c := container{s.v.UnsafeAddr(), -2, s.v.Type()}
		if slices.Contains(within, c) {
			return starlark.None
		}
		within = append(within, c)
	}
	f := &frozenStruct{typ: s.Type(), name: s.v.Type().Name(), hash: state.HashValue(s.v), fields: starlark.StringDict{}}
	for _, n := range s.AttrNames() {
		if x, err := s.Attr(n); err == nil && x != nil {
			f.names = append(f.names, n)
			f.fields[n] = freezeWithin(x, within)
		}
	}
	return f
}

func (f *frozenStruct) String() string        { return f.name + fieldsString(f) }
func (f *frozenStruct) Type() string          { return f.typ }
func (f *frozenStruct) Freeze()               {}
func (f *frozenStruct) Truth() starlark.Bool  { return true }
func (f *frozenStruct) Hash() (uint32, error) { return uint32(f.hash), nil }
func (f *frozenStruct) Attr(name string) (starlark.Value, error) {
	return f.fields[name], nil // nil: Starlark reports the missing attribute
}
func (f *frozenStruct) AttrNames() []string { return f.names }
func (f *frozenStruct) CompareSameType(op syntax.Token, y starlark.Value, depth int) (bool, error) {
	return compareStructs(f, f.hash, op, y)
}

// fieldValue reads the observed field name of struct value v, converted;
// nil when v's type has no such observed field (Starlark then reports a
// missing attribute).
func fieldValue(v reflect.Value, name string, origin int64) starlark.Value {
	f, ok := state.FieldByName(v.Type(), name)
	if !ok {
		return nil
	}
	return toStarlark(v.Field(f.Index), origin)
}

func fieldNames(fs []state.Field) []string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return names
}

func fieldsString(v starlark.HasAttrs) string {
	var b strings.Builder
	b.WriteString("(")
	for i, n := range v.AttrNames() {
		if i > 0 {
			b.WriteString(", ")
		}
		x, _ := v.Attr(n)
		fmt.Fprintf(&b, "%s=%s", n, x)
	}
	b.WriteString(")")
	return b.String()
}

// freeze turns a value that may refer to live node state (rows, lazy
// structs) into plain frozen data, so it can be kept in a history.
func freeze(v starlark.Value) starlark.Value { return freezeWithin(v, nil) }

// freezeWithin is freeze inside the Go structs being frozen (within).
func freezeWithin(v starlark.Value, within []container) starlark.Value {
	switch x := v.(type) {
	case *listView:
		return freezeWithin(x.list(), within)
	case *mapView:
		return freezeWithin(x.dict(), within)
	case *Row:
		return x.snapshot()
	case *goStruct:
		return freezeStruct(x, within)
	case *starlark.List:
		elems := make([]starlark.Value, x.Len())
		for i := range elems {
			elems[i] = freezeWithin(x.Index(i), within)
		}
		l := starlark.NewList(elems)
		l.Freeze()
		return l
	case starlark.Tuple:
		t := make(starlark.Tuple, len(x))
		for i := range t {
			t[i] = freezeWithin(x[i], within)
		}
		return t
	case *starlark.Dict:
		d := starlark.NewDict(x.Len())
		for _, it := range x.Items() {
			d.SetKey(freezeWithin(it[0], within), freezeWithin(it[1], within))
		}
		d.Freeze()
		return d
	}
	v.Freeze()
	return v
}

func structSnapshot(s starlark.HasAttrs, extra starlark.StringDict) *starlarkstruct.Struct {
	fields := starlark.StringDict{}
	for k, v := range extra {
		fields[k] = v
	}
	names := s.AttrNames()
	sort.Strings(names)
	for _, n := range names {
		if _, set := fields[n]; set {
			continue
		}
		if x, err := s.Attr(n); err == nil && x != nil {
			if _, isMethod := x.(*starlark.Builtin); isMethod {
				continue
			}
			fields[n] = freeze(x)
		}
	}
	st := starlarkstruct.FromStringDict(starlarkstruct.Default, fields)
	st.Freeze()
	return st
}
