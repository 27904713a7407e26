package node

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// How an encoding can lose or scramble a time.Time, by type. A type with
// a time in it is decoded again after it is encoded, to refuse at the
// sender what a receiver could not read back as sent: a time outside the
// years RFC 3339 writes, and two keys of a map keyed by time.Time that
// are one instant (two zones), which would encode to one key twice, in
// map order. A struct that embeds time.Time is encoded by time.Time's
// own MarshalBinary, which drops the struct's other fields: refused.

var timeType = reflect.TypeFor[time.Time]()

type timeHazard struct {
	hasTime  bool   // a time.Time is in it (not behind an interface)
	embedded string // a struct in it that embeds time.Time beside other fields
}

var (
	hazards    sync.Map // reflect.Type -> timeHazard
	verifyMode cbor.DecMode
)

func init() {
	var err error
	if verifyMode, err = (cbor.DecOptions{MaxArrayElements: 1 << 24, MaxMapPairs: 1 << 24,
		DupMapKey: cbor.DupMapKeyEnforcedAPF}).DecMode(); err != nil {
		panic(err)
	}
}

var (
	cborMarshaler   = reflect.TypeFor[cbor.Marshaler]()
	binaryMarshaler = reflect.TypeFor[encoding.BinaryMarshaler]()
)

// ownEncoding reports whether t encodes itself (CBOR's or a binary
// marshaler of its own), so its fields are not the codec's to walk.
func ownEncoding(t reflect.Type) bool {
	return t.Implements(cborMarshaler) || reflect.PointerTo(t).Implements(cborMarshaler)
}

// embedsTime reports whether t reaches a time.Time through anonymous
// struct fields only: it then has time.Time's MarshalBinary, promoted.
func embedsTime(t reflect.Type) bool {
	for _, f := range reflect.VisibleFields(t) {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && ft == timeType {
			return true
		}
	}
	return false
}

// encodedFields counts t's fields CBOR encodes: exported, not tagged
// out, and not the embedding path itself.
func encodedFields(t reflect.Type) int {
	n := 0
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() || f.Tag.Get("cbor") == "-" {
			continue
		}
		n++
	}
	return n
}

func hazardOf(t reflect.Type) timeHazard {
	if h, ok := hazards.Load(t); ok {
		return h.(timeHazard)
	}
	var h timeHazard
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		if t == timeType {
			h.hasTime = true
			return
		}
		if ownEncoding(t) {
			return // its own business
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(t.Elem())
		case reflect.Map:
			walk(t.Key())
			walk(t.Elem())
		case reflect.Struct:
			if reflect.PointerTo(t).Implements(binaryMarshaler) {
				// Encoded by a MarshalBinary: time.Time's, promoted,
				// drops every field beside it.
				if embedsTime(t) && encodedFields(t) > 0 && h.embedded == "" {
					h.embedded = t.String()
				}
				return
			}
			for i := range t.NumField() {
				if f := t.Field(i); f.IsExported() || f.Anonymous {
					walk(f.Type)
				}
			}
		}
		// An interface is not walked: a time in it travels as text and
		// is read back as text, with nothing lost to refuse.
	}
	walk(t)
	hazards.Store(t, h)
	return h
}

// checkTimes refuses what v's encoding b would lose of its times (see
// above); enc is the encoding that wrote b.
func checkTimes(v any, b []byte) error {
	t := reflect.TypeOf(v)
	if t == nil {
		return nil
	}
	return checkTimesOf(t, hazardOf(t), b)
}

// checkTimesOf is checkTimes for a value of type t, whose hazard h is
// known (a registered message type's, found once at Register).
func checkTimesOf(t reflect.Type, h timeHazard, b []byte) error {
	if h.embedded != "" {
		return fmt.Errorf("%s embeds time.Time beside other fields, and is then encoded by time.Time's MarshalBinary, which drops them: give the time a field name (or the struct a MarshalCBOR of its own)", h.embedded)
	}
	if !h.hasTime {
		return nil
	}
	base := t
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	err := verifyMode.Unmarshal(b, reflect.New(base).Interface())
	var dup *cbor.DupMapKeyError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &dup):
		return fmt.Errorf("a map holds two keys that encode alike (%v), which would arrive as one: in a map keyed by time.Time, one instant in two zones (or, in a trace of codec /1, two times within one second); key such a map by UnixNano", dup.Key)
	case strings.Contains(err.Error(), "for time.Time"):
		return fmt.Errorf("a time.Time outside the years 0000-9999, which RFC 3339 text cannot hold, would not be read back: %w", err)
	}
	return nil // not ours to judge: the receiver's decode says what it is
}
