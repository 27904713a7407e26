package state_test

import (
	"fmt"
	"testing"

	"github.com/replaycheck/replaycheck/state"
)

// acceptorLike has the shape of a Paxos leader's tallies: a map of maps
// with string keys and values, beside plain fields.
type acceptorLike struct {
	Round   int64
	Value   string
	Accepts map[int64]map[string]string
}

func BenchmarkHashMapOfMaps(b *testing.B) {
	s := acceptorLike{Round: 7, Value: "x1", Accepts: map[int64]map[string]string{}}
	for r := range int64(4) {
		s.Accepts[r] = map[string]string{}
		for n := range 7 {
			s.Accepts[r][fmt.Sprintf("n%d", n)] = fmt.Sprintf("x%d", r)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		state.Hash(&s)
	}
}

type storeLike struct {
	Store map[string]*acceptorLike
}

func storeOf(n int) *storeLike {
	s := &storeLike{Store: map[string]*acceptorLike{}}
	for i := range n {
		s.Store[fmt.Sprintf("k%d", i)] = &acceptorLike{Round: int64(i)}
	}
	return s
}

// BenchmarkHashSmallAfterBig hashes a small state of a type after one big
// state of it went through the same pooled hasher: the cost must be the
// small state's, not the big one's (the hasher's scratch once made every
// later map pay for the largest map of its type).
func BenchmarkHashSmallAfterBig(b *testing.B) {
	state.Hash(storeOf(100_000))
	small := storeOf(10)
	b.ReportAllocs()
	for b.Loop() {
		state.Hash(small)
	}
}
