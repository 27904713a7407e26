package state

import (
	"strings"
	"testing"
	"time"
)

type loopHolder struct {
	S    []any
	Tree []loopTree
}

type loopTree []loopTree

// selfHolding builds a handler whose slice holds itself twice, and a
// slice of its own type holding itself: shapes no walk may follow
// forever.
func selfHolding() *loopHolder {
	s := make([]any, 3)
	s[0], s[1], s[2] = s, s, "x"
	tr := make(loopTree, 2)
	tr[0] = tr
	tr[1] = loopTree{}
	return &loopHolder{S: s, Tree: []loopTree{tr}}
}

// A slice holding itself twice through interfaces hashed for ever (each
// lap doubled the walk until 4,096 levels deep); its hash and flattening
// now end, show where the slice is inside itself, and are canonical.
func TestSlicesHoldingThemselves(t *testing.T) {
	done := make(chan [2]uint64)
	go func() { done <- [2]uint64{Hash(selfHolding()), Hash(selfHolding())} }()
	var sums [2]uint64
	select {
	case sums = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("hashing a slice that holds itself twice did not end")
	}
	if sums[0] != sums[1] {
		t.Errorf("two equal self-holding states hash %x and %x", sums[0], sums[1])
	}
	if got, want := sums[0], specHash(selfHolding()); got != want {
		t.Errorf("hash %x, the spec's %x", got, want)
	}
	// Another shape of loop is another state.
	other := selfHolding()
	inner := []any{other.S}
	other.S[1] = inner
	if Hash(other) == sums[0] {
		t.Error("a slice holding itself and one holding it one level further down hash alike")
	}
	leaves := map[string]string{}
	for _, l := range Flatten(selfHolding()) {
		leaves[l.Path] = l.Value
	}
	for path, want := range map[string]string{
		"S[0]":       "(same as S)",
		"S[1]":       "(same as S)",
		"S[2]":       `"x"`,
		"Tree[0][0]": "(same as Tree[0])",
		"Tree[0][1]": "[]",
	} {
		if leaves[path] != want {
			t.Errorf("%s shows %q, want %q (all: %v)", path, leaves[path], want, leaves)
		}
	}
	for p := range leaves {
		if strings.Count(p, "[") > 3 {
			t.Errorf("a path walks the loop: %s", p)
		}
	}
}

// A slice of a type that cannot hold itself is hashed as before: the
// golden hashes pin that; here, that a slice shared by two fields is
// still shown in full at both.
func TestSharedSliceIsNotALoop(t *testing.T) {
	shared := []any{1, 2}
	v := &struct{ A, B []any }{shared, shared}
	got := map[string]string{}
	for _, l := range Flatten(v) {
		got[l.Path] = l.Value
	}
	if got["A[1]"] != "2" || got["B[1]"] != "2" {
		t.Errorf("a shared slice is not shown in full twice: %v", got)
	}
}
