package predicates

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"unsafe"

	"github.com/replaycheck/replaycheck/state"
)

// A node's map of rows (a coordinator's transactions by number, a
// member list by name) is walked after every event of the node, entry by
// entry in key order, though most events change one entry or none.
// Sorting the entries, building each one's path and finding its row by
// that path cost about 1.5 us per entry and event: 7.5 ms an event for a
// node keeping 5,000 transactions. For a map of pointers to rows that
// hold no rows of their own, keyed by strings, integers or booleans, the
// scan remembers the rows each key's entry gave: an entry that points
// where it did, to the object its rows were last read from, whose
// columns hash as the rows' last versions do, is passed over; the others
// are walked, in key order, as the whole map was, so rows change in the
// order they did. A map of values is walked whole: a row read from a
// copy must be read from a fresh copy at every scan (a pointer column
// swapped for an equal one, then the old one changed, read the old one).
type mapMemo struct {
	typ reflect.Type
	// The entries by key: strings in byName, integers and booleans as
	// 64 bits (signed ones sign-extended) in byNumber.
	byName   map[string]*mapEntry
	byNumber map[uint64]*mapEntry
	// cols are the columns each table of the rows' type hashes.
	cols [][]state.Field
	// dropped is the checker's count of rows taken out of tables when
	// the memo was last brought up to date: while it is the same, none
	// of its rows was.
	dropped int
}

// memoKey is a map key as the memo holds it.
type memoKey struct {
	s string
	n uint64
}

func (m *mapMemo) entry(k memoKey, byName bool) *mapEntry {
	var e *mapEntry
	if byName {
		e = m.byName[k.s]
	} else {
		e = m.byNumber[k.n]
	}
	if e == nil {
		e = &mapEntry{}
		e.rows = e.row[:0]
		if byName {
			m.byName[k.s] = e
		} else {
			m.byNumber[k.n] = e
		}
	}
	return e
}

// sweep forgets the keys the scan gen did not meet.
func (m *mapMemo) sweep(gen int) {
	for k, e := range m.byName {
		if e.gen != gen {
			delete(m.byName, k)
		}
	}
	for k, e := range m.byNumber {
		if e.gen != gen {
			delete(m.byNumber, k)
		}
	}
}

type mapEntry struct {
	ptr  unsafe.Pointer // the pointer the entry held
	rows []*rowState    // the rows found in it: one per table of its type
	gen  int            // the last scan that met the key
	// The room of rows for one table, the usual case: the pass reads
	// them with the entry, not from memory of their own.
	row [1]*rowState
}

// pendingEntry is an entry to walk.
type pendingEntry struct {
	key memoKey
	e   *mapEntry
}

// memoKeyKind tells whether keys of kind k are remembered: kinds whose
// values are told apart by value and print apart (state.AppendMapKey).
func memoKeyKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

func memoKeyOf(v reflect.Value) memoKey {
	switch v.Kind() {
	case reflect.String:
		return memoKey{s: v.String()}
	case reflect.Bool:
		if v.Bool() {
			return memoKey{n: 1}
		}
		return memoKey{}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return memoKey{n: uint64(v.Int())}
	}
	return memoKey{n: v.Uint()}
}

// setMemoKey sets v, of a remembered key kind, to k.
func setMemoKey(v reflect.Value, k memoKey) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(k.s)
	case reflect.Bool:
		v.SetBool(k.n != 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(k.n))
	default:
		v.SetUint(k.n)
	}
}

// memoKeyOrder is the keys' natural order, which state.SortedEntries
// walks a map in.
func memoKeyOrder(k reflect.Kind) func(a, b pendingEntry) int {
	switch k {
	case reflect.String:
		return func(a, b pendingEntry) int { return strings.Compare(a.key.s, b.key.s) }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(a, b pendingEntry) int { return cmp.Compare(int64(a.key.n), int64(b.key.n)) }
	}
	return func(a, b pendingEntry) int { return cmp.Compare(a.key.n, b.key.n) }
}

// rowLeaf returns the tables that take struct type t when its values
// hold no rows of their own (the walk stops at them), or nil.
func (s *scanner) rowLeaf(t reflect.Type) []*Table {
	if t.Kind() != reflect.Struct || state.IsList(t) || state.IsListElement(t) {
		return nil
	}
	tables := s.matching(t)
	if len(tables) == 0 || len(s.fieldsOf(t)) > 0 {
		return nil
	}
	return tables
}

// mapToWalk walks map v at path (its pointer already marked seen) through
// its memo when it has one kind (see mapMemo), and says whether it did;
// otherwise the caller walks every entry.
func (s *scanner) mapToWalk(v reflect.Value, path string, depth int) bool {
	t := v.Type()
	kind := t.Key().Kind()
	key := listKey{s.id, path}
	var tables []*Table
	if !s.wholeMaps && v.Len() >= memoLen && memoKeyKind(kind) && depth+3 <= maxScanDepth && t.Elem().Kind() == reflect.Pointer {
		tables = s.rowLeaf(t.Elem().Elem())
	}
	if tables == nil {
		// Walked whole: what a memo of it held may be out of date by
		// the time it is used again (a map that shrank below memoLen
		// and grew back kept the rows of its last pass).
		if len(s.maps) > 0 {
			delete(s.maps, key)
		}
		return false
	}
	row := t.Elem().Elem()
	m := s.maps[key]
	if m == nil || m.typ != t {
		m = &mapMemo{typ: t, byName: map[string]*mapEntry{}, byNumber: map[uint64]*mapEntry{}, dropped: s.c.dropped}
		for _, tb := range tables {
			m.cols = append(m.cols, tb.columnsOf(row))
		}
		s.maps[key] = m
	}
	s.marks++
	mark := s.marks
	byName := kind == reflect.String
	// A row can have been taken out of its table only if some was.
	check := m.dropped != s.c.dropped
	seen := s.seen.of(t.Elem())
	todo := s.pending[:0]
	visit := func(k memoKey, ev reflect.Value) {
		e := m.entry(k, byName)
		e.gen = s.gen
		if !s.passOver(m, e, ev, seen, tables, mark, check) {
			todo = append(todo, pendingEntry{k, e})
		}
	}
	p := v.UnsafePointer()
	switch ptrType := t.Elem(); {
	case kind == reflect.String || t.Key().Size() == 8:
		// A map of pointers by string or 64-bit integer is read as the
		// plain map of the same memory (iteration hashes no key), as the
		// state hasher reads maps of scalars, and each pointer is set in
		// one variable of the map's value type: without reflection,
		// which was a third of the pass.
		holder := reflect.New(ptrType)
		slot, ev := (*unsafe.Pointer)(holder.UnsafePointer()), holder.Elem()
		if kind == reflect.String {
			for k, e := range *(*map[string]unsafe.Pointer)(unsafe.Pointer(&p)) {
				*slot = e
				visit(memoKey{s: k}, ev)
			}
		} else {
			for k, e := range *(*map[uint64]unsafe.Pointer)(unsafe.Pointer(&p)) {
				*slot = e
				visit(memoKey{n: k}, ev)
			}
		}
		*slot = nil
	default:
		// Iterated through a copy of the map's reference without the
		// mark of an unexported field, which MapIter's Set methods
		// refuse; the entries walked are read from v itself, as the
		// whole walk reads them.
		rv := reflect.NewAt(t, unsafe.Pointer(&p)).Elem()
		kv, ev := reflect.New(t.Key()).Elem(), reflect.New(ptrType).Elem()
		var it reflect.MapIter
		it.Reset(rv)
		for it.Next() {
			kv.SetIterKey(&it)
			ev.SetIterValue(&it)
			visit(memoKeyOf(kv), ev)
		}
		it.Reset(reflect.Value{}) // hold nothing of the map between scans
		ev.SetZero()
	}
	if len(m.byName)+len(m.byNumber) > v.Len() {
		m.sweep(s.gen)
	}
	m.dropped = s.c.dropped
	defer func() {
		clear(todo)
		s.pending = todo[:0]
	}()
	if len(todo) == 0 {
		return true
	}
	slices.SortFunc(todo, memoKeyOrder(kind))
	keyVals, vals := make([]reflect.Value, len(todo)), make([]reflect.Value, len(todo))
	for i, pe := range todo {
		keyVals[i] = reflect.New(t.Key()).Elem()
		setMemoKey(keyVals[i], pe.key)
		vals[i] = v.MapIndex(keyVals[i])
		// An entry passed over claimed its pointer; one to walk that
		// holds the same pointer may come before it in key order, where
		// the whole walk would have given it the row: walk the whole
		// map instead, and build its memo again next time.
		if !vals[i].IsNil() && seen[vals[i].Pointer()] == mark {
			m.unmark(seen, mark, s.gen)
			delete(s.maps, key)
			return false
		}
	}
	outer := s.collect
	var keys state.MapKeys
	for i, pe := range todo {
		pe.e.rows = pe.e.rows[:0]
		s.collect = &pe.e.rows
		s.walk(vals[i], path+string(state.AppendMapKey(nil, keyVals[i], &keys)), depth+1)
		pe.e.ptr = nil
		if !vals[i].IsNil() {
			pe.e.ptr = vals[i].UnsafePointer()
		}
	}
	s.collect = outer
	return true
}

// passOver tells whether entry e, holding pointer ev, still has the
// rows it had, and if so marks them found and its address walked (with
// mark, in seen); check: rows may have been taken out of tables. A row
// counts as it was when it is still the row of that very object (the
// walk's last upsert of it read this pointer) and its columns hash as
// its last version does: what upsert decides of a row it has.
func (s *scanner) passOver(m *mapMemo, e *mapEntry, ev reflect.Value, seen map[uintptr]int32, tables []*Table, mark int32, check bool) bool {
	if len(e.rows) != len(tables) || ev.IsNil() || ev.UnsafePointer() != e.ptr {
		return false
	}
	if seen[uintptr(e.ptr)] != 0 {
		return false // met first elsewhere: the walk gives it no row here
	}
	rv := ev.Elem()
	for i, tb := range tables {
		rs := e.rows[i]
		if check && rs.removed || !rs.v.CanAddr() || rs.v.UnsafeAddr() != uintptr(e.ptr) {
			return false
		}
		fields, h := tb.hashColumns(rv, m.cols[i], tb.hashes)
		tb.hashes = fields
		if h != rs.hash {
			return false
		}
	}
	seen[uintptr(e.ptr)] = mark
	for _, rs := range e.rows {
		rs.seen = s.gen
	}
	return true
}

// unmark takes back what the memo's pass did (marked with mark, in scan
// gen): the addresses it claimed and the rows it found.
func (m *mapMemo) unmark(seen map[uintptr]int32, mark int32, gen int) {
	for p, got := range seen {
		if got == mark {
			delete(seen, p)
		}
	}
	for _, e := range m.byName {
		e.unsee(gen)
	}
	for _, e := range m.byNumber {
		e.unsee(gen)
	}
}

// unsee marks the entry's rows not found in scan gen.
func (e *mapEntry) unsee(gen int) {
	for _, rs := range e.rows {
		if rs.seen == gen {
			rs.seen = 0
		}
	}
}
