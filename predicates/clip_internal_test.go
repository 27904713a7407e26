package predicates

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestClipPairShowsWhereTheyDiffer: a refusal quotes two long
// descriptions around their first difference, not their first 200
// characters, which read the same.
func TestClipPairShowsWhereTheyDiffer(t *testing.T) {
	common := strings.Repeat("deps col 2 of row 2 n4; ", 12)
	a, b := clipPair(common+"col 5 of row 7", common+"col 6 of row 7")
	if a == b || !strings.Contains(a, "col 5") || !strings.Contains(b, "col 6") || !strings.HasPrefix(a, "deps col 2 of ...") {
		t.Fatalf("clipped to %q and %q", a, b)
	}
	if a, b := clipPair("x", ""); a != "x" || b != "nothing" {
		t.Fatalf("short ones: %q and %q", a, b)
	}
}

// A refused seam quoted the two values of a derived value far from their
// start, without the value's name: "... where the warm-up has ...), ..."
// (a new user's). The clipped text keeps what the entry is.
func TestClipPairKeepsWhichEntryDiffers(t *testing.T) {
	long := strings.Repeat(`("c2", 41), `, 40)
	a, b := clipPair("derived value committed (#2) = ["+long+`("c1", 7)]`, "derived value committed (#2) = ["+long+`("c1", 8)]`)
	for _, x := range []string{a, b} {
		if !strings.HasPrefix(x, "derived value committed (#2) = ...") || len(x) > 2*clipLen {
			t.Fatalf("clipped to %q", x)
		}
	}
	if !strings.Contains(a, `("c1", 7)`) || !strings.Contains(b, `("c1", 8)`) {
		t.Fatalf("the difference is gone: %q and %q", a, b)
	}
	// A row's entry keeps its table, node and path.
	a, _ = clipPair(`row vr.Replica r1 "" 1f "`+long+`7"`, `row vr.Replica r1 "" 1f "`+long+`8"`)
	if !strings.HasPrefix(a, `row vr.Replica r1 "" ...`) {
		t.Fatalf("a row's entry clipped to %q", a)
	}
}

// Clipping cut inside a multi-byte character (invalid UTF-8 on stderr),
// and a label whose " = " came late, or that had few spaces, was dropped
// whole (an attack).
func TestClipPairKeepsRunesAndLongLabels(t *testing.T) {
	long := strings.Repeat("é", 300)
	a, b := clipPair("derived value d (#0) = "+long+"x", "derived value d (#0) = "+long+"y")
	for _, x := range []string{a, b, clip(long)} {
		if !utf8.ValidString(x) {
			t.Fatalf("clipped inside a character: %q", x)
		}
	}
	name := strings.Repeat("n", 200)
	a, _ = clipPair("derived value "+name+" (#0) = "+long+"x", "derived value "+name+" (#0) = "+long+"y")
	if !strings.HasPrefix(a, "derived value nnn") || !strings.Contains(a, "... = ") {
		t.Fatalf("a long name's label: %q", a)
	}
	word := strings.Repeat("w", 300)
	a, _ = clipPair(word+"x", word+"y")
	if !strings.HasPrefix(a, "www") {
		t.Fatalf("a label without spaces: %q", a)
	}
}
