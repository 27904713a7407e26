package state

import (
	"fmt"
	"strings"
	"testing"
)

// Shapes for the golden hashes below: maps of each kind the hasher walks
// differently (reference-free maps entry by entry, maps with references
// sorted, keys with and without a natural order), nested, side by side,
// aliased, and with entries too long for the hasher's buffer.
type goldenTally struct {
	Round   int64
	Accepts map[int64]map[string]string
	Again   map[int64]map[string]string
	Long    map[string]string
	Deep    map[string]map[string]map[int]string
	Ptrs    map[string]*inner
	Arrays  map[[2]int]*int
	Any     []any
}

func goldenStates() []any {
	t := &goldenTally{Round: 7, Accepts: map[int64]map[string]string{}, Again: map[int64]map[string]string{},
		Long: map[string]string{}, Deep: map[string]map[string]map[int]string{}, Ptrs: map[string]*inner{}, Arrays: map[[2]int]*int{}}
	for r := range int64(6) {
		t.Accepts[r] = map[string]string{}
		t.Again[r*3] = map[string]string{}
		for n := range 7 {
			t.Accepts[r][fmt.Sprintf("n%d", n)] = fmt.Sprintf("x%d", r)
			t.Again[r*3][fmt.Sprintf("m%d", n+int(r))] = strings.Repeat("v", n)
		}
	}
	t.Long["a"] = strings.Repeat("long", 2000) // past the hasher's buffer
	t.Long["b"] = "short"
	t.Long["c"] = strings.Repeat("z", 5000)
	for i := range 4 {
		k := fmt.Sprintf("d%d", i)
		t.Deep[k] = map[string]map[int]string{}
		for j := range 3 {
			t.Deep[k][fmt.Sprintf("e%d", j)] = map[int]string{i: k, j: "j", i + j + 10: strings.Repeat("q", i*j)}
		}
	}
	shared := &inner{5, "shared"}
	t.Ptrs["p"], t.Ptrs["q"], t.Ptrs["r"] = shared, &inner{6, "own"}, shared
	one, two := 1, 2
	t.Arrays[[2]int{3, 1}], t.Arrays[[2]int{1, 3}], t.Arrays[[2]int{2, 2}] = &one, &two, &one
	t.Any = []any{t.Accepts[1], map[string]int{"k": 1, "j": 2}, t.Ptrs}
	return []any{t, t.Accepts, build(false), map[string]map[string]string{}, &goldenTally{}}
}

// TestHashesAreThoseOfEarlierReleases: a trace records state hashes, so
// the hash of a state is part of the trace format. Whatever makes hashing
// cheaper must leave every value as it was, or every trace recorded before
// diverges on replay. The values are those of the release before the
// hasher kept its scratch values (commit 64e62d6).
func TestHashesAreThoseOfEarlierReleases(t *testing.T) {
	want := []struct {
		sum  uint64
		size int
	}{
		{0x82b37fdbc3d872c2, 1174},
		{0x64ee9eb212a70df, 171},
		{0x718832b430c139e1, 229},
		{0x37916622361fac99, 9},
		{0x1f2a3f531fc34ac7, 26},
	}
	for i, s := range goldenStates() {
		for range 3 { // again, with the pooled hasher's scratch values in use
			sum, size := HashSize(s)
			if sum != want[i].sum || size != want[i].size {
				t.Errorf("state %d: hash %#x, size %d; want %#x, %d", i, sum, size, want[i].sum, want[i].size)
			}
		}
	}
}
