package state

import (
	"encoding/hex"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Leaf is one scalar of a node's observed state and where it lives.
// Paths read like Go: Leader.Lasts[0].From, Accepts[8]["n1"].
type Leaf struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// Flatten lists every scalar of v's observed state in canonical order
// (struct fields in declaration order, map keys sorted). Empty containers
// and nil references appear as leaves too, so a change from empty to
// non-empty shows up. A second path to an already-visited pointer or map
// is shown as "(same as PATH)", not expanded again.
func Flatten(v any) []Leaf {
	f := flattener{seen: map[refKey]string{}}
	f.walk(reflect.ValueOf(v), "", 0)
	return f.out
}

type flattener struct {
	out  []Leaf
	seen map[refKey]string
}

func (f *flattener) leaf(path, val string) {
	if path == "" {
		path = "."
	}
	f.out = append(f.out, Leaf{path, val})
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func (f *flattener) walk(v reflect.Value, path string, depth int) {
	if depth > maxDepth {
		f.leaf(path, "(too deep)")
		return
	}
	if !v.IsValid() {
		f.leaf(path, "nil")
		return
	}
	if isOpaque(v.Type()) {
		f.leaf(path, "(opaque "+v.Type().String()+")")
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if f.reference(v, path) {
			return
		}
		f.walk(v.Elem(), path, depth+1)
	case reflect.Interface:
		if v.IsNil() {
			f.leaf(path, "nil")
			return
		}
		f.walk(v.Elem(), path, depth+1)
	case reflect.Struct:
		if v.Type() == timeType {
			f.leaf(path, Scalar(v))
			return
		}
		fs := Fields(v.Type())
		if len(fs) == 0 {
			f.leaf(path, "{}")
		}
		for _, fl := range fs {
			f.walk(v.Field(fl.Index), join(path, fl.Name), depth+1)
		}
	case reflect.Map:
		if f.reference(v, path) {
			return
		}
		keys := SortedKeys(v)
		if len(keys) == 0 {
			f.leaf(path, "{}")
		}
		for _, key := range keys {
			f.walk(v.MapIndex(key), path+"["+KeyString(key)+"]", depth+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			f.leaf(path, "nil")
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			f.leaf(path, Scalar(v))
			return
		}
		if v.Len() == 0 {
			f.leaf(path, "[]")
		}
		for i := range v.Len() {
			f.walk(v.Index(i), path+"["+strconv.Itoa(i)+"]", depth+1)
		}
	default:
		f.leaf(path, Scalar(v))
	}
}

// reference handles nil and already-visited pointers and maps; it reports
// whether the value is done (a leaf was written).
func (f *flattener) reference(v reflect.Value, path string) bool {
	if v.IsNil() {
		f.leaf(path, "nil")
		return true
	}
	k := refKey{v.Pointer(), v.Type()}
	if first, ok := f.seen[k]; ok {
		f.leaf(path, "(same as "+first+")")
		return true
	}
	f.seen[k] = orDot(path)
	return false
}

func orDot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// KeyString formats a map key as it appears in paths: strings quoted,
// numbers bare.
func KeyString(k reflect.Value) string {
	for k.Kind() == reflect.Interface && !k.IsNil() {
		k = k.Elem()
	}
	if k.Kind() == reflect.String {
		return strconv.Quote(k.String())
	}
	return Scalar(k)
}

// Scalar formats one scalar value for display.
func Scalar(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type() == reflect.TypeFor[time.Duration]() {
			return time.Duration(v.Int()).String()
		}
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Complex64, reflect.Complex128:
		return fmt.Sprint(v.Complex())
	case reflect.String:
		return strconv.Quote(v.String())
	case reflect.Func:
		if v.IsNil() {
			return "nil"
		}
		return "func"
	case reflect.Chan:
		if v.IsNil() {
			return "nil"
		}
		return "chan"
	case reflect.UnsafePointer:
		return "unsafe.Pointer"
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, v.Len())
			for i := range b {
				b[i] = byte(v.Index(i).Uint())
			}
			s := hex.EncodeToString(b)
			if len(s) > 64 {
				s = s[:64] + fmt.Sprintf("...(%d bytes)", len(b))
			}
			return "0x" + s
		}
	case reflect.Struct:
		if v.Type() == timeType {
			sec, nsec := timeInstant(v)
			return time.Unix(sec, nsec).UTC().Format(time.RFC3339Nano)
		}
	}
	return strings.TrimSpace(v.Type().String())
}
