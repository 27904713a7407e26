package statedb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/replaycheck/replaycheck/state"
)

// deltaState is a state whose shape changes from step to step: entries
// come and go (at the front too, which moves every later leaf further
// than a flattening looks), an interface changes type, and NaN keys
// print alike.
type deltaState struct {
	Log   []int
	Peers map[string]int
	Any   any
	NaNs  map[float64]int
	Tail  []string
}

// xy and yx hold fields of the same names in other orders: an interface
// that changes from one to the other reorders leaves that stay.
type xy struct{ X, Y int }
type yx struct{ Y, X int }

func randomState(rng *rand.Rand) deltaState {
	s := deltaState{Peers: map[string]int{}, NaNs: map[float64]int{}}
	for range rng.IntN(40) {
		s.Log = append(s.Log, rng.IntN(3))
	}
	for range rng.IntN(30) {
		s.Peers[fmt.Sprintf("n%d", rng.IntN(60))] = rng.IntN(3)
	}
	switch rng.IntN(5) {
	case 0:
		s.Any = rng.IntN(2)
	case 1:
		s.Any = []string{"a", fmt.Sprint(rng.IntN(2))}
	case 2:
		s.Any = xy{rng.IntN(2), 1}
	case 3:
		s.Any = yx{rng.IntN(2), 1}
	}
	for range rng.IntN(3) {
		s.NaNs[math.NaN()] = rng.IntN(2)
	}
	for range rng.IntN(5) {
		s.Tail = append(s.Tail, fmt.Sprint(rng.IntN(2)))
	}
	return s
}

// TestDiffMatchedIsDiffLeaves: the delta the writer computes from the
// flattening's matches, applied to the state before, gives the state
// after, and changes the same fields as the delta computed by path.
func TestDiffMatchedIsDiffLeaves(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var f state.Flattener
	var prev []state.Leaf
	used := make([]bool, 0)
	fallbacks := 0
	for step := range 3000 {
		cur := f.Append(nil, randomState(rng), prev)
		from := slices.Clone(f.Matched())
		if len(from) != len(cur) {
			t.Fatalf("step %d: %d matches for %d leaves", step, len(from), len(cur))
		}
		if cap(used) < len(prev) {
			used = make([]bool, len(prev))
		}
		d, ok := diffMatched(prev, cur, from, used)
		want := diffLeaves(prev, cur)
		if !ok {
			fallbacks++
			prev = cur
			continue
		}
		got, err := d.apply(slices.Clone(prev))
		if err != nil || !slices.Equal(got, cur) {
			t.Fatalf("step %d: applied, the delta gives %v (%v), want %v", step, got, err, cur)
		}
		if fields(d) != fields(want) {
			t.Fatalf("step %d: fields changed\n%s\nby path:\n%s", step, fields(d), fields(want))
		}
		prev = cur
	}
	t.Logf("%d of 3000 steps fell back", fallbacks)
	if fallbacks == 0 || fallbacks > 2000 {
		t.Errorf("%d of 3000 steps fell back to the diff by path: want some (the NaN keys) and not most", fallbacks)
	}
}

// fields is what a delta writes to the field versions: paths removed,
// and paths set with their values.
func fields(d delta) string {
	removed := slices.Sorted(slices.Values(d.removed))
	var set []string
	for _, c := range d.set {
		set = append(set, c.path+"="+c.value)
	}
	slices.Sort(set)
	return fmt.Sprintf("removed %v set %v", removed, set)
}
