package state

import (
	"math"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
)

// Field is one struct field that is part of the observed state: every
// field except blank ones and those tagged `replay:"-"`.
type Field struct {
	Name  string
	Index int // for reflect.Value.Field
}

// plan is what reflection needs to know about a struct type, computed once.
type plan struct {
	fields []Field
	byName map[string]Field
	id     uint64 // hash of the type's name, folded into state hashes
}

var planCache sync.Map // reflect.Type -> *plan

// planOf returns the plan of struct type t: its observed fields are every
// field except those tagged `replay:"-"` and blank ones.
func planOf(t reflect.Type) *plan {
	if p, ok := planCache.Load(t); ok {
		return p.(*plan)
	}
	p := &plan{id: xxhash.Sum64String(t.String()), byName: map[string]Field{}}
	generated := isProtoMessage(t)
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("replay") == "-" || f.Name == "_" || generated && protoBookkeeping[f.Name] && !f.IsExported() {
			continue
		}
		p.fields = append(p.fields, Field{Name: f.Name, Index: i})
		p.byName[f.Name] = Field{Name: f.Name, Index: i}
	}
	planCache.Store(t, p)
	return p
}

// protoBookkeeping are the unexported fields protoc-gen-go adds to every
// message: the runtime's lazily set type information (reaching the whole
// protobuf registry), a size cache set by marshalling, and unknown bytes.
// They are not part of a message's value, and they change as the runtime
// touches the message: observed, they made a raft message's fields in
// `replay why` megabytes of reflection internals.
var protoBookkeeping = map[string]bool{"state": true, "sizeCache": true, "unknownFields": true}

// isProtoMessage says whether struct type t is a protoc-gen-go message: its
// state field is the protobuf runtime's MessageState.
func isProtoMessage(t reflect.Type) bool {
	f, ok := t.FieldByName("state")
	return ok && f.Type.Name() == "MessageState" && strings.HasPrefix(f.Type.PkgPath(), "google.golang.org/protobuf/")
}

// Fields lists the observed fields of struct type t, in declaration order.
// The list is computed once per type; callers must not modify it.
func Fields(t reflect.Type) []Field { return planOf(t).fields }

// FieldByName finds an observed field of struct type t.
func FieldByName(t reflect.Type, name string) (Field, bool) {
	f, ok := planOf(t).byName[name]
	return f, ok
}

var timeType = reflect.TypeFor[time.Time]()

// Internals of time.Time, read without unsafe so that times in unexported
// fields and map values hash by instant, not by representation (monotonic
// reading and location pointer are not part of the observed value).
const (
	hasMonotonic         = 1 << 63
	nsecMask             = 1<<30 - 1
	nsecShift            = 30
	secondsPerDay  int64 = 86400
	wallToInternal       = (1884*365 + 1884/4 - 1884/100 + 1884/400) * secondsPerDay
	unixToInternal       = (1969*365 + 1969/4 - 1969/100 + 1969/400) * secondsPerDay
)

// timeInstant returns the Unix seconds and nanoseconds of a time.Time value
// read field by field.
func timeInstant(v reflect.Value) (sec int64, nsec int64) {
	wall := v.Field(0).Uint()
	ext := v.Field(1).Int()
	nsec = int64(wall & nsecMask)
	if wall&hasMonotonic != 0 {
		sec = int64(wall<<1>>(nsecShift+1)) + wallToInternal
	} else {
		sec = ext
	}
	return sec - unixToInternal, nsec
}

// TimeNanos returns the Unix nanoseconds of a time.Time value read field by
// field (it may have been reached through unexported fields). Outside the
// years 1678-2262 they do not fit an int64: ok is false, and TimeInstant
// has the value.
func TimeNanos(v reflect.Value) (ns int64, ok bool) {
	sec, nsec := timeInstant(v)
	if sec > math.MaxInt64/int64(1e9)-1 || sec < math.MinInt64/int64(1e9)+1 {
		return 0, false
	}
	return sec*1e9 + nsec, true
}

// TimeInstant returns the Unix seconds and nanoseconds (0 <= nsec < 1e9)
// of a time.Time value read field by field.
func TimeInstant(v reflect.Value) (sec, nsec int64) { return timeInstant(v) }

// IsTime reports whether t is time.Time.
func IsTime(t reflect.Type) bool { return t == timeType }

// atomicPointer returns the pointer a sync/atomic.Pointer[T] value v
// holds, as a *T (nil when it holds none); ok is false for any other
// value. Its pointer lies in an unsafe.Pointer field, which the
// flattening showed as nothing but "unsafe.Pointer": what a handler keeps
// behind one (a configuration swapped whole) was not shown at all, and two
// states that differ there flattened alike. The state hash still passes
// over it, as the hashes recorded in traces did; so do the predicates,
// whose change detection is that hash.
func atomicPointer(v reflect.Value) (p reflect.Value, ok bool) {
	t := v.Type()
	if t.Kind() != reflect.Struct || t.PkgPath() != "sync/atomic" || !strings.HasPrefix(t.Name(), "Pointer[") {
		return reflect.Value{}, false
	}
	holder, found := t.FieldByName("v")
	if !found || holder.Type.Kind() != reflect.UnsafePointer || t.NumField() == 0 ||
		t.Field(0).Type.Kind() != reflect.Array || t.Field(0).Type.Elem().Kind() != reflect.Pointer {
		return reflect.Value{}, false
	}
	pt := t.Field(0).Type.Elem() // the [0]*T field says what T is
	at := v.FieldByIndex(holder.Index).UnsafePointer()
	if at == nil {
		return reflect.Zero(pt), true
	}
	return reflect.NewAt(pt.Elem(), at), true
}
