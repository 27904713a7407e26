package state

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

type nodeName string

type level int32

// scalarMaps holds one map of every key and value layout the fast path
// walks, some behind unexported fields and named types.
type scalarMaps struct {
	SS   map[nodeName]string
	SI   map[string]int
	si32 map[string]level
	IU   map[int64]uint64
	IB   map[int]bool
	U32F map[uint32]float32
	BF   map[bool]float64
	I32S map[int32]string
	US   map[uint]string
	F    map[float64]string // left to reflection: float keys
	I8   map[int8]string    // left to reflection: a one-byte integer
}

func randomScalarMaps(r *rand.Rand) *scalarMaps {
	str := func() string {
		switch r.IntN(8) {
		case 0:
			return ""
		case 1:
			return strings.Repeat("x", 3000+r.IntN(6000)) // beyond the hasher's buffer
		}
		return string(rune('a'+r.IntN(26))) + strings.Repeat("y", r.IntN(40))
	}
	n := func() int { return r.IntN(12) }
	m := &scalarMaps{SS: map[nodeName]string{}, SI: map[string]int{}, si32: map[string]level{},
		IU: map[int64]uint64{}, IB: map[int]bool{}, U32F: map[uint32]float32{}, BF: map[bool]float64{},
		I32S: map[int32]string{}, US: map[uint]string{}, F: map[float64]string{}, I8: map[int8]string{}}
	for range n() {
		m.SS[nodeName(str())] = str()
		m.SI[str()] = int(r.Int64()) - math.MaxInt64/2
		m.si32[str()] = level(-r.Int32N(1 << 30))
		m.IU[-r.Int64()] = r.Uint64()
		m.IB[r.Int()] = r.IntN(2) == 0
		m.U32F[r.Uint32()] = float32(r.NormFloat64())
		m.BF[r.IntN(2) == 0] = []float64{math.NaN(), math.Inf(-1), -0.0, r.Float64()}[r.IntN(4)]
		m.I32S[-r.Int32()] = str()
		m.US[uint(r.Uint64())] = str()
		m.F[r.Float64()] = str()
		m.I8[int8(r.IntN(256)-128)] = str()
	}
	if r.IntN(4) == 0 {
		m.SS = nil
	}
	return m
}

// TestScalarMapsHashAsThroughReflection: walking a map of scalars as a
// plain map gives the hash the reflective walk gives, for every layout,
// named types, unexported fields, negative and NaN numbers, nil maps and
// entries longer than the hasher's buffer.
func TestScalarMapsHashAsThroughReflection(t *testing.T) {
	typ := reflect.TypeFor[scalarMaps]()
	walked := 0
	for i := range typ.NumField() {
		f := typ.Field(i)
		if scalarMapSummer(f.Type) != nil {
			walked++
		} else if f.Name != "F" && f.Name != "I8" {
			t.Fatalf("%s %s is not walked as a plain map", f.Name, f.Type)
		}
	}
	if walked != 9 {
		t.Fatalf("%d of the maps walked as plain maps, want 9", walked)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		v := reflect.ValueOf(randomScalarMaps(r)).Elem()
		for i := range typ.NumField() {
			fv, ft := v.Field(i), typ.Field(i).Type
			refl := refFreeMapHash(ft, hashFnOf(ft.Key()), hashFnOf(ft.Elem()))
			want, got := newHasher(), newHasher()
			refl(want, fv, 0)
			hashFnOf(ft)(got, fv, 0)
			if w, g := want.sum(), got.sum(); w != g {
				t.Fatalf("%s (%d entries): hash %x, through reflection %x", typ.Field(i).Name, fv.Len(), g, w)
			}
		}
	}
}
