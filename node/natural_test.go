package node

import (
	"slices"
	"testing"
)

func TestNaturalLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"n2", "n10", true},
		{"n10", "n2", false},
		{"n2", "n2", false},
		{"n1", "n1a", true},
		{"a", "b", true},
		{"n9", "m10", false},
		{"n02", "n2", true}, // equal value: byte order breaks the tie
		{"n2", "n02", false},
		{"x99999999999999999999999", "x100000000000000000000000", true},
		{"", "n1", true},
		{"n1b2", "n1b10", true},
	} {
		if got := NaturalLess(c.a, c.b); got != c.want {
			t.Errorf("NaturalLess(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestSortNatural(t *testing.T) {
	ids := []ID{"n10", "n1", "client", "n2", "n11", "n3"}
	SortNatural(ids)
	want := []ID{"client", "n1", "n2", "n3", "n10", "n11"}
	if !slices.Equal(ids, want) {
		t.Fatalf("got %v, want %v", ids, want)
	}
}
