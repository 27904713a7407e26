package state

import (
	"container/list"
	"reflect"
)

// A container/list.List is a ring of elements around a sentinel inside
// the List, each pointing at its neighbours and at the List. Walked as
// the Go values it is made of, a list of two contacts read as six
// pointers and a phantom element (Order.root.next.next.Value), each path
// a chain as long as the position. The flattening and the tables show it
// as the sequence it holds instead (Order[0], Order[1]), and an element
// reached elsewhere (an LRU's map[K]*list.Element) as its Value. The
// state hash is unchanged: it walks the ring, whose shape is the state.

var (
	listType     = reflect.TypeFor[list.List]()
	elementType  = reflect.TypeFor[list.Element]()
	listRoot     = fieldIndex(listType, "root")
	listLen      = fieldIndex(listType, "len")
	elementNext  = fieldIndex(elementType, "next")
	elementValue = fieldIndex(elementType, "Value")
)

func fieldIndex(t reflect.Type, name string) int {
	f, ok := t.FieldByName(name)
	if !ok {
		panic("container/list: no field " + name)
	}
	return f.Index[0]
}

// IsList reports whether t is container/list.List.
func IsList(t reflect.Type) bool { return t == listType }

// IsListElement reports whether t is container/list.Element.
func IsListElement(t reflect.Type) bool { return t == elementType }

// ListElements calls fn with each element of l (a list.List value, which
// may sit in an unexported field) front to back, as a *list.Element
// value, with its position.
func ListElements(l reflect.Value, fn func(i int, e reflect.Value)) {
	n := int(l.Field(listLen).Int())
	e := l.Field(listRoot).Field(elementNext)
	for i := 0; i < n && !e.IsNil(); i++ {
		fn(i, e)
		e = e.Elem().Field(elementNext)
	}
}

// ElementValue is the Value field of e, a list.Element value.
func ElementValue(e reflect.Value) reflect.Value { return e.Field(elementValue) }
