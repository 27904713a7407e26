package state

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

// specEncoder writes the canonical encoding of a state the plain way,
// one reflective step per value, as docs/trace-format.md's state hash is
// defined: an oracle for the compiled hash functions and their fast
// paths (maps walked as plain maps, fields read in place).
type specEncoder struct {
	b    []byte
	refs map[refKey]int
	open []openSlice // the slices that may hold themselves being encoded
}

func (e *specEncoder) u64(tag byte, x uint64) {
	e.b = binary.LittleEndian.AppendUint64(append(e.b, tag), x)
}

func (e *specEncoder) str(tag byte, s string) {
	e.u64(tag, uint64(len(s)))
	e.b = append(e.b, s...)
}

// ref numbers references in the order they are first visited.
func (e *specEncoder) ref(v reflect.Value) bool {
	if v.IsNil() {
		e.b = append(e.b, '0')
		return true
	}
	k := refKey{v.Pointer(), v.Type()}
	if n, ok := e.refs[k]; ok {
		e.u64('@', uint64(n))
		return true
	}
	e.refs[k] = len(e.refs)
	return false
}

func (e *specEncoder) value(v reflect.Value) {
	t := v.Type()
	if isOpaque(t) {
		e.b = append(e.b, 'o')
		return
	}
	switch t.Kind() {
	case reflect.Bool:
		e.b = append(e.b, map[bool]byte{true: 'T', false: 'F'}[v.Bool()])
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.u64('i', uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		e.u64('u', v.Uint())
	case reflect.Float32, reflect.Float64:
		e.u64('f', math.Float64bits(v.Float()))
	case reflect.String:
		e.str('s', v.String())
	case reflect.Pointer:
		if !e.ref(v) {
			e.b = append(e.b, '*')
			e.value(v.Elem())
		}
	case reflect.Interface:
		if v.IsNil() {
			e.b = append(e.b, '0')
			return
		}
		e.str('I', v.Elem().Type().String())
		e.value(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			e.b = append(e.b, '0')
			return
		}
		if t.Elem().Kind() == reflect.Uint8 {
			e.u64('b', uint64(v.Len()))
			e.b = append(e.b, v.Bytes()...)
			return
		}
		if v.Len() > 0 && sliceMayHoldItself(t) {
			// Inside itself: how many such slices out it is.
			for i := len(e.open) - 1; i >= 0; i-- {
				if e.open[i] == (openSlice{v.Pointer(), v.Len(), t}) {
					e.u64('^', uint64(len(e.open)-i))
					return
				}
			}
			e.open = append(e.open, openSlice{v.Pointer(), v.Len(), t})
			defer func() { e.open = e.open[:len(e.open)-1] }()
		}
		e.u64('[', uint64(v.Len()))
		for i := range v.Len() {
			e.value(v.Index(i))
		}
	case reflect.Array:
		e.u64('A', uint64(v.Len()))
		for i := range v.Len() {
			e.value(v.Index(i))
		}
	case reflect.Map:
		if e.ref(v) {
			return
		}
		if refFree(t.Key(), nil) && refFree(t.Elem(), nil) {
			e.u64('m', uint64(v.Len()))
			var sum uint64
			for it := v.MapRange(); it.Next(); {
				sub := &specEncoder{refs: map[refKey]int{}}
				sub.value(it.Key())
				sub.value(it.Value())
				sum += xxhash.Sum64(sub.b)
			}
			e.u64('+', sum)
			return
		}
		e.u64('M', uint64(v.Len()))
		for _, en := range SortedEntries(v) {
			e.value(en.Key)
			e.value(en.Value)
		}
	case reflect.Struct:
		e.u64('S', planOf(t).id)
		for _, f := range planOf(t).fields {
			e.value(v.Field(f.Index))
		}
	default:
		panic("spec encoder: no " + t.Kind().String())
	}
}

func specHash(v any) uint64 {
	e := &specEncoder{refs: map[refKey]int{}}
	e.value(reflect.ValueOf(v))
	return xxhash.Sum64(e.b)
}

type small int8

type specLeaf struct {
	N   int
	u16 uint16
	I8  small
	F32 float32
	On  bool
	S   string
}

type specState struct {
	Name    string
	count   int32
	Flags   [3]bool
	Leaf    specLeaf
	leaves  []specLeaf
	ByRound map[int64]map[nodeName]string
	byNode  map[nodeName]*specLeaf
	Votes   map[uint32]map[int]bool
	Flags2  map[bool]*specLeaf
	Alias   *specLeaf
	Any     any
	Blob    []byte
	Nested  map[string]map[int64]*specLeaf
	byLevel map[level]map[uint64]string
	Skip    int `replay:"-"`
}

func randomSpecState(r *rand.Rand) *specState {
	str := func() string {
		if r.IntN(20) == 0 {
			return strings.Repeat("z", 4000+r.IntN(3000))
		}
		return fmt.Sprint("n", r.IntN(30))
	}
	leaf := func() *specLeaf {
		return &specLeaf{N: r.Int() - r.Int(), u16: uint16(r.Uint32()), I8: small(r.IntN(256) - 128),
			F32: []float32{float32(math.NaN()), -0.0, float32(r.NormFloat64())}[r.IntN(3)], On: r.IntN(2) == 0, S: str()}
	}
	s := &specState{Name: str(), count: -r.Int32(), Flags: [3]bool{true, r.IntN(2) == 0}, Leaf: *leaf(),
		ByRound: map[int64]map[nodeName]string{}, byNode: map[nodeName]*specLeaf{}, Votes: map[uint32]map[int]bool{},
		Flags2: map[bool]*specLeaf{}, Nested: map[string]map[int64]*specLeaf{}, byLevel: map[level]map[uint64]string{}, Skip: r.Int()}
	shared := []*specLeaf{leaf(), leaf(), nil}
	pick := func() *specLeaf {
		if r.IntN(2) == 0 {
			return shared[r.IntN(len(shared))] // aliasing: back-references by visit order
		}
		return leaf()
	}
	for range r.IntN(10) {
		s.leaves = append(s.leaves, *leaf())
		in := map[nodeName]string{}
		for range r.IntN(4) {
			in[nodeName(str())] = str()
		}
		s.ByRound[-r.Int64N(50)] = in
		s.byNode[nodeName(str())] = pick()
		s.Votes[r.Uint32N(9)] = map[int]bool{r.IntN(5): true}
		s.Flags2[r.IntN(2) == 0] = pick()
		n := map[int64]*specLeaf{}
		for range r.IntN(3) {
			n[r.Int64N(7)-3] = pick()
		}
		if r.IntN(5) == 0 {
			n = nil
		}
		s.Nested[str()] = n
		s.byLevel[level(r.Int32N(9)-4)] = map[uint64]string{r.Uint64(): str()}
	}
	s.Alias = pick()
	switch r.IntN(3) {
	case 0:
		s.Any = s.byNode
	case 1:
		s.Any = *leaf()
	}
	if r.IntN(2) == 0 {
		s.Blob = []byte(str())
	}
	return s
}

// TestHashIsTheSpec: the compiled hash of random states (maps of scalars
// and of references, keyed by every scalar layout, behind exported and
// unexported fields, with aliasing, nil maps, NaN and long strings)
// equals the canonical encoding written the plain way.
func TestHashIsTheSpec(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		s := randomSpecState(r)
		if got, want := Hash(s), specHash(s); got != want {
			t.Fatalf("state %d: hash %x, the spec's %x", i, got, want)
		}
		// A fresh hasher too: a pooled one has scratch room that hides
		// a miscounted nesting level.
		fresh := newHasher()
		fresh.value(reflect.ValueOf(s), 0)
		if got, want := fresh.sum(), specHash(s); got != want {
			t.Fatalf("state %d, fresh hasher: hash %x, the spec's %x", i, got, want)
		}
		// Not addressable: the fields are read through reflection.
		if got, want := HashValue(reflect.ValueOf(*s)), specHash(*s); got != want {
			t.Fatalf("state %d by value: hash %x, the spec's %x", i, got, want)
		}
	}
}
