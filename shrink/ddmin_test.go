package shrink

import (
	"slices"
	"testing"
)

func TestDDMinFindsTheFailureInducingItems(t *testing.T) {
	all := make([]int, 100)
	for i := range all {
		all[i] = i
	}
	cases := []struct {
		name string
		need []int
	}{
		{"one item", []int{37}},
		{"two far apart", []int{3, 91}},
		{"a run", []int{40, 41, 42, 43}},
		{"first and last", []int{0, 99}},
		{"nothing", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tests := 0
			got := ddmin(all, func(keep []int) bool {
				tests++
				for _, n := range c.need {
					if !slices.Contains(keep, n) {
						return false
					}
				}
				return true
			}, func() bool { return false })
			if !slices.Equal(got, c.need) {
				t.Fatalf("ddmin kept %v, want %v", got, c.need)
			}
			// Logarithmic in the input for a few needed items, not linear.
			if tests > 20*(len(c.need)+1)*7 {
				t.Errorf("%d tests for %d items", tests, len(all))
			}
		})
	}
}

func TestDDMinIsOneMinimalForInteractingItems(t *testing.T) {
	// Fails when at least two of {10, 20, 30} are kept: any one-minimal
	// answer keeps exactly two.
	all := []int{1, 5, 10, 15, 20, 25, 30, 35}
	got := ddmin(all, func(keep []int) bool {
		n := 0
		for _, k := range keep {
			if k == 10 || k == 20 || k == 30 {
				n++
			}
		}
		return n >= 2
	}, func() bool { return false })
	if len(got) != 2 {
		t.Fatalf("ddmin kept %v, want two of 10, 20, 30", got)
	}
}

func TestDDMinStopsWhenTold(t *testing.T) {
	all := []int{1, 2, 3, 4, 5, 6, 7, 8}
	calls := 0
	got := ddmin(all, func(keep []int) bool { calls++; return true }, func() bool { return calls >= 1 })
	if calls != 1 || len(got) != 4 {
		t.Fatalf("after stop: %d tests, kept %v; want 1 test and the half it kept", calls, got)
	}
}

func TestSplitCoversEveryItemOnce(t *testing.T) {
	items := []int{1, 2, 3, 4, 5, 6, 7}
	for n := 1; n <= 9; n++ {
		var back []int
		for _, c := range split(items, n) {
			if len(c) == 0 {
				t.Fatalf("n=%d: an empty chunk", n)
			}
			back = append(back, c...)
		}
		if !slices.Equal(back, items) {
			t.Fatalf("n=%d: chunks %v", n, back)
		}
	}
}
