package state

import (
	"math"
	"strings"
	"testing"
)

// A map with NaN keys holds one entry per NaN, none of them found by its
// key (NaN != NaN). Read key by key, every value was lost (nil in
// replay state, None in predicates); in the iterator's random order, the
// state hash could differ between two runs of one state (a hostile pass).
type nanKeyed struct{ M map[float64]int }

func nanState(order []int) nanKeyed {
	s := nanKeyed{M: map[float64]int{1.5: 7}}
	for _, v := range order {
		s.M[math.NaN()] = v
	}
	return s
}

func TestMapsWithNaNKeys(t *testing.T) {
	var leaves []string
	for _, l := range Flatten(nanState([]int{0, 1, 2})) {
		leaves = append(leaves, l.Path+"="+l.Value)
	}
	got := strings.Join(leaves, " ")
	// Each NaN entry has a path of its own (they all read "M[NaN]", and
	// the predicates' rows, keyed by path, merged them).
	for _, want := range []string{"M[NaN]=", "M[NaN#2]=", "M[NaN#3]=", "M[1.5]=7"} {
		if !strings.Contains(got, want) {
			t.Errorf("flattened %s: no %s", got, want)
		}
	}
	for _, want := range []string{"=0", "=1", "=2"} {
		if !strings.Contains(got, want+" ") && !strings.HasSuffix(got, want) {
			t.Errorf("flattened %s: no value %s", got, want)
		}
	}
	h := Hash(nanState([]int{0, 1, 2}))
	for range 20 {
		if Hash(nanState([]int{2, 0, 1})) != h {
			t.Fatal("one state with NaN keys hashes two ways")
		}
	}
	if Hash(nanState([]int{0, 1, 3})) == h {
		t.Fatal("the values under NaN keys do not count in the hash")
	}
}
