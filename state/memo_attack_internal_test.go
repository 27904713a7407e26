package state

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"
)

type memoAttackZero struct{}

type memoAttackRec struct {
	A   int8
	B   int64
	S   string
	F   float64
	T   time.Time
	Arr [3]uint16
	c   bool  // unexported: shown
	Hid []int `replay:"-"`
}

type memoAttackIntK int

func (k memoAttackIntK) String() string { return [...]string{"zero", "one", "two"}[k%3] }

type memoAttackKey string

func (k memoAttackKey) String() string { return "K" + string(k) }

type memoAttackNode struct {
	Log    []memoAttackRec
	Alias  []memoAttackRec // sometimes a window of Log's array
	Z      []memoAttackZero
	Any    any
	M      map[string]int64
	Shared map[string]int64 // sometimes M itself
	M2     map[memoAttackIntK]string
	Named  map[memoAttackKey]bool
	F      []float64
	FM     map[string]float64
	Nest   []map[string]int
	PK     map[*memoAttackRec]int
	Times  []time.Time
	Ptr    *[]memoAttackRec
	Arr    [40]memoAttackRec
	U8     map[uint32]uint32
	B8     map[bool]string
}

var memoAttackStrict = false

var memoAttackNoArray = false

func (n *memoAttackNode) mutate(rng *rand.Rand, step int) {
	newRec := func() memoAttackRec {
		r := memoAttackRec{A: int8(rng.IntN(3)), B: int64(rng.IntN(3)), S: fmt.Sprint(rng.IntN(3)), Arr: [3]uint16{uint16(rng.IntN(2))}}
		switch rng.IntN(4) {
		case 0:
			r.F = math.NaN()
		case 1:
			r.F = math.Copysign(0, -1)
		case 2:
			r.T = time.Unix(int64(rng.IntN(3)), int64(rng.IntN(3))).In(time.FixedZone("X", rng.IntN(3)*3600))
		}
		return r
	}
	switch rng.IntN(24) {
	case 0, 1:
		for range 1 + rng.IntN(20) {
			n.Log = append(n.Log, newRec())
		}
	case 2:
		if len(n.Log) > 3 {
			n.Log = n.Log[1+rng.IntN(3):]
		}
	case 3:
		if len(n.Log) > 0 {
			i := rng.IntN(len(n.Log))
			switch rng.IntN(5) {
			case 0:
				n.Log[i].F = -n.Log[i].F
			case 1:
				n.Log[i].F = math.NaN()
			case 2:
				n.Log[i].c = !n.Log[i].c
			case 3:
				n.Log[i].T = n.Log[i].T.Add(time.Nanosecond)
			case 4:
				n.Log[i].Hid = []int{rng.IntN(3)}
			}
		}
	case 4:
		if len(n.Log) > 10 {
			a, b := rng.IntN(len(n.Log)/2), len(n.Log)/2+rng.IntN(len(n.Log)/2)
			n.Alias = n.Log[a:b]
		}
	case 5:
		n.Z = append(n.Z, make([]memoAttackZero, rng.IntN(30))...)
		if rng.IntN(3) == 0 {
			n.Z = n.Z[:rng.IntN(len(n.Z)+1)]
		}
	case 6:
		switch rng.IntN(6) {
		case 0:
			n.Any = n.Log
		case 1:
			if !memoAttackNoArray {
				n.Any = n.Arr
			}
		case 2:
			n.Any = n.M
		case 3:
			n.Any = slices.Clone(n.Log)
		case 4:
			n.Any = &n.Log
		case 5:
			n.Any = n.Alias
		}
	case 7, 8:
		k := fmt.Sprintf("k%02d", rng.IntN(40))
		if rng.IntN(3) == 0 {
			delete(n.M, k)
		} else {
			n.M[k] = int64(rng.IntN(3))
		}
	case 9:
		switch rng.IntN(4) {
		case 0:
			n.Shared = n.M
		case 1:
			n.Shared = maps.Clone(n.M)
		case 2:
			n.M = maps.Clone(n.M)
		case 3: // swap two values
			ks := slices.Sorted(maps.Keys(n.M))
			if len(ks) > 1 {
				a, b := ks[rng.IntN(len(ks))], ks[rng.IntN(len(ks))]
				n.M[a], n.M[b] = n.M[b], n.M[a]
			}
		}
	case 10:
		n.M2[memoAttackIntK(rng.IntN(45))] = fmt.Sprint(rng.IntN(2))
		if rng.IntN(2) == 0 {
			delete(n.M2, memoAttackIntK(rng.IntN(45)))
		}
	case 11:
		n.Named[memoAttackKey(fmt.Sprint(rng.IntN(40)))] = rng.IntN(2) == 0
	case 12:
		for range rng.IntN(10) {
			x := float64(rng.IntN(3))
			switch rng.IntN(3) {
			case 0:
				x = math.NaN()
			case 1:
				x = math.Copysign(0, -1)
			}
			n.F = append(n.F, x)
		}
		if len(n.F) > 0 {
			n.F[rng.IntN(len(n.F))] *= -1
		}
	case 13:
		k := fmt.Sprint(rng.IntN(40))
		switch rng.IntN(3) {
		case 0:
			n.FM[k] = math.Copysign(0, -1)
		case 1:
			n.FM[k] = 0
		case 2:
			n.FM[k] = math.NaN()
		}
	case 14:
		if len(n.Nest) < 40 || rng.IntN(3) == 0 {
			m := map[string]int{}
			for i := range 30 + rng.IntN(5) {
				m[fmt.Sprint(i)] = rng.IntN(2)
			}
			n.Nest = append(n.Nest, m)
		}
		if len(n.Nest) > 0 {
			n.Nest[rng.IntN(len(n.Nest))][fmt.Sprint(rng.IntN(35))] = rng.IntN(3)
			if rng.IntN(4) == 0 {
				n.Nest = n.Nest[1:]
			}
			if rng.IntN(4) == 0 && len(n.Nest) > 1 {
				n.Nest[0] = n.Nest[1] // a map at two paths
			}
		}
	case 15:
		r := newRec()
		n.PK[&r] = rng.IntN(3)
		if len(n.Log) > 0 {
			n.PK[&n.Log[rng.IntN(len(n.Log))]] = rng.IntN(3)
		}
	case 16:
		for range rng.IntN(20) {
			n.Times = append(n.Times, time.Unix(int64(rng.IntN(3)), 0).In(time.FixedZone("Y", 3600*rng.IntN(2))))
		}
		if len(n.Times) > 0 {
			i := rng.IntN(len(n.Times))
			n.Times[i] = n.Times[i].Round(0) // strip monotonic, same instant
		}
	case 17:
		l := slices.Clone(n.Log)
		n.Ptr = &l
		if rng.IntN(2) == 0 {
			n.Ptr = &n.Log
		}
	case 18:
		n.Arr[rng.IntN(40)] = newRec()
	case 19: // shrink M below 32 and back
		ks := slices.Sorted(maps.Keys(n.M))
		for _, k := range ks[:len(ks)/2] {
			delete(n.M, k)
		}
	case 20:
		n.U8[uint32(rng.IntN(40))] = uint32(rng.IntN(3))
		n.B8[rng.IntN(2) == 0] = fmt.Sprint(rng.IntN(3))
	case 21:
		if len(n.Log) > 1 {
			i, j := rng.IntN(len(n.Log)), rng.IntN(len(n.Log))
			n.Log[i], n.Log[j] = n.Log[j], n.Log[i]
		}
	case 22:
		if len(n.Log) > 0 {
			n.Log = n.Log[:rng.IntN(len(n.Log))]
		}
	case 23:
		if len(n.Log) > 5 {
			copy(n.Log, n.Log[1:]) // shift in place
		}
	}
}

// TestMemoAttackRandomMixed compares AppendMemo with Flatten over many steps of a
// state mixing every kind of remembered slice and map, with memos used in
// turn, twice, and as their own previous.
func TestMemoAttackRandomMixed(t *testing.T) { memoAttackRandomMixed(t, 4) }

// TestMemoAttackRandomMixedNoArray is TestMemoAttackRandomMixed without the interface
// field ever holding an array (TestMemoAttackStaleCopyArrayThenSlice's bug), to
// look for others.
func TestMemoAttackRandomMixedNoArray(t *testing.T) {
	memoAttackNoArray = true
	defer func() { memoAttackNoArray = false }()
	memoAttackRandomMixed(t, 2)
}

func memoAttackRandomMixed(t *testing.T, seeds uint64) {
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 37))
		n := &memoAttackNode{M: map[string]int64{}, M2: map[memoAttackIntK]string{}, Named: map[memoAttackKey]bool{}, FM: map[string]float64{}, PK: map[*memoAttackRec]int{}, U8: map[uint32]uint32{}, B8: map[bool]string{}}
		var f Flattener
		memos := [2]*Memo{{}, {}}
		var prev []Leaf
		for step := range 1500 {
			n.mutate(rng, step)
			want := Flatten(n)
			in, out := memos[(step+1)%2], memos[step%2]
			if step == 0 {
				in = nil
			}
			switch step % 53 {
			case 20:
				_ = f.AppendMemo(nil, n, prev, in, &Memo{})
			case 40:
				out = in // its own previous
				if out == nil {
					out = &Memo{}
				}
				memos[step%2], memos[(step+1)%2] = out, out
			}
			dst := make([]Leaf, step%3) // leaves after others
			for i := range dst {
				dst[i] = Leaf{"@x", "y"}
			}
			got := f.AppendMemo(dst, n, prev, in, out)
			sameAsFlatten(t, step, got[len(dst):], want, prev, f.Matched())
			prev = got[len(dst):]
			if step%53 == 40 {
				memos = [2]*Memo{{}, {}}
				memos[step%2] = out
			}
		}
		t.Logf("seed %d: copied %d (plain %d) maps %d", seed, f.copied, f.copiedPlain, f.copiedMaps)
	}
}

// A string changed in place through unsafe (its bytes rewritten under
// one header) is not told apart by a slice's memory comparison: Go's
// strings are immutable, and unsafe.String forbids it (docs/decisions.md,
// "Session 37"). A map's sum reads the bytes, so a map of such strings is.
// TestMemoAttackUnsafeStringInPlaceMap: the same for a map of strings (the sum
// re-reads the bytes, so this is expected to pass).
func TestMemoAttackUnsafeStringInPlaceMap(t *testing.T) {
	type N struct{ M map[int]string }
	bufs := make([][]byte, 40)
	n := &N{M: map[int]string{}}
	for i := range 40 {
		bufs[i] = []byte("aaaa")
		n.M[i] = unsafe.String(&bufs[i][0], 4)
	}
	var f Flattener
	m1, m2 := &Memo{}, &Memo{}
	prev := f.AppendMemo(nil, n, nil, nil, m1)
	copy(bufs[3], "bbbb")
	want := Flatten(n)
	got := f.AppendMemo(nil, n, prev, m1, m2)
	if !slices.Equal(got, want) {
		t.Errorf("map: got %v want %v", got[3], want[3])
	}
}

// TestMemoAttackStaleCopyArrayThenSlice: a path (an interface field) holding a
// long slice, then an array of the same element type for two steps, then
// the first slice again. The memo refilled by the array keeps the copy of
// the slice from three flattenings before (an array sets no copy, and
// reset does not clear it); the next flattening compares the slice with
// that stale copy and copies the leaves the array had.
func TestMemoAttackStaleCopyArrayThenSlice(t *testing.T) {
	type E struct{ A int }
	type N struct{ Any any }
	s := make([]E, 40)
	var arr [40]E
	for i := range arr {
		arr[i].A = 1
	}
	n := &N{}
	states := []any{s, arr, arr, s}
	var f Flattener
	memos := [2]*Memo{{}, {}}
	var prev []Leaf
	for step, v := range states {
		n.Any = v
		in, out := memos[(step+1)%2], memos[step%2]
		if step == 0 {
			in = nil
		}
		want := Flatten(n)
		got := f.AppendMemo(nil, n, prev, in, out)
		if !slices.Equal(got, want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("step %d: leaf %d is %v, Flatten's %v", step, i, got[i], want[i])
				}
			}
		}
		prev = got
	}
}

// TestMemoAttackStaleCopyPooledMemo: the statedb build reuses a pooled state's
// memo for any node. A memo whose path last held an array keeps a copy
// made for another state entirely.
func TestMemoAttackStaleCopyPooledMemo(t *testing.T) {
	type E struct{ A int }
	type N struct{ Any any }
	var f Flattener
	// node X: its memo ends up holding a copy of X's slice of zeros.
	x := &N{Any: make([]E, 40)}
	mx := &Memo{}
	_ = f.AppendMemo(nil, x, nil, nil, mx)
	// the memo goes back to the pool and is node Y's next: Y holds an
	// array of ones there.
	var arr [40]E
	for i := range arr {
		arr[i].A = 1
	}
	y := &N{Any: arr}
	my0 := &Memo{}
	prevY := f.AppendMemo(nil, y, nil, nil, my0)
	y1 := f.AppendMemo(nil, y, prevY, my0, mx) // mx refilled by the array
	// Y's next state: a slice of zeros.
	y.Any = make([]E, 40)
	want := Flatten(y)
	got := f.AppendMemo(nil, y, y1, mx, &Memo{})
	if !slices.Equal(got, want) {
		t.Fatalf("leaf 0 %v, Flatten's %v", got[0], want[0])
	}
}
