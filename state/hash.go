package state

import (
	"cmp"
	"encoding/binary"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// maxDepth bounds recursion through values that contain themselves without
// a pointer (a slice of interfaces holding itself).
const maxDepth = 4096

// Hash returns a canonical 64-bit hash of v's observed state: equal states
// hash equal regardless of map iteration order, pointer addresses or
// allocation history, and aliasing (two fields pointing at one object) is
// part of the state. v is usually a node's handler (a pointer to a struct).
func Hash(v any) uint64 {
	sum, _ := HashSize(v)
	return sum
}

// HashSize is Hash that also says how many bytes of canonical encoding
// the hash covered: a deterministic measure of what hashing v cost, which
// the simulator uses to space state hashes so that their cost per event
// stays bounded however large a node's state grows.
func HashSize(v any) (sum uint64, size int) {
	h := hasherPool.Get().(*hasher)
	h.value(reflect.ValueOf(v), 0)
	size = h.written + len(h.buf)
	sum = h.sum()
	h.reset()
	hasherPool.Put(h)
	return sum, size
}

var hasherPool = sync.Pool{New: func() any { return newHasher() }}

func newHasher() *hasher {
	return &hasher{d: xxhash.New(), buf: make([]byte, 0, hashBuf)}
}

// hashBuf is how much the hasher collects before feeding the digest: one
// large write is much cheaper than many 9-byte ones.
const hashBuf = 4096

type refKey struct {
	ptr uintptr
	typ reflect.Type
}

type hasher struct {
	d *xxhash.Digest
	// refs numbers the references (pointers, maps) visited so far, in
	// order, while there are at most fewRefs of them; then seen does.
	refs     []refKey
	manyRefs bool
	seen     map[refKey]uint64
	// nrefs counts the references numbered so far: len(refs), or len(seen)
	// but for those forgotten (tied).
	nrefs uint64
	// tied are the groups of tied map entries being hashed, innermost
	// last (ties).
	tied []*tieGroup
	// seenPeak is the most references seen has held since it was made:
	// its capacity, which clearing it costs.
	seenPeak int
	buf      []byte
	// flushed says whether buf was ever written to d.
	flushed bool
	// written counts the bytes written to d so far.
	written int
	// scratch holds map entries being sorted, one slice per nesting level.
	scratch [][]MapEntry
	depth   int
	// open are the slices that may hold themselves being hashed,
	// innermost last.
	open []openSlice
	// keySorts are the maps whose keys this hasher hashes alone to sort
	// them (set by sortEntriesTied), innermost last.
	keySorts []uintptr
	// entry hashes the entries of reference-free maps (entryHasher),
	// into the values kv holds for them (entryValues).
	entry *hasher
	kv    map[reflect.Type][2]reflect.Value
	// entryBuf holds the encoding of one entry of a map of scalars.
	entryBuf []byte
	// refScratch holds, per nesting level, the entries of a map of
	// scalar keys and reference values being sorted (refMapHash).
	refScratch [][]keyedRef
	// sorting holds, per nesting level, the key and value slices of the
	// last map of each type sorted there (sortSlices); sorted lists the
	// parts used since the last reset, which reset zeroes.
	sorting entrySlices
	sorted  []usedSlice
}

// MapEntry is one entry of a map: its key and its value.
type MapEntry struct{ Key, Value reflect.Value }

func (h *hasher) flush() {
	h.written += len(h.buf)
	h.d.Write(h.buf)
	h.buf = h.buf[:0]
	h.flushed = true
}

func (h *hasher) sum() uint64 {
	if !h.flushed {
		// Everything is still in the buffer: one-shot hashing is cheaper
		// than streaming, and gives the same value.
		return xxhash.Sum64(h.buf)
	}
	h.flush()
	return h.d.Sum64()
}

// fewRefs is how many references a hash numbers in a slice before it
// moves them to a map.
const fewRefs = 16

// maxKeptSeen is the most references a pooled hasher's map keeps room
// for between hashes that use little of it.
const maxKeptSeen = 64

func (h *hasher) reset() {
	h.flushed, h.written = false, 0
	h.d.Reset()
	h.buf = h.buf[:0]
	// Clearing a map costs its capacity, not its length: a map grown by
	// one big state would make every later small hash (a table's row)
	// pay for it, so a big map that this hash used little of is dropped.
	// One that it filled (the same big state hashed again and again) is
	// cleared and kept.
	n := len(h.seen)
	h.seenPeak = max(h.seenPeak, n)
	if h.seenPeak > maxKeptSeen && n*8 < h.seenPeak {
		h.seen, h.seenPeak = nil, 0
	} else {
		clear(h.seen)
	}
	for i := range h.scratch {
		clear(h.scratch[i])
		h.scratch[i] = h.scratch[i][:0]
	}
	clear(h.refs)
	h.refs, h.manyRefs, h.nrefs = h.refs[:0], false, 0
	h.tied, h.open = h.tied[:0], h.open[:0]
	for i, s := range h.sorted {
		for j := range s.n {
			s.v.Index(j).SetZero()
		}
		h.sorted[i] = usedSlice{}
	}
	h.sorted = h.sorted[:0]
}

// entryHasher is the hasher that hashes one entry of a reference-free map
// at a time: kept with h rather than taken from the pool per map, since
// such maps are often many small ones (a tally per round). Entries hold
// no references and so no such map, so one per hasher serves.
func (h *hasher) entryHasher() *hasher {
	if h.entry == nil {
		h.entry = newHasher()
	}
	return h.entry
}

// entryValues returns settable values of a reference-free map type's key
// and element types, made once per hasher and type: a state holds many
// small maps of one type, and making the two per map was most of what
// hashing one allocated. An entry holds no such map, so the values are
// never in use twice at once.
func (h *hasher) entryValues(t reflect.Type) (k, e reflect.Value) {
	if kv, ok := h.kv[t]; ok {
		return kv[0], kv[1]
	}
	if h.kv == nil {
		h.kv = map[reflect.Type][2]reflect.Value{}
	}
	k, e = reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
	h.kv[t] = [2]reflect.Value{k, e}
	return k, e
}

// clearEntry readies an entry hasher for the next entry: an entry that
// stayed in the buffer needs only the buffer emptied, and one that did
// not (a long string) a full reset.
func (h *hasher) clearEntry() {
	if h.flushed {
		h.reset()
		return
	}
	h.buf = h.buf[:0]
}

func (h *hasher) tag(b byte) {
	if len(h.buf) >= hashBuf-16 {
		h.flush()
	}
	h.buf = append(h.buf, b)
}

func (h *hasher) u64(b byte, x uint64) {
	if len(h.buf) >= hashBuf-16 {
		h.flush()
	}
	h.buf = append(h.buf, b)
	h.buf = binary.LittleEndian.AppendUint64(h.buf, x)
}

func (h *hasher) raw(p string) {
	if len(h.buf)+len(p) > hashBuf {
		h.flush()
		if len(p) > hashBuf/2 {
			h.written += len(p)
			h.d.WriteString(p)
			return
		}
	}
	h.buf = append(h.buf, p...)
}

func (h *hasher) str(b byte, s string) {
	h.u64(b, uint64(len(s)))
	h.raw(s)
}

// ref reports whether the reference (pointer or map) was visited before,
// hashing a back-reference to its first visit if so.
func (h *hasher) ref(p uintptr, t reflect.Type) bool {
	k := refKey{p, t}
	if !h.manyRefs {
		// Most states hold a few references: a look through a short
		// slice costs less than hashing the key into a map.
		for i, r := range h.refs {
			if r == k {
				h.backRef(uint64(i))
				return true
			}
		}
		if len(h.refs) < fewRefs {
			h.refs = append(h.refs, k)
			h.numbered(k)
			return false
		}
		h.manyRefs = true
		if h.seen == nil {
			h.seen = map[refKey]uint64{}
		}
		for i, r := range h.refs {
			if r != (refKey{}) { // not forgotten
				h.seen[r] = uint64(i)
			}
		}
	}
	if n, ok := h.seen[k]; ok {
		h.backRef(n)
		return true
	}
	h.seen[k] = h.nrefs
	h.numbered(k)
	return false
}

// backRef hashes a back-reference to the n-th reference.
func (h *hasher) backRef(n uint64) {
	h.u64('@', n)
	for _, g := range h.tied {
		g.again = append(g.again, tiedRef{n: n, entry: g.entry})
	}
}

// numbered counts a reference seen for the first time.
func (h *hasher) numbered(k refKey) {
	for _, g := range h.tied {
		g.added = append(g.added, tiedRef{n: h.nrefs, k: k, entry: g.entry})
	}
	h.nrefs++
}

// A map's entries are ordered by their keys' and values' hashes, then by
// how they hash in place (inContext); entries alike in all of these (two
// pointer keys to equal peers, equal values) are tied, and hashed in the
// iterator's random order. Their order shows only in the numbers of the
// references first reached in them, and in the back-references made to
// those later: a field after the map pointing at one of the peers was
// "@i" or "@j" by the order, and one state hashed two ways. So the
// references first reached in one entry of a group of tied ones, and in
// no other, are forgotten once the group is hashed: their numbers stay
// taken (so that later ones are numbered as before), and a later
// reference to one of them hashes it again in full, which no order
// changes. Where nothing after the map reaches them, the bytes hashed
// are those hashed before.

// tieGroup tracks the hashing of a group of tied entries.
type tieGroup struct {
	entry int       // the entry being hashed, within the map
	added []tiedRef // references numbered while the group was hashed
	again []tiedRef // back-references made while it was
}

type tiedRef struct {
	n     uint64
	k     refKey
	entry int
}

// forgetTied forgets the references that only one entry of group g
// reached.
func (h *hasher) forgetTied(g *tieGroup) {
	shared := reachedByOthers(g.added, g.again, func(r tiedRef) (uint64, int) { return r.n, r.entry })
	for _, a := range g.added {
		if shared[a.n] {
			continue
		}
		if h.manyRefs {
			delete(h.seen, a.k)
		} else {
			h.refs[a.n] = refKey{}
		}
	}
}

// reachedByOthers tells, of the references first reached (added) in
// some entry of a tied group, those that another entry reached again: a
// walk keeps them, and forgets the rest. of gives a record's reference
// and the entry it was in.
func reachedByOthers[R any, K comparable](added, again []R, of func(R) (K, int)) map[K]bool {
	entryOf := make(map[K]int, len(added))
	for _, a := range added {
		k, e := of(a)
		entryOf[k] = e
	}
	shared := map[K]bool{}
	for _, b := range again {
		k, e := of(b)
		if first, ok := entryOf[k]; ok && first != e {
			shared[k] = true
		}
	}
	return shared
}

// value hashes any value by dispatching to its type's compiled function.
// reference handles what pointers and maps have in common: nil, too deep,
// or already visited (hashed as a back-reference). It reports whether the
// value is fully hashed.
func (h *hasher) reference(v reflect.Value, t reflect.Type, depth int) bool {
	return h.absent(v, depth) || h.ref(v.Pointer(), t)
}

// absent hashes what nilable values have in common: nil, or nested too
// deep to follow. It reports whether the value is fully hashed.
func (h *hasher) absent(v reflect.Value, depth int) bool {
	switch {
	case v.IsNil():
		h.tag('0')
	case depth > maxDepth:
		h.tag('!')
	default:
		return false
	}
	return true
}

func (h *hasher) value(v reflect.Value, depth int) {
	if !v.IsValid() {
		h.tag('0')
		return
	}
	hashFnOf(v.Type())(h, v, depth)
}

// hashFunc hashes one value of a known type. Functions are compiled once
// per type, so a walk does no per-value kind switch or cache lookup except
// through interfaces.
type hashFunc func(h *hasher, v reflect.Value, depth int)

// hashFns holds finished functions only; compiling happens under
// compileMu with the types in progress in compiling, so a recursive type
// (a node pointing to its own type) calls itself through its cell, and no
// other goroutine ever sees a half-built function.
var (
	hashFns   sync.Map // reflect.Type -> hashFunc
	compileMu sync.Mutex
	compiling = map[reflect.Type]*hashFunc{}
)

func hashFnOf(t reflect.Type) hashFunc {
	if f, ok := hashFns.Load(t); ok {
		return f.(hashFunc)
	}
	compileMu.Lock()
	defer compileMu.Unlock()
	return hashFnLocked(t)
}

// hashFnLocked returns t's function, compiling it if needed; compileMu is
// held.
func hashFnLocked(t reflect.Type) hashFunc {
	if f, ok := hashFns.Load(t); ok {
		return f.(hashFunc)
	}
	if cell, ok := compiling[t]; ok {
		return func(h *hasher, v reflect.Value, depth int) { (*cell)(h, v, depth) }
	}
	cell := new(hashFunc)
	compiling[t] = cell
	f := compileHash(t)
	*cell = f
	delete(compiling, t)
	hashFns.Store(t, f)
	return f
}

// compileHash builds t's function; compileMu is held.
func compileHash(t reflect.Type) hashFunc {
	var f hashFunc
	if isOpaque(t) {
		return func(h *hasher, _ reflect.Value, _ int) { h.tag('o') }
	}
	switch t.Kind() {
	case reflect.Bool:
		f = func(h *hasher, v reflect.Value, _ int) {
			if v.Bool() {
				h.tag('T')
			} else {
				h.tag('F')
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f = func(h *hasher, v reflect.Value, _ int) { h.u64('i', uint64(v.Int())) }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f = func(h *hasher, v reflect.Value, _ int) { h.u64('u', v.Uint()) }
	case reflect.Uintptr, reflect.UnsafePointer, reflect.Chan:
		// Addresses and channels differ between runs of the same program.
		f = func(h *hasher, _ reflect.Value, _ int) { h.tag('x') }
	case reflect.Float32, reflect.Float64:
		f = func(h *hasher, v reflect.Value, _ int) { h.u64('f', math.Float64bits(v.Float())) }
	case reflect.Complex64, reflect.Complex128:
		f = func(h *hasher, v reflect.Value, _ int) {
			c := v.Complex()
			h.u64('c', math.Float64bits(real(c)))
			h.u64('c', math.Float64bits(imag(c)))
		}
	case reflect.String:
		f = func(h *hasher, v reflect.Value, _ int) { h.str('s', v.String()) }
	case reflect.Func:
		f = func(h *hasher, v reflect.Value, _ int) {
			if v.IsNil() {
				h.tag('0')
			} else {
				h.tag('L')
			}
		}
	case reflect.Pointer:
		elemFn := hashFnLazy(t.Elem())
		f = func(h *hasher, v reflect.Value, depth int) {
			if h.reference(v, t, depth) {
				return
			}
			h.tag('*')
			elemFn(h, v.Elem(), depth+1)
		}
	case reflect.Interface:
		f = func(h *hasher, v reflect.Value, depth int) {
			if h.absent(v, depth) {
				return
			}
			e := v.Elem()
			h.str('I', e.Type().String())
			hashFnOf(e.Type())(h, e, depth+1)
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			f = func(h *hasher, v reflect.Value, _ int) {
				if v.IsNil() {
					h.tag('0')
					return
				}
				h.u64('b', uint64(v.Len()))
				h.raw(string(v.Bytes()))
			}
			break
		}
		elem := hashFnLazy(t.Elem())
		if sliceMayHoldItself(t) {
			// A slice inside itself is hashed as how many slices out it
			// is: walking it again would never end.
			f = func(h *hasher, v reflect.Value, depth int) {
				if h.absent(v, depth) {
					return
				}
				n := v.Len()
				if n == 0 {
					h.u64('[', 0)
					return
				}
				if out := enclosing(h.open, v); out > 0 {
					h.u64('^', uint64(out))
					return
				}
				h.open = append(h.open, openSlice{v.Pointer(), n, t})
				h.u64('[', uint64(n))
				for i := range n {
					elem(h, v.Index(i), depth+1)
				}
				h.open = h.open[:len(h.open)-1]
			}
			break
		}
		f = func(h *hasher, v reflect.Value, depth int) {
			if h.absent(v, depth) {
				return
			}
			h.u64('[', uint64(v.Len()))
			for i := range v.Len() {
				elem(h, v.Index(i), depth+1)
			}
		}
	case reflect.Array:
		elem := hashFnLazy(t.Elem())
		f = func(h *hasher, v reflect.Value, depth int) {
			h.u64('A', uint64(v.Len()))
			for i := range v.Len() {
				elem(h, v.Index(i), depth+1)
			}
		}
	case reflect.Map:
		key, val := hashFnLazy(t.Key()), hashFnLazy(t.Elem())
		if refFree(t.Key(), nil) && refFree(t.Elem(), nil) {
			// Entries hold no references, so no back-reference numbering
			// depends on the order they are visited in: hash each entry
			// alone and sum, which needs no sorting.
			if sum := scalarMapSummer(t); sum != nil {
				f = scalarMapHash(t, sum)
			} else {
				f = refFreeMapHash(t, key, val)
			}
			break
		}
		if collect := refMapCollectorOf(t); collect != nil {
			f = refMapHash(t, collect, val)
			break
		}
		f = func(h *hasher, v reflect.Value, depth int) {
			if out := h.sortingOut(v); out > 0 {
				// A key being hashed to sort this very map reaches it
				// (a peer that acks itself: p.Acks[p]): named by how
				// far out it is, as the sort cannot wait for itself.
				h.u64('~', uint64(out))
				return
			}
			if h.reference(v, t, depth) {
				return
			}
			h.u64('M', uint64(v.Len()))
			es, tied := h.sortedEntries(v)
			var g *tieGroup
			for i, e := range es {
				if g == nil && i < len(tied) && tied[i] {
					g = &tieGroup{}
					h.tied = append(h.tied, g)
				}
				if g != nil {
					g.entry = i
				}
				key(h, e.Key, depth+1)
				val(h, e.Value, depth+1)
				if g != nil && (i >= len(tied) || !tied[i]) {
					h.tied = h.tied[:len(h.tied)-1]
					h.forgetTied(g)
					g = nil
				}
			}
			h.depth--
		}
	case reflect.Struct:
		if t == timeType {
			f = func(h *hasher, v reflect.Value, _ int) {
				sec, nsec := timeInstant(v)
				h.u64('t', uint64(sec))
				h.u64('n', uint64(nsec))
			}
			break
		}
		p := planOf(t)
		fns := make([]hashFunc, len(p.fields))
		for i, fl := range p.fields {
			fns[i] = hashFnLazy(t.Field(fl.Index).Type)
		}
		f = structHash(t, p, fns)
	default:
		f = func(h *hasher, _ reflect.Value, _ int) { h.tag('?') }
	}
	return f
}

// refFree reports whether values of type t can contain no pointer, map or
// interface: nothing the hasher numbers as a back-reference.
func refFree(t reflect.Type, seen map[reflect.Type]bool) bool {
	if isOpaque(t) {
		return false
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Interface, reflect.UnsafePointer:
		return false
	case reflect.Slice, reflect.Array:
		return refFree(t.Elem(), seen)
	case reflect.Struct:
		if seen == nil {
			seen = map[reflect.Type]bool{}
		}
		if seen[t] {
			return false
		}
		seen[t] = true
		for _, f := range planOf(t).fields {
			if !refFree(t.Field(f.Index).Type, seen) {
				return false
			}
		}
	}
	return true
}

// hashFnLazy is used for element types while compiling (compileMu held).
func hashFnLazy(t reflect.Type) hashFunc { return hashFnLocked(t) }

// sortingOut is how many maps out from the innermost of those whose keys
// are being sorted (keySorts) m is, or 0.
func (h *hasher) sortingOut(m reflect.Value) int {
	if len(h.keySorts) == 0 || m.IsNil() {
		return 0
	}
	p := m.Pointer()
	for i := len(h.keySorts) - 1; i >= 0; i-- {
		if h.keySorts[i] == p {
			return len(h.keySorts) - i
		}
	}
	return 0
}

// sortedEntries collects a map's entries in canonical key order into the
// scratch slice of the current nesting level (released by the caller's
// h.depth--).
func (h *hasher) sortedEntries(m reflect.Value) (es []MapEntry, tied []bool) {
	// Levels are counted with refMapHash's, which keeps its own scratch:
	// a level may be new to this list though not the first new one.
	for h.depth >= len(h.scratch) {
		h.scratch = append(h.scratch, nil)
	}
	es = h.scratch[h.depth][:0]
	// Keys and values are set from the iterator into one slice of each,
	// kept per nesting level and type for the next map like it, rather
	// than copied one by one by Key()/Value() (two allocations per entry).
	keys, vals := h.sortSlices(m.Type(), m.Len())
	var it reflect.MapIter
	it.Reset(readable(m))
	for i := 0; it.Next(); i++ {
		k, v := keys.Index(i), vals.Index(i)
		k.SetIterKey(&it)
		v.SetIterValue(&it)
		es = append(es, MapEntry{k, v})
	}
	it.Reset(reflect.Value{})
	h.scratch[h.depth] = es
	h.depth++
	tied = sortEntriesTied(m.Type().Key().Kind(), es, h.inContext, append(slices.Clip(h.keySorts), m.Pointer()))
	return es, tied
}

// inContext orders two entries whose keys and values hash alike alone
// (two pointers to equal values, say) by how they hash here, after the
// references visited so far. Which comes first decides which is numbered
// first and which is a back-reference: when one of them was visited
// before the map (a field pointing at one of two equal peers that key
// it), the iterator's random order gave one state two hashes.
func (h *hasher) inContext(a, b MapEntry) int {
	return cmp.Compare(h.entryInContext(a), h.entryInContext(b))
}

func (h *hasher) entryInContext(e MapEntry) uint64 {
	sub := newHasher()
	sub.refs, sub.manyRefs, sub.nrefs = append(sub.refs, h.refs...), h.manyRefs, h.nrefs
	if h.manyRefs {
		sub.seen = maps.Clone(h.seen)
	}
	sub.value(e.Key, 0)
	sub.value(e.Value, 0)
	return sub.sum()
}

// sortSlices returns slices of at least n keys and n values of map type t
// for the current nesting level (one map is sorted per level at a time),
// reusing those of the last map of that type and level when they are long
// enough. reset zeroes them, so that they hold nothing of a state between
// hashes.
func (h *hasher) sortSlices(t reflect.Type, n int) (keys, vals reflect.Value) {
	kv := h.sorting.slices(h.depth, t, n)
	// Whole, not resliced (Slice allocates a header each time); reset
	// zeroes the n entries used, not the whole length, which the
	// largest map of the type set: small maps after a big one would
	// pay for it at every hash.
	h.sorted = append(h.sorted, usedSlice{kv[0], n}, usedSlice{kv[1], n})
	return kv[0], kv[1]
}

// entrySlices holds, per nesting level and map type, a slice of keys and
// one of values that the entries of the last map of that type at that
// level were set into: a state holds many maps of one type, and copying
// each entry out of its map allocated twice per entry.
type entrySlices []map[reflect.Type][2]reflect.Value

// slices returns the key and value slices of map type t at level, with
// room for n entries at least.
func (s *entrySlices) slices(level int, t reflect.Type, n int) [2]reflect.Value {
	for level >= len(*s) {
		*s = append(*s, nil)
	}
	byType := (*s)[level]
	if byType == nil {
		byType = map[reflect.Type][2]reflect.Value{}
		(*s)[level] = byType
	}
	kv, ok := byType[t]
	if !ok || kv[0].Len() < n {
		c := max(n, 4)
		kv = [2]reflect.Value{reflect.MakeSlice(reflect.SliceOf(t.Key()), c, c), reflect.MakeSlice(reflect.SliceOf(t.Elem()), c, c)}
		byType[t] = kv
	}
	return kv
}

// usedSlice is a scratch slice and how many of its entries a hash set.
type usedSlice struct {
	v reflect.Value
	n int
}

// keyOrder is the natural order of map keys of a kind (strings, numbers,
// booleans), or nil for kinds ordered by their canonical hash.
func keyOrder(k reflect.Kind) func(a, b reflect.Value) int {
	switch k {
	case reflect.String:
		return func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(a, b reflect.Value) int { return cmp.Compare(a.Int(), b.Int()) }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(a, b reflect.Value) int { return cmp.Compare(a.Uint(), b.Uint()) }
	case reflect.Float32, reflect.Float64:
		return func(a, b reflect.Value) int { return cmp.Compare(a.Float(), b.Float()) }
	case reflect.Bool:
		return func(a, b reflect.Value) int {
			if a.Bool() == b.Bool() {
				return 0
			} else if b.Bool() {
				return -1
			}
			return 1
		}
	}
	return nil
}

// SortedKeys returns a map's keys in canonical order: natural order for
// strings, numbers and booleans, and the order of their canonical hashes
// for everything else.
func SortedKeys(m reflect.Value) []reflect.Value {
	es := SortedEntries(m)
	keys := make([]reflect.Value, len(es))
	for i, e := range es {
		keys[i] = e.Key
	}
	return keys
}

// SortedEntries is SortedKeys with each key's value beside it, taken
// from the map's iterator: m.MapIndex(key) finds nothing for a key that
// is not equal to itself (a NaN, or a struct or array holding one), so
// a map with NaN keys read through its keys lost every such value.
func SortedEntries(m reflect.Value) []MapEntry {
	es, _ := entriesSorted(m, nil)
	return es
}

// entriesSorted is SortedEntries ordering the entries whose keys and
// values hash alike by tie, when not nil, and saying which are tied
// still (sortEntriesTied).
func entriesSorted(m reflect.Value, tie func(a, b MapEntry) int) (es []MapEntry, tied []bool) {
	es = make([]MapEntry, 0, m.Len())
	for it := m.MapRange(); it.Next(); {
		es = append(es, MapEntry{it.Key(), it.Value()})
	}
	return es, sortEntriesTied(m.Type().Key().Kind(), es, tie, []uintptr{m.Pointer()})
}

// sortEntries puts a map's entries in canonical order, in place: by key
// where keys of the kind have a natural order, else by the keys' hashes;
// entries the keys cannot tell apart by their values' hashes.
func sortEntries(kind reflect.Kind, es []MapEntry) { sortEntriesTied(kind, es, nil, nil) }

// sortEntriesTied is sortEntries that orders entries whose keys and
// values hash alike by tie, when not nil. It returns, when some entries
// compare equal still, which do: tied[i] says that es[i] and es[i+1] do
// (nil: none).
//
// within are the maps whose keys are being sorted, this one last: a key
// that reaches one of them is hashed with it as a mark, not walked into
// (whose sort would hash the key again, for ever).
func sortEntriesTied(kind reflect.Kind, es []MapEntry, tie func(a, b MapEntry) int, within []uintptr) (tied []bool) {
	if len(es) < 2 {
		return nil
	}
	// A key or value hashed alone, to order the entries.
	alone := func(v reflect.Value) uint64 {
		sub := newHasher()
		sub.keySorts = within
		sub.value(v, 0)
		return sub.sum()
	}
	if order := keyOrder(kind); order != nil {
		compare := func(a, b MapEntry) int {
			if c := order(a.Key, b.Key); c != 0 {
				return c
			}
			if c := cmp.Compare(alone(a.Value), alone(b.Value)); c != 0 || tie == nil {
				return c
			}
			return tie(a, b)
		}
		slices.SortFunc(es, compare)
		for i := range len(es) - 1 {
			if compare(es[i], es[i+1]) == 0 {
				if tied == nil {
					tied = make([]bool, len(es)-1)
				}
				tied[i] = true
			}
		}
		return tied
	}
	type keyed struct {
		h uint64
		e MapEntry
	}
	ks := make([]keyed, len(es))
	for i, e := range es {
		ks[i] = keyed{alone(e.Key), e}
	}
	compare := func(a, b keyed) int {
		if c := cmp.Compare(a.h, b.h); c != 0 {
			return c
		}
		if c := cmp.Compare(alone(a.e.Value), alone(b.e.Value)); c != 0 || tie == nil {
			return c
		}
		return tie(a.e, b.e)
	}
	slices.SortFunc(ks, compare)
	for i := range ks {
		es[i] = ks[i].e
		if i > 0 && compare(ks[i-1], ks[i]) == 0 {
			if tied == nil {
				tied = make([]bool, len(es)-1)
			}
			tied[i-1] = true
		}
	}
	return tied
}

// HashValue is Hash for a reflect.Value (which may have been reached
// through unexported fields).
func HashValue(v reflect.Value) uint64 {
	h := hasherPool.Get().(*hasher)
	h.value(v, 0)
	sum := h.sum()
	h.reset()
	hasherPool.Put(h)
	return sum
}

// refFreeMapHash hashes a map whose entries hold no references through
// reflection: each entry alone, their hashes summed.
func refFreeMapHash(t reflect.Type, key, val hashFunc) hashFunc {
	return func(h *hasher, v reflect.Value, depth int) {
		if h.reference(v, t, depth) {
			return
		}
		h.u64('m', uint64(v.Len()))
		v = readable(v)
		sub := h.entryHasher()
		var sum uint64
		// Two values set from the iterator, rather than
		// Key()/Value(), which allocate a copy per entry.
		k, e := sub.entryValues(t)
		var it reflect.MapIter
		it.Reset(v)
		for it.Next() {
			k.SetIterKey(&it)
			e.SetIterValue(&it)
			key(sub, k, depth+1)
			val(sub, e, depth+1)
			sum += sub.sum()
			sub.clearEntry()
		}
		it.Reset(reflect.Value{}) // hold nothing of the map for the collector
		k.SetZero()
		e.SetZero()
		h.u64('+', sum)
	}
}

// scalarMapHash is refFreeMapHash for maps of scalars, whose entries sum
// walks without reflection (hashscalar.go): the same hash.
func scalarMapHash(t reflect.Type, sum entrySummer) hashFunc {
	return func(h *hasher, v reflect.Value, depth int) {
		if h.reference(v, t, depth) {
			return
		}
		h.u64('m', uint64(v.Len()))
		s, buf := sum(v.UnsafePointer(), h.entryBuf)
		if cap(buf) > maxEntryBuf {
			buf = nil // one long string must not stay with the pooled hasher
		}
		h.entryBuf = buf
		h.u64('+', s)
	}
}

// readable returns map m without the mark of a value reached through an
// unexported field, which MapIter's Set methods refuse (a handler with an
// unexported map field made hashing panic): hashing only reads it.
func readable(m reflect.Value) reflect.Value {
	if m.CanInterface() {
		return m
	}
	p := m.UnsafePointer()
	return reflect.NewAt(m.Type(), unsafe.Pointer(&p)).Elem()
}

// maxEntryBuf is the largest entry buffer a hasher keeps between maps.
const maxEntryBuf = 64 << 10
