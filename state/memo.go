package state

import (
	"bytes"
	"encoding/binary"
	"math"
	"reflect"
	"strconv"
	"sync"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// A Memo is what a flattening remembers of the long slices of a state
// (a replicated log, a history of requests): for each element, a hash of
// what its leaves show and where its leaves are. Flattening the state
// after its next step with the memo of the one before copies the leaves
// of every element whose hash did not change instead of walking it, so
// a step that appends one entry to a long log costs a hash per entry,
// not the formatting of every leaf (Flattener.AppendMemo).
//
// Only slices of at least memoMin elements whose element type holds no
// references (pointers, maps, interfaces, functions, channels) are
// remembered: a reference may be shared with another part of the state,
// which changes what a walk shows ("(same as PATH)").
type Memo struct {
	slices map[string]*sliceMemo // by the slice's path
	maps   map[string]*mapMemo   // by the map's path
}

// mapMemo is a map of scalar keys and values (a key-value store): the
// sum of its entries' hashes, as a state hash sums them, and where its
// leaves are. A map whose length and sum did not change shows what it
// showed: its leaves are copied instead of sorting and formatting every
// entry again.
type mapMemo struct {
	typ   reflect.Type
	len   int
	sum   uint64
	at, n int // its leaves; at < 0: none recorded
	used  bool
}

type sliceMemo struct {
	elem  reflect.Type
	elems []elemMemo
	used  bool // filled by the flattening that wrote the memo
	// copy is a copy of the slice as flattened, for element types whose
	// shown parts are all in the element's own memory (plainMemory): an
	// element whose memory equals its copy's shows what it showed, which
	// comparing memory tells far sooner than hashing what it shows. The
	// next flattening takes it over (it is invalid here then).
	copy reflect.Value
}

// elemMemo is one element: the hash of what its leaves show, and its
// leaves, [at, at+n) of the flattening's leaves.
type elemMemo struct {
	hash  uint64
	at, n int
}

// memoMin is the shortest slice a memo remembers: a shorter one costs
// less to walk than to hash and look up.
const memoMin = 32

// reset empties the memo for a new flattening, keeping its storage.
func (m *Memo) reset() {
	if m.slices == nil {
		m.slices = map[string]*sliceMemo{}
	}
	if m.maps == nil {
		m.maps = map[string]*mapMemo{}
	}
	for _, s := range m.slices {
		s.elems, s.used = s.elems[:0], false
	}
	for _, mm := range m.maps {
		mm.used = false
	}
}

// drop forgets the slices the last flattening did not remember.
func (m *Memo) drop() {
	for k, s := range m.slices {
		if !s.used {
			delete(m.slices, k)
		}
	}
	for k, mm := range m.maps {
		if !mm.used {
			delete(m.maps, k)
		}
	}
}

// memoMap returns the memo to fill for map v at the current path, with
// its entries summed, and the one of the previous flattening (nil if
// none), or nil, nil when v is not remembered: shorter than memoMin, or
// of keys or values other than scalars.
func (f *Flattener) memoMap(v reflect.Value) (out, in *mapMemo) {
	if f.memoOut == nil || v.Len() < memoMin {
		return nil, nil
	}
	summer := mapSummer(v.Type())
	if summer == nil {
		return nil, nil
	}
	key := string(f.path)
	out = f.memoOut.maps[key]
	if out == nil {
		out = &mapMemo{}
		f.memoOut.maps[key] = out
	} else if out.used {
		return nil, nil // a second map at one path (keys that print alike)
	}
	sum, buf := summer(v.UnsafePointer(), f.hbuf)
	if cap(buf) > maxEntryBuf {
		buf = nil // one long string must not stay with the flattener
	}
	f.hbuf = buf
	*out = mapMemo{typ: v.Type(), len: v.Len(), sum: sum, at: -1, used: true}
	if f.memoIn != nil {
		if p := f.memoIn.maps[key]; p != nil && p.used && p.typ == out.typ {
			in = p
		}
	}
	return out, in
}

// copyMap copies the leaves of a remembered map from the flattening
// before when its entries are the same (length and sum), and reports
// whether it did.
func (f *Flattener) copyMap(out, in *mapMemo) bool {
	if in == nil || in.len != out.len || in.sum != out.sum || in.at < 0 || in.at+in.n > len(f.prev) {
		return false
	}
	start := len(f.out)
	f.out = append(f.out, f.prev[in.at:in.at+in.n]...)
	for k := in.at; k < in.at+in.n; k++ {
		f.matched = append(f.matched, k)
	}
	f.next, f.misses = max(f.next, in.at+in.n), 0
	out.at, out.n = start-f.base, in.n
	f.copiedMaps++
	return true
}

// mapSummer is scalarMapSummer of map type t, made once per type.
func mapSummer(t reflect.Type) entrySummer {
	if s, ok := mapSummers.Load(t); ok {
		return s.(entrySummer)
	}
	s := scalarMapSummer(t)
	mapSummers.Store(t, s)
	return s
}

var mapSummers sync.Map // reflect.Type -> entrySummer (nil: none)

// memoizable reports whether values of t hold no references: the leaves
// of such a value depend on the value alone (and on the path it is at).
func memoizable(t reflect.Type) bool {
	if ok, found := memoizableTypes.Load(t); found {
		return ok.(bool)
	}
	ok := memoizableUncached(t, map[reflect.Type]bool{})
	memoizableTypes.Store(t, ok)
	return ok
}

var memoizableTypes sync.Map // reflect.Type -> bool

func memoizableUncached(t reflect.Type, visiting map[reflect.Type]bool) bool {
	if visiting[t] {
		return false // a type that contains itself without a reference cannot exist; be safe
	}
	visiting[t] = true
	defer delete(visiting, t)
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return true
	case reflect.Slice, reflect.Array:
		return memoizableUncached(t.Elem(), visiting)
	case reflect.Struct:
		if t == timeType {
			return true
		}
		if isOpaque(t) {
			return false
		}
		for _, f := range Fields(t) {
			if !memoizableUncached(t.Field(f.Index).Type, visiting) {
				return false
			}
		}
		return true
	}
	return false
}

// plainMemory reports whether what values of t show is all in their own
// memory: scalars, strings (immutable: equal headers are equal text, and
// a copy keeps the text alive), and arrays and structs of them. Equal
// memory then shows equal leaves. Slices are not: their elements may
// change under an equal header. Unshown fields may hold anything; they
// only make memory differ where leaves do not.
func plainMemory(t reflect.Type) bool {
	if ok, found := plainMemoryTypes.Load(t); found {
		return ok.(bool)
	}
	ok := memoizable(t) && plainMemoryUncached(t)
	plainMemoryTypes.Store(t, ok)
	return ok
}

var plainMemoryTypes sync.Map // reflect.Type -> bool

// plainMemoryUncached is plainMemory of a memoizable type.
func plainMemoryUncached(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice:
		return false
	case reflect.Array:
		return plainMemoryUncached(t.Elem())
	case reflect.Struct:
		if t == timeType {
			return true
		}
		for _, f := range Fields(t) {
			if !plainMemoryUncached(t.Field(f.Index).Type) {
				return false
			}
		}
	}
	return true
}

// appendShown appends to b an encoding of what the leaves of v (of a
// memoizable type) show: values, lengths, and of a byte slice only the
// bytes a leaf shows (and its length).
func appendShown(b []byte, v reflect.Value) []byte {
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1)
		}
		return append(b, 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.LittleEndian.AppendUint64(b, uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return binary.LittleEndian.AppendUint64(b, v.Uint())
	case reflect.Float32, reflect.Float64:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Float()))
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(real(c)))
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(imag(c)))
	case reflect.String:
		s := v.String()
		b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
		return append(b, s...)
	case reflect.Slice, reflect.Array:
		n := v.Len()
		nilSlice := uint64(0)
		if v.Kind() == reflect.Slice && v.IsNil() {
			nilSlice = 1 // shown as nil, not []
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(n)<<1|nilSlice)
		if v.Type().Elem().Kind() == reflect.Uint8 {
			for i := range min(n, hexShown) {
				b = append(b, byte(v.Index(i).Uint()))
			}
			return b
		}
		for i := range n {
			b = appendShown(b, v.Index(i))
		}
		return b
	case reflect.Struct:
		if v.Type() == timeType {
			sec, nsec := timeInstant(v)
			b = binary.LittleEndian.AppendUint64(b, uint64(sec))
			return binary.LittleEndian.AppendUint64(b, uint64(nsec))
		}
		for _, f := range Fields(v.Type()) {
			b = appendShown(b, v.Field(f.Index))
		}
		return b
	}
	return b
}

// AppendMemo is Append using and filling memos: prevMemo is what the
// flattening of prev remembered (nil: nothing), and memo, emptied here,
// remembers this flattening for the next (it may be prevMemo's storage
// only if prevMemo is not used again). The leaves are those Append gives.
func (f *Flattener) AppendMemo(dst []Leaf, v any, prev []Leaf, prevMemo, memo *Memo) []Leaf {
	memo.reset()
	f.memoIn, f.memoOut, f.base = prevMemo, memo, len(dst)
	out := f.Append(dst, v, prev)
	memo.drop()
	f.memoIn, f.memoOut = nil, nil
	return out
}

// memoSlice returns the memo to fill for the slice or array v at the
// current path and the one of the previous flattening (nil if none), or
// nil, nil when v is not remembered.
func (f *Flattener) memoSlice(v reflect.Value) (out, in *sliceMemo) {
	if f.memoOut == nil || v.Len() < memoMin || !memoizable(v.Type().Elem()) {
		return nil, nil
	}
	key := string(f.path)
	out = f.memoOut.slices[key]
	if out == nil {
		out = &sliceMemo{}
		f.memoOut.slices[key] = out
	} else if out.used {
		return nil, nil // a second slice at one path (keys that print alike)
	}
	out.elem, out.used = v.Type().Elem(), true
	out.copy = reflect.Value{} // only a walk of a slice like this one sets it
	if f.memoIn != nil {
		if p := f.memoIn.slices[key]; p != nil && p.used && p.elem == out.elem {
			in = p
		}
	}
	return out, in
}

// walkRemembered walks a remembered slice or array element by element
// (walkElem), except that a run of elements whose memory equals the
// previous flattening's copy of them has its leaves copied in one go:
// after a step that appended to a long log, comparing the log's memory
// is all it costs.
func (f *Flattener) walkRemembered(v reflect.Value, depth int, out, in *sliceMemo) {
	n, size := len(f.path), v.Len()
	plain := v.Kind() == reflect.Slice && plainMemory(out.elem)
	var was reflect.Value // the copy of the slice flattened before, taken over
	if plain && in != nil && in.copy.IsValid() && in.copy.Type() == v.Type() {
		was, in.copy = in.copy, reflect.Value{}
	}
	if plain {
		v = exportedSlice(v) // readable even from an unexported field, to copy
	}
	for i := 0; i < size; {
		if was.IsValid() {
			if j := f.copyEqualRun(v, was, i, in, out); j > i {
				i = j
				continue
			}
		}
		f.path = append(strconv.AppendInt(append(f.path, '['), int64(i), 10), ']')
		f.walkElem(v.Index(i), i, depth, out, in)
		f.path = f.path[:n]
		if was.IsValid() && i < was.Len() {
			reflect.Copy(was.Slice(i, i+1), v.Slice(i, i+1))
		}
		i++
	}
	if !plain {
		return
	}
	switch {
	case !was.IsValid():
		was = reflect.MakeSlice(v.Type(), size, size)
		reflect.Copy(was, v)
	case size > was.Len():
		was = reflect.AppendSlice(was, v.Slice(was.Len(), size))
	default:
		for k := size; k < was.Len(); k++ {
			was.Index(k).SetZero() // hold nothing the state let go of
		}
		was = was.Slice(0, size)
	}
	out.copy = was
}

// copyEqualRun copies the leaves of the elements of v from i on whose
// memory equals their copy in was (the slice as flattened before, with
// its memo in) and returns the index of the first element it did not
// copy.
func (f *Flattener) copyEqualRun(v, was reflect.Value, i int, in, out *sliceMemo) int {
	end := min(v.Len(), was.Len(), len(in.elems))
	if i >= end {
		return i
	}
	size := int(v.Type().Elem().Size())
	at := func(s reflect.Value, k, n int) []byte {
		return unsafe.Slice((*byte)(unsafe.Add(s.UnsafePointer(), k*size)), n*size)
	}
	// The run's end: blocks at a time while they are equal, then
	// element by element.
	j := i
	for j+equalBlock <= end && bytes.Equal(at(v, j, equalBlock), at(was, j, equalBlock)) {
		j += equalBlock
	}
	for j < end && bytes.Equal(at(v, j, 1), at(was, j, 1)) {
		j++
	}
	// The run's leaves in the flattening before: one stretch of it,
	// as long as each element's leaves follow the one before's.
	first := in.elems[i]
	if first.at < 0 {
		return i
	}
	stop := i
	for k := i; k < j; k++ {
		e := in.elems[k]
		if k > i && e.at != in.elems[k-1].at+in.elems[k-1].n || e.at+e.n > len(f.prev) {
			break
		}
		stop = k + 1
	}
	if stop == i {
		return i
	}
	last := in.elems[stop-1]
	from, to := first.at, last.at+last.n
	start := len(f.out) - f.base
	f.out = append(f.out, f.prev[from:to]...)
	for k := from; k < to; k++ {
		f.matched = append(f.matched, k)
	}
	for k := i; k < stop; k++ {
		e := in.elems[k]
		out.elems = append(out.elems, elemMemo{hash: e.hash, at: start + e.at - from, n: e.n})
	}
	f.next, f.misses = max(f.next, to), 0
	f.copied += stop - i
	f.copiedPlain += stop - i
	return stop
}

// equalBlock is how many elements a run compares at once.
const equalBlock = 64

// exportedSlice is slice v readable whatever field it was reached
// through (reflect.Copy refuses a value of an unexported field).
func exportedSlice(v reflect.Value) reflect.Value {
	if v.CanInterface() {
		return v
	}
	h := struct {
		data     unsafe.Pointer
		len, cap int
	}{v.UnsafePointer(), v.Len(), v.Cap()}
	return reflect.NewAt(v.Type(), unsafe.Pointer(&h)).Elem()
}

// walkElem walks element i of a remembered slice, or copies its leaves
// from prev when the memo of prev says they show the same.
func (f *Flattener) walkElem(e reflect.Value, i, depth int, out, in *sliceMemo) {
	f.hbuf = appendShown(f.hbuf[:0], e)
	h := xxhash.Sum64(f.hbuf)
	start := len(f.out)
	if in != nil && i < len(in.elems) && in.elems[i].hash == h {
		p := in.elems[i]
		if p.at >= 0 && p.at+p.n <= len(f.prev) {
			f.out = append(f.out, f.prev[p.at:p.at+p.n]...)
			for j := p.at; j < p.at+p.n; j++ {
				f.matched = append(f.matched, j)
			}
			f.next, f.misses = max(f.next, p.at+p.n), 0
			f.copied++
			out.elems = append(out.elems, elemMemo{hash: h, at: start - f.base, n: p.n})
			return
		}
	}
	f.walk(e, depth)
	out.elems = append(out.elems, elemMemo{hash: h, at: start - f.base, n: len(f.out) - start})
}
