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
	return clone.Slowly(v).(T)
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
	w := funcWalker{seen: map[refKey]bool{}}
	return !w.boundFunc(reflect.ValueOf(v), 0) && !sharesInterior(reflect.ValueOf(v))
}

// mayHoldFunc caches, per type, whether a value of it can hold a function
// (directly, or behind pointers, containers and interfaces).
var mayHoldFunc sync.Map // reflect.Type -> bool

func typeMayHoldFunc(t reflect.Type) bool {
	if r, ok := mayHoldFunc.Load(t); ok {
		return r.(bool)
	}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type) bool
	walk = func(t reflect.Type) bool {
		if seen[t] || isOpaque(t) {
			return false
		}
		seen[t] = true
		switch t.Kind() {
		case reflect.Func, reflect.Interface, reflect.Chan, reflect.UnsafePointer:
			return true
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
	mayHoldFunc.Store(t, r)
	return r
}

// funcWalker knows the pointers it followed by address and type: a
// pointer to a struct and one to its first field share the address, and
// by address alone the second was skipped, with any function behind it.
type funcWalker struct{ seen map[refKey]bool }

// boundFunc reports whether v holds a function bound to state, a
// channel or an unsafe pointer: anything a deep copy cannot reproduce.
func (w funcWalker) boundFunc(v reflect.Value, depth int) bool {
	if !v.IsValid() || depth > maxCloneCheckDepth || !typeMayHoldFunc(v.Type()) {
		return false
	}
	switch v.Kind() {
	case reflect.Func:
		return !v.IsNil() && !topLevelFunc(v)
	case reflect.Chan, reflect.UnsafePointer:
		return !v.IsNil()
	case reflect.Interface:
		return !v.IsNil() && w.boundFunc(v.Elem(), depth+1)
	case reflect.Pointer:
		k := refKey{v.Pointer(), v.Type()}
		if v.IsNil() || w.seen[k] {
			return false
		}
		w.seen[k] = true
		return w.boundFunc(v.Elem(), depth+1)
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if w.boundFunc(v.Index(i), depth+1) {
				return true
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if w.boundFunc(it.Key(), depth+1) || w.boundFunc(it.Value(), depth+1) {
				return true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if w.boundFunc(v.Field(i), depth+1) {
				return true
			}
		}
	}
	return false
}

// maxCloneCheckDepth bounds the walk as hashing bounds its own; deeper
// state is assumed copyable.
const maxCloneCheckDepth = 256

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
