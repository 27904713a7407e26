package node

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/fxamacker/cbor/v2"
)

// Marshaler is implemented by message types that bring their own encoding
// (protobuf-generated types such as etcd's raftpb.Message). Their encoding
// must be deterministic: equal values, equal bytes.
type Marshaler interface {
	Marshal() ([]byte, error)
}

// Unmarshaler is the decoding half of Marshaler, on the pointer type.
type Unmarshaler interface {
	Unmarshal([]byte) error
}

// CodecName identifies the encoding in trace headers. Version 2 encodes a
// time.Time to the nanosecond (RFC 3339 text in UTC); version 1 kept whole
// seconds only, silently (docs/migration.md). Traces of either version
// replay: a replay encodes what handlers send as the recording did.
const CodecName = "cbor-core-deterministic/2"

// codecNameV1 is the first encoding: times to whole seconds.
const codecNameV1 = "cbor-core-deterministic/1"

// SupportedCodec says why traces whose header names codec cannot be
// replayed by this build (nil: they can).
func SupportedCodec(codec string) error {
	if codec == CodecName || codec == codecNameV1 {
		return nil
	}
	return fmt.Errorf("message codec %q is not supported (this build reads %s and %s)", codec, CodecName, codecNameV1)
}

var (
	encMode   cbor.EncMode
	encModeV1 cbor.EncMode
	decMode   cbor.DecMode
)

func init() {
	var err error
	// Core deterministic encoding sorts map keys and uses shortest forms,
	// which is what makes digests of equal messages equal. Its times are
	// whole seconds; RFC 3339 in UTC keeps every nanosecond and encodes
	// an instant the same in any time zone.
	opts := cbor.CoreDetEncOptions()
	if encModeV1, err = opts.EncMode(); err != nil {
		panic(err)
	}
	opts.Time = cbor.TimeRFC3339NanoUTC
	if encMode, err = opts.EncMode(); err != nil {
		panic(err)
	}
	if decMode, err = (cbor.DecOptions{MaxArrayElements: 1 << 24, MaxMapPairs: 1 << 24}).DecMode(); err != nil {
		panic(err)
	}
}

// Marshal encodes v canonically (deterministic CBOR). Handlers use it to
// store structured values on Disk.
func Marshal(v any) ([]byte, error) {
	b, err := encMode.Marshal(v)
	if err == nil {
		err = checkTimes(v, b)
	}
	return b, err
}

// Unmarshal decodes data produced by Marshal into v (a pointer).
func Unmarshal(data []byte, v any) error { return decMode.Unmarshal(data, v) }

type msgType struct {
	name  string
	typ   reflect.Type // the registered type (may be a pointer type)
	own   bool         // encodes itself (Marshaler/Unmarshaler)
	isPtr bool
	times timeHazard // what its encoding could lose of a time (not own)
	loops bool       // its values may refer to themselves: walked before encoding (not own)
}

// Codec maps registered message and input types to names and encodes their
// values canonically. A system has one Codec; its names go into trace
// headers so a trace can be decoded without guessing.
type Codec struct {
	*types
	enc cbor.EncMode // nil: the current version's
}

// types is a codec's registry, shared by its versions (ForTrace).
type types struct {
	mu     sync.RWMutex
	byName map[string]*msgType
	byType map[reflect.Type]*msgType
}

// NewCodec returns an empty codec.
func NewCodec() *Codec {
	return &Codec{types: &types{byName: map[string]*msgType{}, byType: map[reflect.Type]*msgType{}}}
}

// ForTrace is the codec with the same types that encodes as traces whose
// header names codec were encoded (a replay compares what handlers send
// with the recording byte for byte).
func (c *Codec) ForTrace(codec string) (*Codec, error) {
	if err := SupportedCodec(codec); err != nil {
		return nil, err
	}
	if codec == codecNameV1 {
		return &Codec{types: c.types, enc: encModeV1}, nil
	}
	return c, nil
}

// TypeName is the default name of a message type: its package name and type
// name, e.g. "paxos.Collect" (pointers are named after their element).
// A type of a main package is "main.T" in its binary and in its tests
// alike (go test builds a main package under its import path), so that a
// trace simtest wrote replays in the binary, and one script serves both.
func TypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() == "" {
		return t.String()
	}
	if strings.HasPrefix(t.String(), "main.") {
		return "main." + t.Name()
	}
	pkg := t.PkgPath()
	for i := len(pkg) - 1; i >= 0; i-- {
		if pkg[i] == '/' {
			pkg = pkg[i+1:]
			break
		}
	}
	if pkg == "" {
		return t.Name()
	}
	return pkg + "." + t.Name()
}

// Register adds the type of sample under name (TypeName of it if name is
// empty). Values received by handlers have exactly the registered type: a
// struct registered by value arrives as a value, one registered by pointer
// arrives as a pointer.
func (c *Codec) Register(name string, sample any) error {
	t := reflect.TypeOf(sample)
	if t == nil {
		return fmt.Errorf("register %q: nil sample", name)
	}
	if name == "" {
		name = TypeName(t)
	}
	mt := &msgType{name: name, typ: t, isPtr: t.Kind() == reflect.Pointer}
	base := t
	if mt.isPtr {
		base = t.Elem()
	}
	_, enc := reflect.New(base).Interface().(Marshaler)
	_, dec := reflect.New(base).Interface().(Unmarshaler)
	mt.own = enc && dec
	if !mt.own {
		mt.times = hazardOf(t) // once here, not at every send
		mt.loops = mayLoop(t)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byName[name]; ok && old.typ != t {
		return fmt.Errorf("register %q: name already used by %v", name, old.typ)
	}
	if old, ok := c.byType[t]; ok && old.name != name {
		return fmt.Errorf("register %v: already registered as %q", t, old.name)
	}
	c.byName[name] = mt
	c.byType[t] = mt
	return nil
}

// MustRegister is Register for package initialisation: it panics on error.
func (c *Codec) MustRegister(samples ...any) *Codec {
	for _, s := range samples {
		if err := c.Register("", s); err != nil {
			panic(err)
		}
	}
	return c
}

// Names lists the registered names, sorted.
func (c *Codec) Names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Sorted(maps.Keys(c.byName))
}

// Known reports whether name is registered.
func (c *Codec) Known(name string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.byName[name]
	return ok
}

// Encode returns the registered name of m's type and its canonical encoding.
func (c *Codec) Encode(m Message) (string, []byte, error) {
	t := reflect.TypeOf(m)
	c.mu.RLock()
	mt, ok := c.byType[t]
	c.mu.RUnlock()
	if !ok {
		return "", nil, fmt.Errorf("message type %v is not registered with the system's codec", t)
	}
	if mt.own {
		v := reflect.ValueOf(m)
		if !mt.isPtr {
			p := reflect.New(t)
			p.Elem().Set(v)
			v = p
		}
		b, err := v.Interface().(Marshaler).Marshal()
		if err != nil {
			return "", nil, fmt.Errorf("encode %s: %w", mt.name, err)
		}
		return mt.name, b, nil
	}
	if mt.loops {
		if err := checkDepth(reflect.ValueOf(m), 0); err != nil {
			return "", nil, fmt.Errorf("encode %s: %w", mt.name, err)
		}
	}
	enc := c.enc
	if enc == nil {
		enc = encMode
	}
	b, err := enc.Marshal(m)
	if err == nil {
		err = checkTimesOf(t, mt.times, b)
	}
	if err != nil {
		return "", nil, fmt.Errorf("encode %s: %w", mt.name, err)
	}
	return mt.name, b, nil
}

// Decode decodes a payload of the named type into a fresh value of the
// registered type.
func (c *Codec) Decode(name string, payload []byte) (Message, error) {
	c.mu.RLock()
	mt, ok := c.byName[name]
	c.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("message type %q is not registered with the system's codec", name)
	}
	base := mt.typ
	if mt.isPtr {
		base = base.Elem()
	}
	p := reflect.New(base)
	var err error
	if mt.own {
		err = p.Interface().(Unmarshaler).Unmarshal(payload)
	} else {
		err = decMode.Unmarshal(payload, p.Interface())
	}
	if err != nil {
		if strings.Contains(err.Error(), "for time.Time") {
			// RFC 3339 has four digits for the year: a far-future
			// "never" encodes, but cannot be read back.
			return nil, fmt.Errorf("decode %s (%d bytes): %w (a time.Time travels as RFC 3339 text, which holds only the years 0000-9999)", name, len(payload), err)
		}
		return nil, fmt.Errorf("decode %s (%d bytes): %w", name, len(payload), err)
	}
	if mt.isPtr {
		return p.Interface(), nil
	}
	return p.Elem().Interface(), nil
}
