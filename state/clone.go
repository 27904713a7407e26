package state

import (
	"log"
	"log/slog"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	clone "github.com/huandu/go-clone"

	"github.com/replaycheck/replaycheck/node"
)

// opaque is copy-on-write: written rarely (at init), read for every
// pointer and struct a walk meets.
var (
	opaqueMu sync.Mutex
	opaque   atomic.Pointer[map[reflect.Type]bool]
)

func init() {
	// Process resources reachable from handler state (a dependency's
	// logger, say) are shared by clones, not copied: a copied *os.File
	// would close the real descriptor when collected.
	Opaque(reflect.TypeFor[*os.File](), reflect.TypeFor[*log.Logger](), reflect.TypeFor[*slog.Logger]())
}

// Opaque declares types that are not part of any node's observed state:
// clones share them, hashes and views skip them. Use it for handles to the
// outside world reachable from a handler (loggers, metrics registries).
func Opaque(types ...reflect.Type) {
	opaqueMu.Lock()
	defer opaqueMu.Unlock()
	next := map[reflect.Type]bool{}
	if cur := opaque.Load(); cur != nil {
		for t := range *cur {
			next[t] = true
		}
	}
	for _, t := range types {
		next[t] = true
		if t.Kind() == reflect.Pointer {
			clone.MarkAsOpaquePointer(t)
		} else {
			clone.MarkAsScalar(t)
		}
	}
	opaque.Store(&next)
}

// isOpaque reports whether t was declared opaque. Only pointer and struct
// types can be.
func isOpaque(t reflect.Type) bool {
	if k := t.Kind(); k != reflect.Pointer && k != reflect.Struct {
		return false
	}
	m := opaque.Load()
	return m != nil && (*m)[t]
}

// Clone returns a deep copy of v (usually a handler): unexported fields
// included, pointer cycles and aliasing preserved (two fields pointing at
// one object point at one copy), opaque types shared.
func Clone[T any](v T) T {
	c := clone.Slowly(v).(T)
	relinkLists(reflect.ValueOf(&c).Elem())
	return c
}

// Copier is the node.Copier replay uses for checkpoints: handlers are
// deep-cloned; MemStores are copied (their values are never mutated in
// place, so they are shared).
var Copier = node.Copier{
	Handler: func(h node.Handler) node.Handler { return Clone(h) },
	Store: func(s node.Store) node.Store {
		if m, ok := s.(*node.MemStore); ok {
			return m.Clone()
		}
		return s
	},
}

// Copyable reports whether Clone(v) yields a copy that behaves like v. It
// does not when v's state holds a function bound to v's own objects: a
// method value (etcd raft keeps r.tick = r.tickElection) or a closure.
// Clone can only share the function, so the copy's calls would act on
// the original. Plain top-level functions are fine to share. Nor does it
// when v holds a reference into an object it also reaches otherwise (a
// pointer to one of its own fields or to a slice's element, a slice of
// part of another's array), which Clone copies apart (alias.go). Drivers
// that need a faithful copy of such a node rebuild it by re-executing its
// events instead.
func Copyable(v any) bool {
	if v == nil {
		return true
	}
	return !holdsBoundFunc(reflect.ValueOf(v)) && !sharesInterior(reflect.ValueOf(v))
}

// mayHoldFunc caches, per type, whether a value of it can hold a function
// (directly, or behind pointers, containers and interfaces).
var mayHoldFunc sync.Map // reflect.Type -> bool

func typeMayHoldFunc(t reflect.Type) bool {
	return typeReaches(&mayHoldFunc, t, isOpaque, func(t reflect.Type) bool {
		k := t.Kind()
		return k == reflect.Func || k == reflect.Interface || k == reflect.Chan || k == reflect.UnsafePointer
	})
}

// typeReaches reports, remembered in cache per type, whether a value of
// t can hold a value of a type hit says yes to, behind pointers,
// containers and struct fields; types skip says yes to hold nothing.
func typeReaches(cache *sync.Map, t reflect.Type, skip func(reflect.Type) bool, hit func(reflect.Type) bool) bool {
	if r, ok := cache.Load(t); ok {
		return r.(bool)
	}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type) bool
	walk = func(t reflect.Type) bool {
		if seen[t] || skip(t) {
			return false
		}
		seen[t] = true
		if hit(t) {
			return true
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			return walk(t.Elem())
		case reflect.Map:
			return walk(t.Key()) || walk(t.Elem())
		case reflect.Struct:
			for i := range t.NumField() {
				if walk(t.Field(i).Type) {
					return true
				}
			}
		}
		return false
	}
	r := walk(t)
	cache.Store(t, r)
	return r
}

// holdsBoundFunc reports whether v holds a function bound to state, a
// channel or an unsafe pointer: anything a deep copy cannot reproduce.
//
// The walk keeps its own stack and has no depth bound: bounded at 256
// levels of recursion, it took a node whose queue of pending requests
// (a linked list of a few hundred) held a closure at its tail for
// copyable. It follows each reference once, knowing pointers by address
// and type (a pointer to a struct and one to its first field share the
// address: by address alone, the second was skipped with every function
// behind it), slices by array, length and type, so that a slice holding
// itself through an interface ends.
func holdsBoundFunc(v reflect.Value) bool {
	return walkReached(v, typeMayHoldFunc, func(v reflect.Value, _ func(reflect.Value)) (descend, stop bool) {
		switch v.Kind() {
		case reflect.Func:
			return false, !v.IsNil() && !topLevelFunc(v)
		case reflect.Chan, reflect.UnsafePointer:
			return false, !v.IsNil()
		}
		return true, false
	})
}

// walkReached walks v and what it reaches through interfaces, pointers,
// slices, arrays, maps (keys and values) and struct fields, with a stack
// of its own (no depth bound), following each reference once as
// holdsBoundFunc says, and skipping values of types relevant says hold
// nothing of interest. at sees each value first: it says whether to go
// on into it, whether to stop the walk (walkReached then reports true),
// and may push values of its own choosing instead.
func walkReached(v reflect.Value, relevant func(reflect.Type) bool, at func(v reflect.Value, push func(reflect.Value)) (descend, stop bool)) bool {
	seen := map[cloneKey]bool{}
	once := func(k cloneKey) bool {
		if seen[k] {
			return false
		}
		seen[k] = true
		return true
	}
	stack := []reflect.Value{v}
	push := func(v reflect.Value) { stack = append(stack, v) }
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !v.IsValid() || !relevant(v.Type()) {
			continue
		}
		descend, stop := at(v, push)
		if stop {
			return true
		}
		if !descend {
			continue
		}
		switch v.Kind() {
		case reflect.Interface:
			if !v.IsNil() {
				push(v.Elem())
			}
		case reflect.Pointer:
			if !v.IsNil() && once(cloneKey{v.Pointer(), 0, v.Type()}) {
				push(v.Elem())
			}
		case reflect.Slice:
			if !v.IsNil() && once(cloneKey{v.Pointer(), v.Len(), v.Type()}) {
				for i := range v.Len() {
					push(v.Index(i))
				}
			}
		case reflect.Array:
			for i := range v.Len() {
				push(v.Index(i))
			}
		case reflect.Map:
			if !v.IsNil() && once(cloneKey{v.Pointer(), 0, v.Type()}) {
				for it := v.MapRange(); it.Next(); {
					push(it.Key())
					push(it.Value())
				}
			}
		case reflect.Struct:
			for i := range v.NumField() {
				push(v.Field(i))
			}
		}
	}
	return false
}

// topLevelFunc reports whether a function value is a plain top-level
// function, which captures nothing. The runtime names method values
// "pkg.(*T).m-fm" and closures "pkg.f.func1".
func topLevelFunc(v reflect.Value) bool {
	f := runtime.FuncForPC(v.Pointer())
	if f == nil {
		return false
	}
	name := f.Name()
	if strings.HasSuffix(name, "-fm") {
		return false
	}
	last := name[strings.LastIndexByte(name, '/')+1:]
	return !strings.Contains(last, ".func")
}

// holdsItself caches, per slice type, sliceMayHoldItself.
var holdsItself sync.Map // reflect.Type -> bool

// sliceMayHoldItself tells whether a slice of type t can hold itself (its
// elements reach an interface, or t again): walks of such slices watch
// for it. Other loops pass a pointer or a map, which walks number as
// references.
func sliceMayHoldItself(t reflect.Type) bool {
	if r, ok := holdsItself.Load(t); ok {
		return r.(bool)
	}
	r := typeReaches(new(sync.Map), t.Elem(), isOpaque, func(x reflect.Type) bool {
		return x.Kind() == reflect.Interface || x == t
	})
	holdsItself.Store(t, r)
	return r
}

// openSlice is a slice a walk is inside of: its elements, by where they
// are, how many, and their type.
type openSlice struct {
	ptr uintptr
	n   int
	typ reflect.Type
}

// enclosing is how many slices out from the innermost one in open v is
// (1: the innermost), or 0 when it is not one of them.
func enclosing(open []openSlice, v reflect.Value) int {
	id := openSlice{v.Pointer(), v.Len(), v.Type()}
	for i := len(open) - 1; i >= 0; i-- {
		if open[i] == id {
			return len(open) - i
		}
	}
	return 0
}
