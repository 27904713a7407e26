package node

import (
	"fmt"
	"reflect"
)

// A message that refers to itself (a node of a linked structure pointing
// back) sends the encoder into endless recursion, which Go cannot
// recover from: the process died with a gigabyte of stack and no trace.
// Types that can hold such a loop (a pointer, map, slice or interface on
// a path back to themselves, or an interface, which may hold anything)
// are walked before encoding, to a depth no real message reaches.

// maxMessageDepth bounds how deeply a message's values may nest.
const maxMessageDepth = 10_000

// mayLoop reports whether values of t can refer back to themselves.
func mayLoop(t reflect.Type) bool { return loops(t, map[reflect.Type]bool{}) }

func loops(t reflect.Type, open map[reflect.Type]bool) bool {
	if open[t] {
		return true
	}
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map, reflect.Struct:
	default:
		return false
	}
	open[t] = true
	defer delete(open, t)
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return loops(t.Elem(), open)
	case reflect.Map:
		return loops(t.Key(), open) || loops(t.Elem(), open)
	}
	for i := range t.NumField() {
		// Unexported fields are not encoded.
		if f := t.Field(i); f.IsExported() && loops(f.Type, open) {
			return true
		}
	}
	return false
}

// checkDepth fails on a value nested deeper than maxMessageDepth, which
// a loop is.
func checkDepth(v reflect.Value, depth int) error {
	if depth > maxMessageDepth {
		return fmt.Errorf("it nests deeper than %d levels: does it refer to itself (a pointer back to a value it holds)?", maxMessageDepth)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return checkDepth(v.Elem(), depth+1)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := checkDepth(v.Index(i), depth+1); err != nil {
				return err
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if err := checkDepth(it.Key(), depth+1); err != nil {
				return err
			}
			if err := checkDepth(it.Value(), depth+1); err != nil {
				return err
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			if err := checkDepth(v.Field(i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
