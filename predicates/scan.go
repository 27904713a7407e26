package predicates

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unsafe"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
)

// scanner finds the rows of every table in one node's state. It descends
// only into types that can contain a table's type, so a node's event costs
// time in proportion to the parts of its state predicates look at.
type scanner struct {
	c     *Checker
	reach map[reflect.Type]bool
	match map[reflect.Type][]*Table // the tables whose type a Go type is
	plans map[reflect.Type][]walkField
	seen  walked // pointers and maps walked
	marks int32  // the last map memo mark given (mapmemo.go)
	gen   int
	step  int
	now   int64
	id    node.ID
	dirty []*rowState
	// flat caches whether a type's observed content is all in its own
	// memory (flatType); lists remembers the long lists of such elements
	// that rows were found in, to pass over them while unchanged.
	flat    map[reflect.Type]bool
	strs    map[reflect.Type][]uintptr // where a flat type's observed strings lie
	lists   map[listKey]*listMemo
	maps    map[listKey]*mapMemo
	pending []pendingEntry // scratch of mapToWalk
	// wholeMaps walks every map entry by entry, without its memo: the
	// tests' reference.
	wholeMaps bool
	collect   *[]*rowState // the rows found under the list element being walked
	// within lists the slices being walked around the value being
	// walked, outermost first.
	within []withinSlice
	// tooDeep is the first path where the walk gave up, nested deeper
	// than maxScanDepth; told once per check (deepTold), since the rows
	// below it are missing from the tables.
	tooDeep  bool
	deepPath string
	deepTold bool
}

// maxScanDepth bounds the walk's recursion (a pointer and a struct field
// each count a level: a linked list of 2,000 elements fits), as the State
// panel's flattening is bounded; deeper objects are not seen, which fails
// the check rather than leave a predicate blind to them.
const maxScanDepth = 4096

// pointerKey is a pointer the walk followed: its address and its type. A
// pointer to a struct and one to its first field share the address (so
// do pointers to zero-size values): keyed by the address alone, whichever
// came second was taken for the first, and the struct's other fields,
// with their rows, went unseen.
type pointerKey struct {
	p uintptr
	t reflect.Type
}

// walked holds the pointers and maps a scan walked, by type and address:
// walkedMark, or the mark of the map memo pass that passed over them in
// this scan, which is greater (mapmemo.go). By
// type first, so that a map of many rows looks its addresses up in one
// map of integers.
type walked map[reflect.Type]map[uintptr]int32

// walkedMark marks what the walk itself walked.
const walkedMark int32 = 1

// of is the addresses of type t walked.
func (w walked) of(t reflect.Type) map[uintptr]int32 {
	m := w[t]
	if m == nil {
		m = map[uintptr]int32{}
		w[t] = m
	}
	return m
}

// reset forgets every address, keeping the maps' room.
func (w walked) reset() {
	for _, m := range w {
		clear(m)
	}
}

// withinSlice is a slice being walked: its array, type and length.
type withinSlice struct {
	pointerKey
	n int
}

func newScanner(c *Checker) *scanner {
	return &scanner{c: c, reach: map[reflect.Type]bool{}, match: map[reflect.Type][]*Table{},
		plans: map[reflect.Type][]walkField{}, seen: walked{}, maps: map[listKey]*mapMemo{},
		flat: map[reflect.Type]bool{}, strs: map[reflect.Type][]uintptr{}, lists: map[listKey]*listMemo{}}
}

// A node's list of rows (a primary's committed entries, a log of
// records) is walked after every event of the node, row by row, though
// most events leave it as it was. A list whose elements hold their whole
// observed content in their own memory (numbers, booleans, strings, and
// arrays and structs of them: a string's bytes never change) is the same
// list when its memory is: each element's memory is hashed, a fraction
// of what walking its rows costs, and while the list lies where it lay,
// only the elements whose memory changed, and new ones, are walked; the
// others' rows are taken as found again. A string's memory is only its header, and
// within one event its bytes could be freed and another string's
// allocated at the same address: the memo holds the strings it hashed,
// so that their bytes stay where they are. (Hashing the bytes instead
// cost every event the whole list's text, read or not.)
type listKey struct {
	node node.ID
	path string
}

type listMemo struct {
	typ  reflect.Type
	data unsafe.Pointer
	sums []uint64      // per element: a hash of its memory
	rows [][]*rowState // per element: the rows found in it
	// dropped is the checker's count of rows taken out of tables when the
	// memo was brought up to date: while it is the same, none of its rows
	// was.
	dropped int
	// held keeps the strings of the elements hashed: while they are
	// held, no other string is allocated where their bytes lie, so an
	// unchanged header means unchanged bytes.
	held []string
}

// memoLen is the shortest list remembered: shorter ones are walked.
const memoLen = 32

// flatType tells whether t's observed content lies in a value's own
// memory: no pointer, map, slice, interface, channel or function among
// the fields state observes (a time.Time's location is not observed).
func (s *scanner) flatType(t reflect.Type) bool {
	if f, ok := s.flat[t]; ok {
		return f
	}
	s.flat[t] = false // a type that contains itself is no flat one
	f := false
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		f = true
	case reflect.Array:
		f = s.flatType(t.Elem())
	case reflect.Struct:
		f = true
		if !state.IsTime(t) {
			for _, fl := range state.Fields(t) {
				if !s.flatType(t.Field(fl.Index).Type) {
					f = false
					break
				}
			}
		}
	}
	s.flat[t] = f
	return f
}

// stringsOf lists the offsets of the strings among a flat type's
// observed content, found once per type.
func (s *scanner) stringsOf(t reflect.Type) []uintptr {
	if offs, ok := s.strs[t]; ok {
		return offs
	}
	var offs []uintptr
	switch t.Kind() {
	case reflect.String:
		offs = []uintptr{0}
	case reflect.Array:
		for _, o := range s.stringsOf(t.Elem()) {
			for i := range t.Len() {
				offs = append(offs, uintptr(i)*t.Elem().Size()+o)
			}
		}
	case reflect.Struct:
		if !state.IsTime(t) {
			for _, fl := range state.Fields(t) {
				f := t.Field(fl.Index)
				for _, o := range s.stringsOf(f.Type) {
					offs = append(offs, f.Offset+o)
				}
			}
		}
	}
	s.strs[t] = offs
	return offs
}

// holdStrings sets element i's strings (at offsets strs) in held, which
// keeps len(strs) per element, in element order, growing it for a new
// element.
func holdStrings(held []string, data unsafe.Pointer, size uintptr, strs []uintptr, i int) []string {
	e := unsafe.Add(data, uintptr(i)*size)
	for j, off := range strs {
		str := *(*string)(unsafe.Add(e, off))
		if k := i*len(strs) + j; k < len(held) {
			held[k] = str
		} else {
			held = append(held, str)
		}
	}
	return held
}

// listToWalk tells which elements of the list v at path to walk: those
// whose memory changed since the list was last walked, and new ones
// (all of them for a list not seen before, or that moved, shrank or lost
// a row otherwise). The others' rows are marked found. ok is false for
// a list not remembered (short, or of elements that are not flat): walk
// it all. The walk adds each element's rows to m.rows[i].
func (s *scanner) listToWalk(v reflect.Value, path string) (walk []int, m *listMemo, ok bool) {
	n := v.Len()
	if n < memoLen || !s.flatType(v.Type().Elem()) {
		return nil, nil, false
	}
	data, size := v.UnsafePointer(), v.Type().Elem().Size()
	strs := s.stringsOf(v.Type().Elem())
	sum := func(i int) uint64 {
		return memSum(unsafe.Slice((*byte)(unsafe.Add(data, uintptr(i)*size)), size))
	}
	key := listKey{s.id, path}
	m = s.lists[key]
	if m == nil || m.typ != v.Type() || m.data != data || len(m.sums) > n || m.dropped != s.c.dropped && m.lost() {
		m = &listMemo{typ: v.Type(), data: data, sums: make([]uint64, n), rows: make([][]*rowState, n), dropped: s.c.dropped}
		s.lists[key] = m
		walk = make([]int, n)
		for i := range n {
			m.sums[i], walk[i] = sum(i), i
			m.held = holdStrings(m.held, data, size, strs, i)
		}
		return walk, m, true
	}
	old := len(m.sums)
	for i := range old {
		if x := sum(i); x != m.sums[i] {
			m.sums[i] = x
			m.held = holdStrings(m.held, data, size, strs, i)
			walk = append(walk, i)
			continue
		}
		for _, rs := range m.rows[i] {
			rs.seen = s.gen
		}
	}
	for i := old; i < n; i++ {
		m.sums = append(m.sums, sum(i))
		m.rows = append(m.rows, nil)
		m.held = holdStrings(m.held, data, size, strs, i)
		walk = append(walk, i)
	}
	m.dropped = s.c.dropped
	return walk, m, true
}

// memSum hashes an element's memory, eight bytes at a time: a list's
// elements are hashed after every event of its node, so this is the
// cost that remains per element (xxhash's setup was most of it for
// elements of a few words). Not for adversaries: a change goes unseen
// only when two 64-bit sums collide.
func memSum(b []byte) uint64 {
	h := uint64(len(b)) * 0x9e3779b97f4a7c15
	for len(b) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64(b)) * 0xff51afd7ed558ccd
		h ^= h >> 32
		b = b[8:]
	}
	for _, c := range b {
		h = (h ^ uint64(c)) * 0x100000001b3
	}
	h ^= h >> 29
	return h * 0xc4ceb9fe1a85ec53
}

// lost tells whether a row found in the list was taken out of its table
// since (the node's rows were dropped): the list is walked again.
func (m *listMemo) lost() bool {
	for _, rows := range m.rows {
		if slices.ContainsFunc(rows, func(rs *rowState) bool { return rs.removed }) {
			return true
		}
	}
	return false
}

// matching lists the tables whose type t is, computed once per type.
func (s *scanner) matching(t reflect.Type) []*Table {
	if m, ok := s.match[t]; ok {
		return m
	}
	var m []*Table
	for _, tb := range s.c.tables {
		if tb.matches(t) {
			m = append(m, tb)
		}
	}
	s.match[t] = m
	return m
}

// reaches reports whether a value of type t can hold an object of some
// table's type. Interfaces might hold anything.
//
// Types can be recursive (A holds *B, B holds *A), so the answer is a
// search over every type reachable from t, and only complete answers are
// cached: caching a provisional answer while a cycle is open would make
// which rows are found depend on which type happened to be asked first.
func (s *scanner) reaches(t reflect.Type) bool {
	if r, ok := s.reach[t]; ok {
		return r
	}
	seen := map[reflect.Type]bool{t: true}
	stack := []reflect.Type{t}
	push := func(u reflect.Type) {
		if !seen[u] {
			seen[u] = true
			stack = append(stack, u)
		}
	}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if r, ok := s.reach[u]; ok {
			if r {
				s.reach[t] = true
				return true
			}
			continue // a cached false is complete: nothing below u matches
		}
		if u.Kind() == reflect.Interface || len(s.matching(u)) > 0 {
			s.reach[t] = true
			return true
		}
		switch u.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			push(u.Elem())
		case reflect.Struct:
			if !state.IsTime(u) {
				for i := range u.NumField() {
					if f := u.Field(i); f.Tag.Get("replay") != "-" {
						push(f.Type)
					}
				}
			}
		}
	}
	// Nothing reachable from t matches, so nothing reachable from any type
	// seen on the way does either.
	for u := range seen {
		s.reach[u] = false
	}
	return false
}

// walkField is a field of a struct type the scanner descends into.
type walkField struct {
	index int
	name  string
}

// fieldsOf lists the fields of struct type t that can hold a table's
// rows, found once per type (in plans): the walk runs after every event.
func (s *scanner) fieldsOf(t reflect.Type) []walkField {
	if fs, ok := s.plans[t]; ok {
		return fs
	}
	fs := []walkField{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("replay") == "-" || f.Name == "_" || !s.reaches(f.Type) {
			continue
		}
		fs = append(fs, walkField{i, f.Name})
	}
	s.plans[t] = fs
	return fs
}

// scan walks a node's handler and upserts the rows found; rows of the node
// not found any more are removed. changedRows receives rows whose content
// changed.
func (c *Checker) scanNode(id node.ID, h node.Handler) {
	s := c.scan
	s.gen++
	s.id, s.step, s.now = id, c.step, c.now
	s.seen.reset()
	s.marks = walkedMark // marks are told apart within one scan
	s.tooDeep = false
	if h != nil {
		s.walk(reflect.ValueOf(h), "", 0)
	}
	if s.tooDeep && !s.deepTold {
		s.deepTold = true
		path := strings.TrimPrefix(s.deepPath, ".")
		if path == "" {
			path = "the handler"
		}
		if len(path) > 100 { // a path that deep is long: its start says where
			path = path[:100] + "..."
		}
		c.fail(string(id), "state", fmt.Errorf("%s nests deeper than %d levels (pointers and fields): the tables miss every row below it, so the predicates did not see the whole state", path, maxScanDepth))
	}
	for _, t := range c.tables {
		rows := t.byNode[id]
		if !slices.ContainsFunc(rows, func(rs *rowState) bool { return rs.seen != s.gen }) {
			continue // nothing gone: no copy of the node's rows to remove from
		}
		// One pass over the node's rows: removing them one by one
		// searched the node's rows for each (a crash of a node with
		// thousands of rows in a list cost their square).
		kept := make([]*rowState, 0, len(rows))
		for _, rs := range rows {
			if rs.seen == s.gen {
				kept = append(kept, rs)
			} else {
				t.drop(rs)
			}
		}
		t.setNodeRows(id, kept)
		c.tableChanged(t, id)
	}
}

func (s *scanner) walk(v reflect.Value, path string, depth int) {
	if !v.IsValid() {
		return
	}
	if depth > maxScanDepth {
		if !s.tooDeep {
			s.tooDeep, s.deepPath = true, path
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || !s.reaches(v.Type()) {
			return
		}
		seen := s.seen.of(v.Type())
		if seen[v.Pointer()] != 0 {
			return // aliased: the object is a row once, at its first path
		}
		seen[v.Pointer()] = walkedMark
		s.walk(v.Elem(), path, depth+1)
		return
	case reflect.Interface:
		if !v.IsNil() {
			s.c.noteHeld(v.Elem().Type())
			s.walk(v.Elem(), path, depth+1)
		}
		return
	}
	t := v.Type()
	if !s.reaches(t) {
		return
	}
	for _, tb := range s.matching(t) {
		rs, added, changed := tb.upsert(rowKey{s.id, path}, v, s.gen, s.step, s.now)
		if s.collect != nil {
			*s.collect = append(*s.collect, rs)
		}
		if added {
			if !tb.hadRows && !tb.confirmed {
				s.c.unseen--
			}
			tb.hadRows = true
			s.c.tableChanged(tb, s.id)
		}
		if changed {
			s.c.rowChanged(rs, tb.touched)
		}
	}
	switch v.Kind() {
	case reflect.Struct:
		// A container/list as its sequence, an element as its value,
		// with the paths replay state shows (state/list.go).
		switch {
		case state.IsList(t):
			state.ListElements(v, func(i int, e reflect.Value) { s.walk(e, indexPath(path, i), depth+1) })
			return
		case state.IsListElement(t):
			s.walk(state.ElementValue(v), path, depth+1)
			return
		}
		for _, f := range s.fieldsOf(t) {
			s.walk(v.Field(f.index), fieldPath(path, f.name), depth+1)
		}
	case reflect.Slice, reflect.Array:
		if !s.reaches(t.Elem()) {
			return
		}
		if v.Kind() == reflect.Slice {
			if todo, m, ok := s.listToWalk(v, path); ok {
				// Flat elements hold no list of their own: no memo is
				// being filled around this one.
				for _, i := range todo {
					m.rows[i] = m.rows[i][:0]
					s.collect = &m.rows[i]
					s.walk(v.Index(i), indexPath(path, i), depth+1)
				}
				s.collect = nil
				return
			}
		}
		if v.Kind() == reflect.Slice {
			// A slice inside itself (through interfaces, or a type
			// such as type Tree []Tree) is walked where it is met
			// first: walked again inside itself, it went down to the
			// depth bound and failed the check, and held twice it
			// doubled the walk at each level.
			in := pointerKey{v.Pointer(), t}
			if slices.ContainsFunc(s.within, func(w withinSlice) bool { return w.pointerKey == in && w.n == v.Len() }) {
				return
			}
			s.within = append(s.within, withinSlice{in, v.Len()})
			defer func() { s.within = s.within[:len(s.within)-1] }()
		}
		for i := range v.Len() {
			s.walk(v.Index(i), indexPath(path, i), depth+1)
		}
	case reflect.Map:
		if v.IsNil() || !s.reaches(t.Elem()) {
			return
		}
		// A map, like a pointer, is walked at its first path: one that
		// holds itself (a document whose child's "parent" entry is the
		// document) was walked again under each way back to it,
		// doubling at each level, and the scan never ended.
		seen := s.seen.of(t)
		if seen[v.Pointer()] != 0 {
			return
		}
		seen[v.Pointer()] = walkedMark
		if s.mapToWalk(v, path, depth) {
			return
		}
		var keys state.MapKeys
		for _, e := range state.SortedEntries(v) {
			s.walk(e.Value, path+string(state.AppendMapKey(nil, e.Key, &keys)), depth+1)
		}
	}
}
