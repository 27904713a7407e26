package sim_test

import (
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/world"
)

// A message in flight in a world is lost by the parent run once its
// receiver's own clock has passed the end of its latency window; before
// that, and for a receiver that never ran, it may still be on its way.
func TestLostByParent(t *testing.T) {
	times := []int64{0, 4e6, 9e6, 15e6} // the steps' times, ns
	stepTime := func(step int) int64 { return times[step] }
	m := world.Message{ID: node.MsgID{From: "n1", Seq: 1}, To: "n2", SentAt: 4e6, SendStep: 1}
	for _, c := range []struct {
		last int
		want bool
	}{{-1, false}, {1, false}, {2, false}, {3, true}} {
		w := &world.World{Node: map[node.ID]*world.Node{"n2": {LastStep: c.last}}}
		if got := sim.LostByParent(w, m, stepTime, 10*time.Millisecond); got != c.want {
			t.Errorf("receiver's last step #%d: lost %v, want %v", c.last, got, c.want)
		}
	}
}
