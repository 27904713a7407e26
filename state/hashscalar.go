package state

import (
	"encoding/binary"
	"math"
	"reflect"
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

// scalarOf returns how values of type t are laid out and encoded, or
// layoutNone when t is not a scalar this fast path handles.
func scalarOf(t reflect.Type) (scalarLayout, scalarCode) {
	if isOpaque(t) {
		return layoutNone, codeNone
	}
	switch k := t.Kind(); {
	case k == reflect.String:
		return layoutString, codeString
	case (k == reflect.Int || k == reflect.Int64) && t.Size() == 8:
		return layout8, codeInt64
	case k == reflect.Int32:
		return layout4, codeInt32
	case (k == reflect.Uint || k == reflect.Uint64) && t.Size() == 8:
		return layout8, codeUint64
	case k == reflect.Uint32:
		return layout4, codeUint32
	case k == reflect.Float64:
		return layout8, codeFloat64
	case k == reflect.Float32:
		return layout4, codeFloat32
	case k == reflect.Bool:
		return layout1, codeBool
	}
	return layoutNone, codeNone
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
