package state

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Leaf is one scalar of a node's observed state and where it lives.
// Paths read like Go: Leader.Lasts[0].From, Accepts[8]["n1"].
type Leaf struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// Flatten lists every scalar of v's observed state in canonical order
// (struct fields in declaration order, map keys sorted). Empty containers
// and nil references appear as leaves too, so a change from empty to
// non-empty shows up. A second path to an already-visited pointer or map
// is shown as "(same as PATH)", not expanded again.
func Flatten(v any) []Leaf {
	var f Flattener
	return f.Append(nil, v, nil)
}

// A Flattener flattens states one after another, as Flatten does, and
// shares with the leaves of a previous flattening of the same state every
// path and value that did not change: flattening a big state after a small
// change then allocates for the change, not for the whole state. The zero
// value is ready; a Flattener is not safe for concurrent use.
type Flattener struct {
	out   []Leaf
	path  []byte // the path of the value being walked
	val   []byte // scratch for a scalar's text
	seen  map[refKey]span
	paths []byte // the first path of each visited pointer or map
	// prev is the earlier flattening; next is where in it the path being
	// written is looked for first.
	prev []Leaf
	next int
	// misses counts the paths not found near next since the last found;
	// after a few, byPath (prev's paths, built then) finds them wherever
	// they moved, as when many leaves vanished at once.
	misses int
	byPath map[string]int
	// matched holds, per leaf appended, the index in prev of the leaf
	// with its path (-1: none).
	matched []int
	// tied are the groups of tied map entries being walked, innermost
	// last (flatTies).
	tied []*flatTies
	// memoIn and memoOut are AppendMemo's memos (nil: Append); base is
	// where its leaves begin in out; hbuf is scratch for hashing.
	memoIn, memoOut *Memo
	base            int
	hbuf            []byte
	copied          int // elements whose leaves were copied, for tests
	copiedPlain     int // of them, found unchanged by their memory
	copiedMaps      int // maps whose leaves were copied, for tests
	// open are the slices that may hold themselves being walked,
	// innermost last, and where their paths end in path.
	open   []openSlice
	openAt []int
	// sorting holds, per depth and map type, slices of keys and values
	// that the entries of the last map of that type at that depth were
	// set into (sortedEntries), and order is scratch for sorting them.
	sorting entrySlices
	order   []keyAt
}

// span is a path held in Flattener.paths.
type span struct{ at, n int }

// samePathWindow is how far past the expected place a path of prev is
// looked for: as far as a few removed leaves shift it.
const samePathWindow = 16

// Append appends Flatten(v) to dst and returns the extended slice. prev,
// if not nil, is the leaves of an earlier flattening of the same state:
// the appended leaves share its strings where they are equal. prev is not
// changed.
func (f *Flattener) Append(dst []Leaf, v any, prev []Leaf) []Leaf {
	f.out = dst
	f.path, f.paths = f.path[:0], f.paths[:0]
	f.prev, f.next, f.misses = prev, 0, 0
	f.matched = f.matched[:0]
	f.tied = f.tied[:0]
	f.open, f.openAt = f.open[:0], f.openAt[:0]
	clear(f.byPath)
	if f.seen == nil {
		f.seen = map[refKey]span{}
	}
	clear(f.seen)
	f.walk(reflect.ValueOf(v), 0)
	out := f.out
	f.out, f.prev = nil, nil
	return out
}

// Matched tells, for each leaf the last Append appended, the index in
// its prev of the leaf with the same path, or -1 for a path prev lacks:
// what changed from prev is then known without comparing paths again.
// The slice is the Flattener's, valid until its next Append.
func (f *Flattener) Matched() []int { return f.matched }

// previous finds the leaf of prev at the current path, and records
// where (Matched).
func (f *Flattener) previous() (Leaf, bool) {
	j := f.find()
	f.matched = append(f.matched, j)
	if j < 0 {
		return Leaf{}, false
	}
	return f.prev[j], true
}

// find is the index in prev of the leaf at the current path, or -1.
func (f *Flattener) find() int {
	p := f.shownPath()
	for j := f.next; j < len(f.prev) && j < f.next+samePathWindow; j++ {
		if f.prev[j].Path == string(p) {
			f.next, f.misses = j+1, 0
			return j
		}
	}
	// Just behind, after a hit (a run of new leaves looks once): entries
	// of a map keyed by pointers are in the order of what their keys
	// point to, which swaps two when one of those changes.
	for j := f.next - 1; f.misses == 0 && j >= 0 && j >= f.next-samePathWindow; j-- {
		if f.prev[j].Path == string(p) {
			f.misses = 0
			return j
		}
	}
	f.misses++
	if f.next >= len(f.prev) {
		return -1 // past prev's end, leaves are appended ones
	}
	if len(f.byPath) == 0 {
		if f.misses < resyncAfter {
			return -1
		}
		if f.byPath == nil {
			f.byPath = map[string]int{}
		}
		for j, l := range f.prev {
			f.byPath[l.Path] = j
		}
	}
	if j, ok := f.byPath[string(p)]; ok {
		f.next, f.misses = max(f.next, j+1), 0
		return j
	}
	return -1
}

// resyncAfter is how many paths in a row must miss near the expected
// place before prev is indexed by path (which costs a map entry per leaf
// of prev): as many as a few new leaves in the middle of a state never
// reach.
const resyncAfter = samePathWindow

// leaf writes a leaf at the current path with a value that allocates
// nothing (a constant).
func (f *Flattener) leaf(val string) {
	old, ok := f.previous()
	path := old.Path
	if !ok {
		path = f.pathString()
	}
	f.out = append(f.out, Leaf{path, val})
}

// leafVal writes a leaf at the current path with the value in f.val.
func (f *Flattener) leafVal() {
	old, ok := f.previous()
	if !ok {
		f.out = append(f.out, Leaf{f.pathString(), string(f.val)})
		return
	}
	val := old.Value
	if val != string(f.val) {
		val = string(f.val)
	}
	f.out = append(f.out, Leaf{old.Path, val})
}

func (f *Flattener) pathString() string { return string(f.shownPath()) }

// shownPath is the current path as leaves name it: "." for the root.
func (f *Flattener) shownPath() []byte {
	if len(f.path) == 0 {
		return []byte(".")
	}
	return f.path
}

func (f *Flattener) walk(v reflect.Value, depth int) {
	if depth > maxDepth {
		f.leaf("(too deep)")
		return
	}
	if !v.IsValid() {
		f.leaf("nil")
		return
	}
	if isOpaque(v.Type()) {
		f.leaf("(opaque " + v.Type().String() + ")")
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if f.reference(v) {
			return
		}
		f.walk(v.Elem(), depth+1)
	case reflect.Interface:
		if v.IsNil() {
			f.leaf("nil")
			return
		}
		if e := v.Elem(); f.showsFields(e) {
			// Which type the interface holds, before its fields: two
			// types of one interface (a Joining that became a Joined)
			// otherwise read as fields removed and added.
			n := len(f.path)
			if n > 0 {
				f.path = append(f.path, '.')
			}
			f.path = append(f.path, TypePath...)
			f.val = append(f.val[:0], e.Type().String()...)
			f.leafVal()
			f.path = f.path[:n]
		}
		f.walk(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == timeType {
			f.val = appendScalar(f.val[:0], v)
			f.leafVal()
			return
		}
		switch v.Type() {
		case listType: // as the sequence it holds (list.go)
			n, empty := len(f.path), true
			ListElements(v, func(i int, e reflect.Value) {
				empty = false
				f.path = append(strconv.AppendInt(append(f.path, '['), int64(i), 10), ']')
				f.walk(e, depth+1)
				f.path = f.path[:n]
			})
			if empty {
				f.leaf("[]")
			}
			return
		case elementType: // as the value it holds
			// Every element's Value is an any: its type is the list's
			// business, not a line per element.
			if val := ElementValue(v); val.IsNil() {
				f.leaf("nil")
			} else {
				f.walk(val.Elem(), depth+1)
			}
			return
		}
		if p, ok := atomicPointer(v); ok {
			f.walk(p, depth+1) // shown as the *T it holds
			return
		}
		fs := Fields(v.Type())
		if len(fs) == 0 {
			f.leaf("{}")
		}
		n := len(f.path)
		for _, fl := range fs {
			if n > 0 {
				f.path = append(f.path, '.')
			}
			f.path = append(f.path, fl.Name...)
			f.walk(v.Field(fl.Index), depth+1)
			f.path = f.path[:n]
		}
	case reflect.Map:
		if f.reference(v) {
			return
		}
		out, in := f.memoMap(v)
		if out != nil && f.copyMap(out, in) {
			return
		}
		start := len(f.out)
		f.walkMap(v, depth)
		if out != nil {
			out.at, out.n = start-f.base, len(f.out)-start
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			f.leaf("nil")
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			f.val = appendScalar(f.val[:0], v)
			f.leafVal()
			return
		}
		if v.Len() == 0 {
			f.leaf("[]")
		}
		// A slice inside itself shows where: walking it again would
		// never end.
		open := v.Kind() == reflect.Slice && v.Len() > 0 && sliceMayHoldItself(v.Type())
		if open {
			if out := enclosing(f.open, v); out > 0 {
				at, where := f.openAt[len(f.openAt)-out], []byte(".")
				if at > 0 {
					where = f.path[:at]
				}
				f.val = append(append(append(f.val[:0], "(same as "...), where...), ')')
				f.leafVal()
				return
			}
			f.open, f.openAt = append(f.open, openSlice{v.Pointer(), v.Len(), v.Type()}), append(f.openAt, len(f.path))
		}
		if out, in := f.memoSlice(v); out != nil {
			f.walkRemembered(v, depth+1, out, in)
		} else {
			n := len(f.path)
			for i := range v.Len() {
				f.path = append(strconv.AppendInt(append(f.path, '['), int64(i), 10), ']')
				f.walk(v.Index(i), depth+1)
				f.path = f.path[:n]
			}
		}
		if open {
			f.open, f.openAt = f.open[:len(f.open)-1], f.openAt[:len(f.openAt)-1]
		}
	default:
		f.val = appendScalar(f.val[:0], v)
		f.leafVal()
	}
}

// walkMap walks the entries of map v in canonical order.
func (f *Flattener) walkMap(v reflect.Value, depth int) {
	es, tied, done := f.sortedEntries(v, depth)
	defer done()
	if len(es) == 0 {
		f.leaf("{}")
	}
	if len(es) > 1 && keyOrder(v.Type().Key().Kind()) == nil {
		es, tied = f.byKeyText(es, tied)
	}
	n := len(f.path)
	var keys MapKeys
	var g *flatTies
	for i, e := range es {
		if g == nil && i < len(tied) && tied[i] {
			g = &flatTies{}
			f.tied = append(f.tied, g)
		}
		if g != nil {
			g.entry = i
		}
		f.path = f.appendMapKey(f.path, e.Key, &keys)
		f.walk(e.Value, depth+1)
		f.path = f.path[:n]
		if g != nil && (i >= len(tied) || !tied[i]) {
			f.tied = f.tied[:len(f.tied)-1]
			f.forgetTied(g)
			g = nil
		}
	}
}

// sortedEntries is entriesSorted for a map at depth of the walk, with
// a faster way for keys of a kind no two of which are equal (strings,
// integers, booleans: a map holds each once): their entries are set
// into slices kept for the next map of the type at this depth instead
// of being copied out one by one, and sorted by the keys' plain values.
// done zeroes what the slices held once the entries are walked.
func (f *Flattener) sortedEntries(m reflect.Value, depth int) (es []MapEntry, tied []bool, done func()) {
	kind := m.Type().Key().Kind()
	plain := kind == reflect.String || kind == reflect.Bool || kind >= reflect.Int && kind <= reflect.Uintptr
	if !plain || m.Len() < 2 {
		es, tied = entriesSorted(m, f.inContext)
		return es, tied, func() {}
	}
	kv := f.sorting.slices(depth, m.Type(), m.Len())
	keys, vals := kv[0], kv[1]
	order := f.order[:0]
	var it reflect.MapIter
	it.Reset(readable(m))
	for i := 0; it.Next(); i++ {
		k := keys.Index(i)
		k.SetIterKey(&it)
		vals.Index(i).SetIterValue(&it)
		o := keyAt{at: i}
		switch {
		case kind == reflect.String:
			o.s = k.String()
		case kind == reflect.Bool:
			if k.Bool() {
				o.n = 1
			}
		case kind <= reflect.Int64:
			o.n = uint64(k.Int()) ^ 1<<63 // ordered as unsigned
		default:
			o.n = k.Uint()
		}
		order = append(order, o)
	}
	it.Reset(reflect.Value{})
	if kind == reflect.String {
		slices.SortFunc(order, func(a, b keyAt) int { return strings.Compare(a.s, b.s) })
	} else {
		slices.SortFunc(order, func(a, b keyAt) int { return cmp.Compare(a.n, b.n) })
	}
	es = make([]MapEntry, len(order))
	for i, o := range order {
		es[i] = MapEntry{keys.Index(o.at), vals.Index(o.at)}
	}
	clear(order)
	f.order = order[:0]
	return es, nil, func() {
		for i := range len(es) {
			keys.Index(i).SetZero()
			vals.Index(i).SetZero()
		}
	}
}

// keyAt is a map key's plain value and where its entry was set.
type keyAt struct {
	s  string
	n  uint64
	at int
}

// inContext orders two entries of a map whose keys and values hash
// alike alone (two pointers to equal values) by what they show here:
// when one value was visited before the map, it shows as "(same as
// PATH)" and the other in full, and in the iterator's random order one
// state flattened two ways.
func (f *Flattener) inContext(a, b MapEntry) int {
	// By their keys as named here (a key naming where the walk reached
	// its object comes apart from an equal one it did not reach).
	var ka, kb MapKeys
	if c := bytes.Compare(f.appendMapKey(nil, a.Key, &ka), f.appendMapKey(nil, b.Key, &kb)); c != 0 {
		return c
	}
	return strings.Compare(f.shownInContext(a.Value), f.shownInContext(b.Value))
}

// shownInContext is what v's leaves show when walked now, after the
// references visited so far.
func (f *Flattener) shownInContext(v reflect.Value) string {
	sub := Flattener{seen: maps.Clone(f.seen), paths: slices.Clip(f.paths)}
	sub.walk(v, 0)
	var b strings.Builder
	for _, l := range sub.out {
		b.WriteString(l.Path)
		b.WriteByte('=')
		b.WriteString(l.Value)
		b.WriteByte('\n')
	}
	return b.String()
}

// TypePath is the last step of the path of the pseudo-field that shows
// which concrete struct type an interface holds: Join.(type).
const TypePath = "(type)"

// showsFields reports whether walking e, held by an interface, shows
// fields of a struct below the interface's path: a struct, or a pointer
// to one the walk has not shown yet, that is not shown as one value or
// sequence (a time, an opaque type, a list).
func (f *Flattener) showsFields(e reflect.Value) bool {
	t := e.Type()
	if t.Kind() == reflect.Pointer {
		if e.IsNil() || t.Elem().Kind() != reflect.Struct {
			return false
		}
		if _, seen := f.seen[refKey{e.Pointer(), t}]; seen || isOpaque(t) {
			return false
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == timeType || t == listType || t == elementType || isOpaque(t) {
		return false
	}
	if t.PkgPath() == "sync/atomic" { // shown as what it holds, or a value
		return false
	}
	return len(Fields(t)) > 0
}

// byKeyText reorders entries sorted by their keys' hashes (keys without
// a natural order) by the keys' text, keeping tied entries together: a
// pointer key's hash is its object's contents, so two entries swapped
// places whenever those changed, and the index stored the whole state
// at each such step, its leaves out of their previous order.
func (f *Flattener) byKeyText(es []MapEntry, tied []bool) ([]MapEntry, []bool) {
	type entry struct {
		text string
		at   int
	}
	order := make([]entry, len(es))
	for i, e := range es {
		var alone MapKeys // no #2: keys of one text compare equal
		order[i] = entry{string(f.appendMapKey(nil, e.Key, &alone)), i}
	}
	// Stable: keys of one text (equal contents, #2 after the first)
	// keep their order, and tied entries, which have one text, stay
	// next to each other.
	slices.SortStableFunc(order, func(a, b entry) int { return strings.Compare(a.text, b.text) })
	out := make([]MapEntry, len(es))
	var outTied []bool
	for k, o := range order {
		out[k] = es[o.at]
		if k > 0 && o.at == order[k-1].at+1 && o.at-1 < len(tied) && tied[o.at-1] {
			if outTied == nil {
				outTied = make([]bool, len(es)-1)
			}
			outTied[k-1] = true
		}
	}
	return out, outTied
}

// appendMapKey appends a map entry's path step. A pointer key to an
// object the walk reached before this map is named by where it did
// (acked[peers[1]]): named by the object's contents, as AppendMapKey
// names it, the entry's path changed whenever the object did, and its
// history broke into pieces.
func (f *Flattener) appendMapKey(b []byte, k reflect.Value, keys *MapKeys) []byte {
	p := k
	for p.Kind() == reflect.Interface && !p.IsNil() {
		p = p.Elem()
	}
	if p.Kind() == reflect.Pointer && !p.IsNil() {
		if first, ok := f.seen[refKey{p.Pointer(), p.Type()}]; ok {
			return append(append(append(b, '['), f.paths[first.at:first.at+first.n]...), ']')
		}
	}
	return AppendMapKey(b, k, keys)
}

// reference handles nil and already-visited pointers and maps; it reports
// whether the value is done (a leaf was written).
func (f *Flattener) reference(v reflect.Value) bool {
	if v.IsNil() {
		f.leaf("nil")
		return true
	}
	k := refKey{v.Pointer(), v.Type()}
	if first, ok := f.seen[k]; ok {
		f.val = append(append(append(f.val[:0], "(same as "...), f.paths[first.at:first.at+first.n]...), ')')
		f.leafVal()
		for _, g := range f.tied {
			g.again = append(g.again, tiedFlat{k, g.entry})
		}
		return true
	}
	p := f.shownPath()
	f.seen[k] = span{len(f.paths), len(p)}
	f.paths = append(f.paths, p...)
	for _, g := range f.tied {
		g.added = append(g.added, tiedFlat{k, g.entry})
	}
	return false
}

// flatTies tracks the walk of a group of tied map entries, as tieGroup
// does for the hash: a reference first reached in one of them, and in no
// other, is forgotten once the group is walked, so that a later path to
// it shows it in full rather than as "(same as PATH)" of the entry the
// iterator happened to put first.
type flatTies struct {
	entry        int
	added, again []tiedFlat
}

type tiedFlat struct {
	k     refKey
	entry int
}

func (f *Flattener) forgetTied(g *flatTies) {
	shared := reachedByOthers(g.added, g.again, func(r tiedFlat) (refKey, int) { return r.k, r.entry })
	for _, a := range g.added {
		if !shared[a.k] {
			delete(f.seen, a.k)
		}
	}
}

// KeyString formats a map key as it appears in paths: strings quoted,
// numbers bare, structs and arrays by their content ({A:1 B:"x"}, [1 2]),
// pointers by what they point to (&{A:1}).
func KeyString(k reflect.Value) string { return string(appendKey(nil, k)) }

// MapKeys tells apart, along one map's entries in SortedEntries' order,
// the keys whose text (KeyString) is the same. The zero value is ready;
// use one per map walked.
type MapKeys struct {
	unequal int
	seen    map[string]int // texts of keys that may print alike, and how many did
}

// AppendMapKey appends a map entry's path step, "[KEY]", to b. Keys of
// a map that print alike are told apart as "[KEY]", "[KEY#2]", ... in
// SortedEntries' order (which puts them by value where their keys'
// hashes tie), since a path names one entry: leaves, the "(same as
// PATH)" of a second reference and the predicates' rows are told apart
// by it, and two entries under one path showed one entry twice and
// merged the rows. A key not equal to itself (a NaN, or a struct or
// array holding one) is such a key: a map holds one entry per NaN. So
// are keys that differ where their text does not show: pointers to
// equal values, interfaces holding 1 and int64(1), struct keys that
// differ only in a field tagged `replay:"-"`, byte arrays past the 32
// bytes shown. keys counts them for one map.
func AppendMapKey(b []byte, k reflect.Value, keys *MapKeys) []byte {
	start := len(b) + 1
	b = appendKey(append(b, '['), k)
	n := 1
	switch k.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		// Distinct keys of these kinds print apart.
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		// Apart but for NaNs (-0 and +0 are one key).
		if !k.Equal(k) {
			keys.unequal++
			n = keys.unequal
		}
	default:
		if keys.seen == nil {
			keys.seen = map[string]int{}
		}
		text := string(b[start:])
		n = keys.seen[text] + 1
		keys.seen[text] = n
	}
	if n > 1 {
		b = strconv.AppendInt(append(b, '#'), int64(n), 10)
	}
	return append(b, ']')
}

// BracketLen is the length of the "[KEY]" that starts s, an index or a
// map key of a state path, brackets included: keys of arrays and structs
// nest brackets, and quoted strings in them may hold any character. It
// is -1 when s does not start with one that closes.
func BracketLen(s string) int {
	if !strings.HasPrefix(s, "[") {
		return -1
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			// A lone quote (from a String method's name) is a character.
			if q, err := strconv.QuotedPrefix(s[i:]); err == nil {
				i += len(q) - 1
			}
		case '[':
			depth++
		case ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

// maxKeyPointers is how many pointers a key's text follows: the key's
// own object is shown, and pointers in it by their type (a key that
// points to itself through a chain of them must end).
const maxKeyPointers = 1

func appendKey(b []byte, k reflect.Value) []byte { return appendKeyAt(b, k, 0) }

func appendKeyAt(b []byte, k reflect.Value, pointers int) []byte {
	for k.Kind() == reflect.Interface && !k.IsNil() {
		k = k.Elem()
	}
	switch k.Kind() {
	case reflect.Pointer:
		// By what it points to, as fmt's %v shows a pointer to a struct:
		// the type's name alone gave every entry of a map keyed by
		// pointers one path (the address would differ between runs).
		if k.IsNil() {
			return append(b, "nil"...)
		}
		if pointers >= maxKeyPointers || isOpaque(k.Type()) {
			break
		}
		return appendKeyAt(append(b, '&'), k.Elem(), pointers+1)
	case reflect.String:
		return strconv.AppendQuote(b, k.String())
	case reflect.Struct:
		// By content: the type's name alone gave every entry of a map
		// keyed by a struct the same path.
		if k.Type() == timeType || isOpaque(k.Type()) {
			break
		}
		b = append(b, '{')
		for i, f := range Fields(k.Type()) {
			if i > 0 {
				b = append(b, ' ')
			}
			b = appendKeyAt(append(append(b, f.Name...), ':'), k.Field(f.Index), pointers)
		}
		return append(b, '}')
	case reflect.Array:
		if k.Type().Elem().Kind() == reflect.Uint8 {
			break
		}
		b = append(b, '[')
		for i := range k.Len() {
			if i > 0 {
				b = append(b, ' ')
			}
			b = appendKeyAt(b, k.Index(i), pointers)
		}
		return append(b, ']')
	}
	return appendScalar(b, k)
}

// Scalar formats one scalar value for display.
func Scalar(v reflect.Value) string { return string(appendScalar(nil, v)) }

// hexShown is how many bytes of a byte slice or array a scalar shows.
const hexShown = 32

func appendScalar(b []byte, v reflect.Value) []byte {
	switch v.Kind() {
	case reflect.Bool:
		return strconv.AppendBool(b, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type() == durationType {
			return append(b, time.Duration(v.Int()).String()...)
		}
		return appendName(strconv.AppendInt(b, v.Int(), 10), v)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return appendName(strconv.AppendUint(b, v.Uint(), 10), v)
	case reflect.Float32, reflect.Float64:
		return strconv.AppendFloat(b, v.Float(), 'g', -1, 64)
	case reflect.Complex64, reflect.Complex128:
		return fmt.Append(b, v.Complex())
	case reflect.String:
		return strconv.AppendQuote(b, v.String())
	case reflect.Func:
		if v.IsNil() {
			return append(b, "nil"...)
		}
		return append(b, "func"...)
	case reflect.Chan:
		if v.IsNil() {
			return append(b, "nil"...)
		}
		return append(b, "chan"...)
	case reflect.UnsafePointer:
		return append(b, "unsafe.Pointer"...)
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			// Read byte by byte: the value may sit in an unexported field.
			n := v.Len()
			var head [hexShown]byte
			for i := range min(n, hexShown) {
				head[i] = byte(v.Index(i).Uint())
			}
			b = hex.AppendEncode(append(b, "0x"...), head[:min(n, hexShown)])
			if n > hexShown {
				b = fmt.Appendf(b, "...(%d bytes)", n)
			}
			return b
		}
	case reflect.Struct:
		if v.Type() == timeType {
			sec, nsec := timeInstant(v)
			return time.Unix(sec, nsec).UTC().AppendFormat(b, time.RFC3339Nano)
		}
	}
	return append(b, strings.TrimSpace(v.Type().String())...)
}

var durationType = reflect.TypeFor[time.Duration]()

// appendName follows an integer of a named type with a String method
// (an enum: a Raft node's role, a Paxos phase) with what String says of
// it, "2 (leader)": the number alone sent a user to the source. The
// method is called on a copy of the number (the field may be
// unexported), and what it says is shown only if it is short, printable
// and not the number again; a String that panics (an array lookup of a
// value it does not know) shows nothing. A String that never returns
// would hang the display: enum String methods are lookups.
func appendName(b []byte, v reflect.Value) []byte {
	t := v.Type()
	if !isStringer(t) {
		return b
	}
	c := reflect.New(t).Elem()
	if c.CanInt() {
		c.SetInt(v.Int())
	} else {
		c.SetUint(v.Uint())
	}
	name := callString(c.Interface().(fmt.Stringer))
	if name == "" || len(name) > maxNameShown || bytes.HasSuffix(b, []byte(name)) {
		return b
	}
	for _, r := range name {
		if !strconv.IsPrint(r) {
			return b
		}
	}
	b = append(b, " ("...)
	b = append(b, name...)
	return append(b, ')')
}

// maxNameShown bounds what appendName shows of a String method's result.
const maxNameShown = 64

func callString(s fmt.Stringer) (name string) {
	defer func() {
		if recover() != nil {
			name = ""
		}
	}()
	return s.String()
}

var stringerType = reflect.TypeFor[fmt.Stringer]()

// stringers caches, per named integer type, whether its values have a
// String method: asked for every integer a flattening shows.
var stringers sync.Map // reflect.Type -> bool

func isStringer(t reflect.Type) bool {
	if t.NumMethod() == 0 { // int, and most named integers: no lookup
		return false
	}
	if is, ok := stringers.Load(t); ok {
		return is.(bool)
	}
	is := t.Implements(stringerType)
	stringers.Store(t, is)
	return is
}
