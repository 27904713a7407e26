package replay

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMergeRunsSorts: whatever runs the input consists of (one, a few,
// more than maxRuns, with ties), mergeRuns returns what sorting does.
func TestMergeRunsSorts(t *testing.T) {
	type item struct{ key, pos int }
	order := func(a, b item) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, runs := range []int{1, 2, 3, 7, 64, 65, 300} {
		for trial := range 20 {
			var xs []item
			for range runs {
				// A sorted run of keys from a small range: ties across runs.
				n := rng.IntN(50)
				if trial == 0 {
					n = 1 + rng.IntN(3)
				}
				keys := make([]int, n)
				for i := range keys {
					keys[i] = rng.IntN(40)
				}
				slices.Sort(keys)
				for _, k := range keys {
					xs = append(xs, item{k, len(xs)})
				}
			}
			want := slices.Clone(xs)
			slices.SortFunc(want, order)
			if got := mergeRuns(slices.Clone(xs), order); !slices.Equal(got, want) {
				t.Fatalf("%d runs, trial %d: merged %v, sorted %v", runs, trial, got, want)
			}
		}
	}
}
