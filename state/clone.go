package state

import (
	"log"
	"log/slog"
	"os"
	"reflect"
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
