package state

import (
	"cmp"
	"reflect"
	"slices"
	"sync"
)

// Clone keeps two references to one object together when they are the
// same reference: one pointer (address and type) or one slice (array,
// length and type) reached twice. It does not know references into an
// object reached otherwise: a pointer to a struct's field or a slice's
// element, a slice of part of another's array. It copies those apart,
// and the copy behaves otherwise than the original: a node whose role
// (an interface) points at one of its own fields, or whose pending
// entries are a slice of its log, updated one and read the other after
// a checkpoint was restored, and replay diverged from the recording.

// region is memory a reference reaches: [start, end).
type region struct{ start, end uintptr }

// cloneKey is what Clone knows a reference by: address, length (for a
// slice) and type.
type cloneKey struct {
	p uintptr
	n int
	t reflect.Type
}

// sharesInterior reports whether v's state holds references that overlap
// but that Clone would copy apart (see above).
func sharesInterior(v reflect.Value) bool {
	var regions []region
	seen := map[cloneKey]bool{}
	visit := func(k cloneKey, size uintptr) bool {
		if seen[k] {
			return false
		}
		seen[k] = true
		if size > 0 {
			regions = append(regions, region{k.p, k.p + size})
		}
		return true
	}
	stack := []reflect.Value{v}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !v.IsValid() || !typeMayShare(v.Type()) {
			continue
		}
		switch v.Kind() {
		case reflect.Pointer:
			if v.Type().Elem() == elementType && !v.IsNil() && isListSentinel(v.Elem()) {
				continue // a list's own link to its sentinel (listclone.go)
			}
			if !v.IsNil() && visit(cloneKey{v.Pointer(), 0, v.Type()}, v.Type().Elem().Size()) {
				stack = append(stack, v.Elem())
			}
		case reflect.Slice:
			if v.IsNil() || !visit(cloneKey{v.Pointer(), v.Len(), v.Type()}, uintptr(v.Cap())*v.Type().Elem().Size()) {
				continue
			}
			if typeMayShare(v.Type().Elem()) {
				for i := range v.Len() {
					stack = append(stack, v.Index(i))
				}
			}
		case reflect.Map:
			// Entries are not addressable: only what they hold counts.
			if v.IsNil() || !visit(cloneKey{v.Pointer(), 0, v.Type()}, 0) {
				continue
			}
			keys, elems := typeMayShare(v.Type().Key()), typeMayShare(v.Type().Elem())
			if !keys && !elems {
				continue
			}
			for it := v.MapRange(); it.Next(); {
				if keys {
					stack = append(stack, it.Key())
				}
				if elems {
					stack = append(stack, it.Value())
				}
			}
		case reflect.Interface:
			if !v.IsNil() {
				stack = append(stack, v.Elem())
			}
		case reflect.Struct:
			if v.Type() == listType && (!v.CanAddr() || !wellFormedList(v)) {
				// Held by value in a map or an interface, a copy's list
				// cannot be mended; a List copied by value (moved by an
				// append) has elements of another List, which the
				// original's operations treat as foreign and a mended
				// copy's would not (listclone.go).
				return true
			}
			for i := range v.NumField() {
				if v.Type() == elementType && i == elementList {
					continue // an element's link to its List (listclone.go)
				}
				stack = append(stack, v.Field(i))
			}
		case reflect.Array:
			for i := range v.Len() {
				stack = append(stack, v.Index(i))
			}
		}
	}
	slices.SortFunc(regions, func(a, b region) int { return cmp.Compare(a.start, b.start) })
	var end uintptr
	for i, r := range regions {
		if i > 0 && r.start < end {
			return true
		}
		end = max(end, r.end)
	}
	return false
}

// mayShare caches typeMayShare per type.
var mayShare sync.Map // reflect.Type -> bool

// typeMayShare reports whether a value of t can hold a pointer, slice,
// map or interface that Clone copies: what can reach memory that another
// reference reaches too. Opaque types are shared by clones, not copied;
// a time.Time's location is never a handler's own memory.
func typeMayShare(t reflect.Type) bool {
	return typeReaches(&mayShare, t, func(t reflect.Type) bool { return isOpaque(t) || t == timeType }, func(t reflect.Type) bool {
		k := t.Kind()
		return k == reflect.Pointer || k == reflect.Slice || k == reflect.Map || k == reflect.Interface
	})
}
