package replay

import (
	"math/rand/v2"
	"testing"

	"github.com/replaycheck/replaycheck/record"
)

// gapCover answers by search what a walk over every gap answered (a file
// of 100,000 gaps of one node made that walk quadratic): the same answer
// on random, overlapping gaps, some to the end.
func TestGapCoverAnswersAsAWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var gaps []record.Gap
		for range r.IntN(12) {
			from := 1 + r.Uint64N(60)
			to := uint64(0)
			if r.IntN(5) > 0 {
				to = from + r.Uint64N(15)
			}
			gaps = append(gaps, record.Gap{Node: "n1", From: from, To: to})
		}
		c := newGapCover(gaps)
		for from := uint64(1); from < 80; from++ {
			for to := from; to < from+20; to++ {
				walk := false
				for _, g := range gaps {
					if g.From <= from && (g.To == 0 || g.To >= to) {
						walk = true
					}
				}
				if got := c.covers(from, to); got != walk {
					t.Fatalf("round %d, gaps %+v: covers(%d, %d) = %v, a walk says %v", round, gaps, from, to, got, walk)
				}
			}
		}
	}
	if (gapCover{}).covers(1, 1) {
		t.Fatal("a node without gaps has seqs covered")
	}
}
