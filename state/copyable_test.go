package state_test

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/state"
)

type ticker struct {
	n    int
	tick func()
}

func (t *ticker) inc() { t.n++ }

type holder struct {
	Any  any
	List []func() string
}

// TestCopyableKnowsWhatACopyCannotRebind: a method value or a closure
// bound to the state makes a copy act on the original, so such state is
// not copyable; a top-level function or no function is.
func TestCopyableKnowsWhatACopyCannotRebind(t *testing.T) {
	bound := &ticker{}
	bound.tick = bound.inc // what etcd raft does with r.tick
	n := 0
	closure := &ticker{tick: func() { n++ }}
	for _, tc := range []struct {
		name string
		v    any
		want bool
	}{
		{"no functions", &struct{ A, B int }{1, 2}, true},
		{"a nil function", &ticker{}, true},
		{"a method value in a list", &holder{List: []func() string{new(strings.Builder).String}}, false},
		{"a package function", &holder{Any: strings.ToUpper}, true},
		{"a method value", bound, false},
		{"a closure", closure, false},
		{"a method value behind an interface", &holder{Any: bound}, false},
		{"a channel", &holder{Any: make(chan int)}, false},
	} {
		if got := state.Copyable(tc.v); got != tc.want {
			t.Errorf("%s: Copyable = %v, want %v", tc.name, got, tc.want)
		}
	}
	// And why it matters: the copy's function still acts on the original.
	cp := state.Clone(bound)
	cp.tick()
	if cp.n != 0 || bound.n != 1 {
		t.Fatalf("a copied method value acted on the copy (copy %d, original %d): Copyable is too strict", cp.n, bound.n)
	}
}
