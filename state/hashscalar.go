package state

import (
	"cmp"
	"encoding/binary"
	"math"
	"reflect"
	"slices"
	"strings"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// Maps whose keys and values are both scalars (strings, booleans, integers
// and floats of 4 or 8 bytes) are the commonest maps in node state: tallies
// per round, votes per node, a key-value store. Hashing one through
// reflection cost about 200 ns per entry (paxos replay spent over half its
// time there). These functions walk such a map as the plain Go map of the
// same memory layout and encode each entry as the reflective walk would:
// the same bytes, so the same hash, as traces already hold.

// scalarCode says how a scalar is read and encoded, exactly as the
// compiled hash function of its kind writes it.
type scalarCode byte

const (
	codeNone scalarCode = iota
	codeString
	codeInt64
	codeInt32
	codeUint64
	codeUint32
	codeFloat64
	codeFloat32
	codeBool
	codeInt16
	codeInt8
	codeUint16
	codeUint8
)

// appendScalarAt appends the canonical encoding of the scalar at p. A plain
// function, not one value per kind: p then does not escape, so walking a
// map allocates nothing.
func appendScalarAt(b []byte, c scalarCode, p unsafe.Pointer) []byte {
	switch c {
	case codeString:
		s := *(*string)(p)
		b = binary.LittleEndian.AppendUint64(append(b, 's'), uint64(len(s)))
		return append(b, s...)
	case codeInt64:
		return binary.LittleEndian.AppendUint64(append(b, 'i'), *(*uint64)(p))
	case codeInt32:
		return binary.LittleEndian.AppendUint64(append(b, 'i'), uint64(int64(*(*int32)(p))))
	case codeUint64:
		return binary.LittleEndian.AppendUint64(append(b, 'u'), *(*uint64)(p))
	case codeUint32:
		return binary.LittleEndian.AppendUint64(append(b, 'u'), uint64(*(*uint32)(p)))
	case codeFloat64:
		return binary.LittleEndian.AppendUint64(append(b, 'f'), math.Float64bits(*(*float64)(p)))
	case codeFloat32:
		return binary.LittleEndian.AppendUint64(append(b, 'f'), math.Float64bits(float64(*(*float32)(p))))
	case codeBool:
		if *(*bool)(p) {
			return append(b, 'T')
		}
		return append(b, 'F')
	case codeInt16:
		return binary.LittleEndian.AppendUint64(append(b, 'i'), uint64(int64(*(*int16)(p))))
	case codeInt8:
		return binary.LittleEndian.AppendUint64(append(b, 'i'), uint64(int64(*(*int8)(p))))
	case codeUint16:
		return binary.LittleEndian.AppendUint64(append(b, 'u'), uint64(*(*uint16)(p)))
	case codeUint8:
		return binary.LittleEndian.AppendUint64(append(b, 'u'), uint64(*(*uint8)(p)))
	}
	panic("state: unknown scalar code")
}

// scalarLayout is the plain type a scalar is read as.
type scalarLayout int

const (
	layoutNone scalarLayout = iota
	layoutString
	layout8
	layout4
	layout1
)

// scalarCodeOf returns how a value of type t is read and encoded, or
// codeNone when t is not a scalar read here.
func scalarCodeOf(t reflect.Type) scalarCode {
	if isOpaque(t) {
		return codeNone
	}
	switch k := t.Kind(); {
	case k == reflect.String:
		return codeString
	case (k == reflect.Int || k == reflect.Int64) && t.Size() == 8:
		return codeInt64
	case k == reflect.Int32:
		return codeInt32
	case k == reflect.Int16:
		return codeInt16
	case k == reflect.Int8:
		return codeInt8
	case (k == reflect.Uint || k == reflect.Uint64) && t.Size() == 8:
		return codeUint64
	case k == reflect.Uint32:
		return codeUint32
	case k == reflect.Uint16:
		return codeUint16
	case k == reflect.Uint8:
		return codeUint8
	case k == reflect.Float64:
		return codeFloat64
	case k == reflect.Float32:
		return codeFloat32
	case k == reflect.Bool:
		return codeBool
	}
	return codeNone
}

// scalarOf returns how values of type t are laid out in a map and
// encoded, or layoutNone when a map of t is not walked as a plain map.
func scalarOf(t reflect.Type) (scalarLayout, scalarCode) {
	switch c := scalarCodeOf(t); c {
	case codeString:
		return layoutString, c
	case codeInt64, codeUint64, codeFloat64:
		return layout8, c
	case codeInt32, codeUint32, codeFloat32:
		return layout4, c
	case codeBool:
		return layout1, c
	}
	return layoutNone, codeNone
}

// scalarAt hashes the scalar at p, as the compiled function of its kind
// does.
func (h *hasher) scalarAt(c scalarCode, p unsafe.Pointer) {
	if c == codeString {
		h.str('s', *(*string)(p)) // long strings go to the digest whole
		return
	}
	if len(h.buf) >= hashBuf-16 {
		h.flush()
	}
	h.buf = appendScalarAt(h.buf, c, p)
}

// structHash hashes a struct's observed fields; scalar fields of an
// addressable struct (one reached through a pointer, a slice, a map's
// copy) are read in place rather than through reflect.Value.Field.
func structHash(t reflect.Type, p *plan, fns []hashFunc) hashFunc {
	codes := make([]scalarCode, len(p.fields))
	offsets := make([]uintptr, len(p.fields))
	scalars := 0
	for i, fl := range p.fields {
		f := t.Field(fl.Index)
		codes[i], offsets[i] = scalarCodeOf(f.Type), f.Offset
		if codes[i] != codeNone {
			scalars++
		}
	}
	slow := func(h *hasher, v reflect.Value, depth int) {
		h.u64('S', p.id)
		for i, fl := range p.fields {
			fns[i](h, v.Field(fl.Index), depth+1)
		}
	}
	if scalars == 0 {
		return slow
	}
	return func(h *hasher, v reflect.Value, depth int) {
		if !v.CanAddr() {
			slow(h, v, depth)
			return
		}
		base := v.Addr().UnsafePointer()
		h.u64('S', p.id)
		for i, fl := range p.fields {
			if c := codes[i]; c != codeNone {
				h.scalarAt(c, unsafe.Add(base, offsets[i]))
			} else {
				fns[i](h, v.Field(fl.Index), depth+1)
			}
		}
	}
}

// entrySummer sums the hashes of a map's entries, each hashed alone; m is
// the map's pointer (reflect.Value.UnsafePointer).
type entrySummer func(m unsafe.Pointer, buf []byte) (uint64, []byte)

// scalarMapSummer returns the entry summer of map type t when its keys
// and values are scalars of the same layout as one of the plain types
// below (a map[node.ID]string is walked as a map[string]string: the same
// memory, and iteration does not hash keys), or nil.
//
// Floats are read as the unsigned integers of their size. A map with
// float keys is left to reflection: its iteration must compare keys as
// floats (NaN), which reading them as integers would not.
func scalarMapSummer(t reflect.Type) entrySummer {
	kl, ke := scalarOf(t.Key())
	vl, ve := scalarOf(t.Elem())
	if kl == layoutNone || vl == layoutNone {
		return nil
	}
	if k := t.Key().Kind(); k == reflect.Float32 || k == reflect.Float64 {
		return nil
	}
	switch kl {
	case layoutString:
		return summerByValue[string](vl, ke, ve)
	case layout8:
		return summerByValue[uint64](vl, ke, ve)
	case layout4:
		return summerByValue[uint32](vl, ke, ve)
	case layout1:
		return summerByValue[bool](vl, ke, ve)
	}
	return nil
}

func summerByValue[K comparable](vl scalarLayout, ke, ve scalarCode) entrySummer {
	switch vl {
	case layoutString:
		return sumEntries[K, string](ke, ve)
	case layout8:
		return sumEntries[K, uint64](ke, ve)
	case layout4:
		return sumEntries[K, uint32](ke, ve)
	case layout1:
		return sumEntries[K, bool](ke, ve)
	}
	return nil
}

// sumEntries walks the map as a map[K]V and sums xxhash64 of each entry's
// encoding: what the reflective walk's entry hasher computes (its
// streaming digest of a long entry equals the one-shot sum of its bytes).
func sumEntries[K comparable, V any](ke, ve scalarCode) entrySummer {
	return func(m unsafe.Pointer, buf []byte) (uint64, []byte) {
		mp := *(*map[K]V)(unsafe.Pointer(&m))
		var sum uint64
		for k, v := range mp {
			buf = appendScalarAt(appendScalarAt(buf[:0], ke, unsafe.Pointer(&k)), ve, unsafe.Pointer(&v))
			sum += xxhash.Sum64(buf)
		}
		return sum, buf
	}
}

// keyedRef is one entry of a map whose keys are scalars and whose values
// are references (maps, pointers): the key as a string or as 64 bits, and
// the value's pointer.
type keyedRef struct {
	s string
	n uint64
	p unsafe.Pointer
}

// refMapCollector appends the entries of a map of scalar keys and
// reference values (m its pointer) to into.
type refMapCollector func(m unsafe.Pointer, into []keyedRef) []keyedRef

// refMapCollectorOf returns the collector of map type t when its keys are
// scalars other than floats (whose order has NaN) and its values a
// map or a pointer: one machine word, walked as a map[K]unsafe.Pointer.
func refMapCollectorOf(t reflect.Type) refMapCollector {
	if k := t.Elem().Kind(); k != reflect.Map && k != reflect.Pointer {
		return nil
	}
	kl, kc := scalarOf(t.Key())
	if kc == codeFloat64 || kc == codeFloat32 {
		return nil
	}
	switch kl {
	case layoutString:
		return collectRefs[string](kc)
	case layout8:
		return collectRefs[uint64](kc)
	case layout4:
		return collectRefs[uint32](kc)
	case layout1:
		return collectRefs[bool](kc)
	}
	return nil
}

func collectRefs[K comparable](c scalarCode) refMapCollector {
	return func(m unsafe.Pointer, into []keyedRef) []keyedRef {
		mp := *(*map[K]unsafe.Pointer)(unsafe.Pointer(&m))
		for k, p := range mp {
			e := keyedRef{p: p}
			e.s, e.n = scalarKey(c, unsafe.Pointer(&k))
			into = append(into, e)
		}
		return into
	}
}

// scalarKey reads a key as keyedRef holds it: strings as themselves,
// integers widened (signed ones sign-extended), booleans as 0 and 1.
func scalarKey(c scalarCode, p unsafe.Pointer) (string, uint64) {
	switch c {
	case codeString:
		return *(*string)(p), 0
	case codeInt64, codeUint64:
		return "", *(*uint64)(p)
	case codeInt32:
		return "", uint64(int64(*(*int32)(p)))
	case codeUint32:
		return "", uint64(*(*uint32)(p))
	case codeBool:
		if *(*bool)(p) {
			return "", 1
		}
		return "", 0
	}
	panic("state: unknown scalar code")
}

// keyedRefOrder is keyOrder for keyedRef: the natural order of the keys.
func keyedRefOrder(c scalarCode) func(a, b keyedRef) int {
	switch c {
	case codeString:
		return func(a, b keyedRef) int { return strings.Compare(a.s, b.s) }
	case codeInt64, codeInt32:
		return func(a, b keyedRef) int { return cmp.Compare(int64(a.n), int64(b.n)) }
	}
	return func(a, b keyedRef) int { return cmp.Compare(a.n, b.n) }
}

// refMapHash hashes a map of scalar keys and reference values as the
// reflective walk does (keys in natural order, each key then its value),
// collecting and sorting the entries without reflection.
func refMapHash(t reflect.Type, collect refMapCollector, val hashFunc) hashFunc {
	_, kc := scalarOf(t.Key())
	order := keyedRefOrder(kc)
	elem := t.Elem()
	return func(h *hasher, v reflect.Value, depth int) {
		if h.reference(v, t, depth) {
			return
		}
		h.u64('M', uint64(v.Len()))
		level := h.depth
		for level >= len(h.refScratch) { // levels are counted with sortedEntries'
			h.refScratch = append(h.refScratch, nil)
		}
		es := collect(v.UnsafePointer(), h.refScratch[level][:0])
		slices.SortFunc(es, order)
		h.depth++
		for i := range es {
			switch kc {
			case codeString:
				h.str('s', es[i].s)
			case codeBool:
				if es[i].n != 0 {
					h.tag('T')
				} else {
					h.tag('F')
				}
			case codeInt64, codeInt32:
				h.u64('i', es[i].n)
			default:
				h.u64('u', es[i].n)
			}
			val(h, reflect.NewAt(elem, unsafe.Pointer(&es[i].p)).Elem(), depth+1)
		}
		h.depth--
		clear(es) // hold nothing of the state between hashes
		h.refScratch[level] = es[:0]
	}
}
