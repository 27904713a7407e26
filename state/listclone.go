package state

import (
	"reflect"
	"sync"
	"unsafe"
)

// A list.List's elements point at the List and its last one at the
// sentinel inside it. Clone copies a struct held by value in another
// into a temporary before putting it in place, so in a copied List held
// by value those pointers reached the temporary: the copy's Remove and
// MoveToFront did nothing (an element "of another list") and its ring
// ended in a stale sentinel. relinkLists mends every list of a copy once
// it is in place; sharesInterior does not count these pointers as
// references into other objects (they are the list's own), so a state
// holding lists is Copyable and forks copy it rather than replaying
// from #0.

var (
	elementPrev = fieldIndex(elementType, "prev")
	elementList = fieldIndex(elementType, "list")
)

// isListSentinel reports whether e (a list.Element value) is the
// sentinel inside a List: not in a list, yet linked (a removed element
// has next nil).
func isListSentinel(e reflect.Value) bool {
	return e.Field(elementList).IsNil() && !e.Field(elementNext).IsNil()
}

// mayHoldList caches, per type, whether a value of it can hold a List.
var mayHoldList sync.Map // reflect.Type -> bool

// typeMayHoldList reports whether a value of t can hold a List: an
// interface may hold anything.
func typeMayHoldList(t reflect.Type) bool {
	return typeReaches(&mayHoldList, t, isOpaque, func(t reflect.Type) bool { return t == listType || t.Kind() == reflect.Interface })
}

// relinkLists points every element of every list.List v reaches at its
// List and the ends of its ring at the List's sentinel. v is addressable
// (the copy in place).
func relinkLists(v reflect.Value) {
	// Map entries and what an interface holds by value are not
	// addressable: only what they point to can be mended (Copyable
	// refuses a List held so).
	walkReached(v, typeMayHoldList, func(v reflect.Value, push func(reflect.Value)) (descend, stop bool) {
		switch v.Type() {
		case listType:
			if v.CanAddr() {
				relinkList(v)
			}
			ListElements(v, func(_ int, e reflect.Value) { push(e.Elem().Field(elementValue)) })
			return false, false
		case elementType:
			push(v.Field(elementValue))
			return false, false
		}
		return true, false
	})
}

// wellFormedList reports whether l (an addressable List) is a ring its
// own operations keep: len elements from its sentinel, each pointing at
// l and back at the one before, the last back at the sentinel. A List
// copied by value (assigned, or moved by an append that grew its slice)
// is not: its elements point at the List it was copied from.
func wellFormedList(l reflect.Value) bool {
	n := int(l.Field(listLen).Int())
	root := l.Field(listRoot)
	rootAt, listAt := root.UnsafeAddr(), l.UnsafeAddr()
	next, prev := root.Field(elementNext), root.Field(elementPrev)
	if n == 0 {
		return next.IsNil() && prev.IsNil() || next.Pointer() == rootAt && prev.Pointer() == rootAt
	}
	back := rootAt
	e := next
	for range n {
		if e.IsNil() || e.Pointer() == rootAt {
			return false
		}
		el := e.Elem()
		if el.Field(elementList).Pointer() != listAt || el.Field(elementPrev).Pointer() != back {
			return false
		}
		back = e.Pointer()
		e = el.Field(elementNext)
	}
	return e.Pointer() == rootAt && prev.Pointer() == back
}

// relinkList mends one list in place (l addressable): a copy of a
// well-formed list; a ring shorter than its length is left as it is.
func relinkList(l reflect.Value) {
	n := int(l.Field(listLen).Int())
	for i, e := 0, l.Field(listRoot).Field(elementNext); i < n; i, e = i+1, e.Elem().Field(elementNext) {
		if e.IsNil() {
			return
		}
	}
	root := l.Field(listRoot)
	// Pointers made afresh: values read through unexported fields cannot
	// be stored.
	rootPtr := reflect.NewAt(elementType, unsafe.Pointer(root.UnsafeAddr()))
	if n == 0 {
		if !root.Field(elementNext).IsNil() { // used, and emptied
			set(root.Field(elementNext), rootPtr)
			set(root.Field(elementPrev), rootPtr)
		}
		return
	}
	listPtr := reflect.NewAt(listType, unsafe.Pointer(l.UnsafeAddr()))
	e := root.Field(elementNext)
	set(e.Elem().Field(elementPrev), rootPtr)
	for i := range n {
		el := e.Elem()
		set(el.Field(elementList), listPtr)
		if i == n-1 {
			set(el.Field(elementNext), rootPtr)
			set(root.Field(elementPrev), reflect.NewAt(elementType, e.UnsafePointer()))
			break
		}
		e = el.Field(elementNext)
	}
}

// set writes v into field f, unexported as the list's fields are.
func set(f, v reflect.Value) {
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(v)
}
