package state

import (
	"encoding/binary"
	"math"
	"reflect"
	"sync"

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
}

type sliceMemo struct {
	elem  reflect.Type
	elems []elemMemo
	used  bool // filled by the flattening that wrote the memo
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
	for _, s := range m.slices {
		s.elems, s.used = s.elems[:0], false
	}
}

// drop forgets the slices the last flattening did not remember.
func (m *Memo) drop() {
	for k, s := range m.slices {
		if !s.used {
			delete(m.slices, k)
		}
	}
}

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
	if f.memoIn != nil {
		if p := f.memoIn.slices[key]; p != nil && p.used && p.elem == out.elem {
			in = p
		}
	}
	return out, in
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
