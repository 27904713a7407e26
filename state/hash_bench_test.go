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
