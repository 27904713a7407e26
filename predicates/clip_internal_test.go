package predicates

import (
	"strings"
	"testing"
)

// TestClipPairShowsWhereTheyDiffer: a refusal quotes two long
// descriptions around their first difference, not their first 200
// characters, which read the same.
func TestClipPairShowsWhereTheyDiffer(t *testing.T) {
	common := strings.Repeat("deps col 2 of row 2 n4; ", 12)
	a, b := clipPair(common+"col 5 of row 7", common+"col 6 of row 7")
	if a == b || !strings.Contains(a, "col 5") || !strings.Contains(b, "col 6") || !strings.HasPrefix(a, "...") {
		t.Fatalf("clipped to %q and %q", a, b)
	}
	if a, b := clipPair("x", ""); a != "x" || b != "nothing" {
		t.Fatalf("short ones: %q and %q", a, b)
	}
}
