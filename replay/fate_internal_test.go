package replay

import (
	"math/rand/v2"
	"testing"

	"github.com/replaycheck/replaycheck/node"
)

// TestDownOverSearchesAsAScanWould: whether a node was down over a
// window, found by a binary search over its crashes, is what a scan of
// every crash finds, also when a live node's clock stepped back (its
// intervals out of order or overlapping).
func TestDownOverSearchesAsAScanWould(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		n := &network{down: map[node.ID][][2]int64{}}
		var all [][2]int64
		for range r.IntN(12) {
			start := r.Int64N(1000)
			end := start + 1 + r.Int64N(200)
			if r.IntN(5) == 0 {
				end = 1<<63 - 1 // never restarted
			}
			n.down["n1"] = append(n.down["n1"], [2]int64{start, end})
			all = append(all, [2]int64{start, end})
		}
		n.index()
		for range 100 {
			from := r.Int64N(1300)
			to := from + r.Int64N(300)
			want := false
			for _, d := range all {
				want = want || d[0] <= from && to < d[1]
			}
			if got := n.downOver("n1", from, to); got != want {
				t.Fatalf("round %d: down over [%d, %d] = %v, a scan of %v says %v", round, from, to, got, all, want)
			}
		}
		if n.downOver("n2", 0, 1) {
			t.Fatal("a node that never crashed was down")
		}
	}
}
