package predicates

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"go.starlark.net/starlark"

	"github.com/replaycheck/replaycheck/state"
)

// Change detection and reading of columns that hold long lists.
//
// Knowing whether a column changed means reading all of it after every
// event of its node: a raft log is thousands of entries. When the list's
// elements are plain memory (integers and booleans, in structs whose every
// field is observed, without padding), the column is hashed as raw bytes,
// two orders of magnitude faster than walking it value by value; equal
// bytes are equal values, so no change is missed.

// plainTypes caches plain() per type.
type plainTypes map[reflect.Type]bool

// plain reports whether equal bytes of type t always mean equal observed
// values and unequal bytes unequal ones: no pointers, strings, floats
// (-0 and NaN), padding or unobserved fields.
func (p plainTypes) plain(t reflect.Type) bool {
	if r, ok := p[t]; ok {
		return r
	}
	r := false
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		r = true
	case reflect.Array:
		r = p.plain(t.Elem())
	case reflect.Struct:
		if state.IsTime(t) || len(state.Fields(t)) != t.NumField() {
			break
		}
		var size uintptr
		r = true
		for i := range t.NumField() {
			f := t.Field(i)
			size += f.Type.Size()
			if !p.plain(f.Type) {
				r = false
			}
		}
		r = r && size == t.Size() // no padding
	}
	p[t] = r
	return r
}

// columnHash hashes one column's value: raw bytes for a slice of plain
// elements, the state hash otherwise.
func (c *Checker) columnHash(v reflect.Value) uint64 {
	// Scalars, the most common columns, without the state hasher. A
	// column's Go type is fixed, so its hashes only meet each other.
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			return 1
		}
		return 2
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return mix64(uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return mix64(v.Uint())
	case reflect.String:
		// xxhash, not maphash with a per-checker seed: the parallel
		// check compares row hashes of two checkers at a seam.
		return xxhash.Sum64String(v.String())
	}
	t := v.Type()
	if t.Kind() == reflect.Slice && c.plain.plain(t.Elem()) {
		if v.IsNil() {
			return 0
		}
		n := v.Len() * int(t.Elem().Size())
		b := unsafe.Slice((*byte)(v.UnsafePointer()), n)
		h := xxhash.New()
		var l [8]byte
		for i := range l {
			l[i] = byte(v.Len() >> (8 * i))
		}
		h.Write(l[:])
		h.Write(b)
		return h.Sum64() | 1 // never 0, the nil slice's
	}
	return state.HashValue(v)
}

// mix64 spreads an integer's bits (a 64-bit finalizer, a bijection:
// different integers, different hashes).
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// chainHash hashes a list declared chained=: its length and last
// element, which by the declaration digests every element before it.
func chainHash(v reflect.Value) uint64 { return chainHashAt(v, v.Len()) }

// chainHashAt is chainHash of the list's first n elements.
func chainHashAt(v reflect.Value, n int) uint64 {
	if n == 0 {
		return 0
	}
	return (state.HashValue(v.Index(n-1))^uint64(n))*1099511628211 | 1
}

// listView is a column declared in table(..., views=[...]): a read-only
// window on the Go slice. len() and v[i] cost the same whatever the
// slice's length; only the elements read are converted. It is valid
// during the step that read it; keeping it (in a derived value, an aux)
// copies it into a list.
//
// A view of a column that is also chained= records what is read as it is
// used (rs set): v[i] with i >= 0 depends only on the element, which a
// change that only appends leaves as it was (elemsDep), anything else
// (len, iteration, a negative index, `in`) on the whole column (colDep).
// It is a Mapping so that indexing reaches Get with the index as written
// (Starlark would otherwise turn v[-1] into v[len-1] first).
type listView struct {
	view
	rs  *rowState // set: reads are recorded on use
	num int       // the column's number, with rs
}

var (
	_ starlark.Indexable = (*listView)(nil)
	_ starlark.Sequence  = (*listView)(nil)
	_ starlark.Sliceable = (*listView)(nil)
	_ starlark.Mapping   = (*listView)(nil)
	_ starlark.Container = (*listView)(nil)
)

// view is what a list or map view holds: a column's Go value, read at
// step.
type view struct {
	c     *Checker
	v     reflect.Value
	table *Table
	name  string
	step  int
}

func (w *view) column() string { return w.table.name + "." + w.name }

// stale fails once the state the view looks at may have moved on; keep
// says how to keep a copy instead.
func (w *view) stale(keep string) {
	if w.c.step != w.step {
		w.c.budget.fail(fmt.Errorf("the view of %s read at step #%d is used at step #%d: views are valid only in the step that read them (%s copies one)", w.column(), w.step, w.c.step, keep))
	}
}

func (l *listView) String() string {
	l.record()
	return fmt.Sprintf("view(%s, len=%d)", l.column(), l.v.Len())
}
func (l *listView) Type() string { return "view" }
func (l *listView) Freeze()      {}
func (l *listView) Truth() starlark.Bool {
	l.record()
	return l.v.Len() > 0
}
func (l *listView) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: view") }

// live fails once the state the view looks at may have moved on.
func (l *listView) live() { l.stale("list(view)") }

// use is a read of the whole column.
func (l *listView) use() {
	l.live()
	l.record()
}

func (l *listView) record() {
	if l.rs != nil {
		l.c.read(dep{depCol, l.rs.id, l.num})
	}
}

func (l *listView) Len() int {
	l.use()
	return l.v.Len()
}

func (l *listView) Index(i int) starlark.Value {
	l.use()
	return toStarlark(l.v.Index(i), l.c.start)
}

// Get implements v[i] (starlark.Mapping).
func (l *listView) Get(k starlark.Value) (starlark.Value, bool, error) {
	l.live()
	i, err := starlark.AsInt32(k)
	if err != nil {
		return nil, false, fmt.Errorf("view index: %s", err)
	}
	n, orig := l.v.Len(), i
	if i < 0 {
		i += n
		if l.rs != nil {
			l.c.read(dep{depCol, l.rs.id, l.num}) // which element depends on the length
		}
	} else if l.rs != nil {
		l.c.read(dep{depElems, l.rs.id, l.num})
	}
	if i < 0 || i >= n {
		if l.rs != nil {
			l.c.read(dep{depCol, l.rs.id, l.num}) // out of range: the length decided
		}
		if n == 0 {
			return nil, false, fmt.Errorf("index %d out of range: empty view", orig)
		}
		return nil, false, fmt.Errorf("view index %d out of range [%d:%d]", orig, -n, n-1)
	}
	return toStarlark(l.v.Index(i), l.c.start), true, nil
}

// Has implements `x in v` (starlark.Container).
func (l *listView) Has(x starlark.Value) (bool, error) {
	l.use()
	for i := range l.v.Len() {
		if eq, err := starlark.Equal(toStarlark(l.v.Index(i), l.c.start), x); err != nil || eq {
			return eq, err
		}
	}
	return false, nil
}

func (l *listView) Iterate() starlark.Iterator {
	l.use()
	return &viewIter{l: l}
}

func (l *listView) Slice(start, end, step int) starlark.Value {
	l.use()
	var elems []starlark.Value
	if step > 0 {
		for i := start; i < end; i += step {
			elems = append(elems, toStarlark(l.v.Index(i), l.c.start))
		}
	} else {
		for i := start; i > end; i += step {
			elems = append(elems, toStarlark(l.v.Index(i), l.c.start))
		}
	}
	list := starlark.NewList(elems)
	list.Freeze()
	return list
}

// list copies the whole view.
func (l *listView) list() *starlark.List {
	return l.Slice(0, l.v.Len(), 1).(*starlark.List)
}

type viewIter struct {
	l *listView
	i int
}

func (it *viewIter) Next(p *starlark.Value) bool {
	if it.i >= it.l.v.Len() {
		return false
	}
	*p = toStarlark(it.l.v.Index(it.i), it.l.c.start)
	it.i++
	return true
}
func (it *viewIter) Done() {}
