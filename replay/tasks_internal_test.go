package replay

import (
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/lockserver"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/system"
)

// TestSeekBackRebuildsTaskNodesFromTheirLastRestart: a clerk of the lock
// service always has live tasks, so no checkpoint can copy it; a step
// back rebuilds it from its last restart (on its disk as it was then)
// rather than from the start, and lands in the state a straight replay
// has there.
func TestSeekBackRebuildsTaskNodesFromTheirLastRestart(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Churn, cfg.Time = 4, 2, 3*time.Second
	cfg.DownMin, cfg.DownMax = 10*time.Millisecond, 50*time.Millisecond
	tr := simulated(t, lockserver.System, cfg)
	reg := system.NewRegistry(lockserver.System)
	// The straight replay's state hashes of c1 at every step.
	straight, err := New(tr, reg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want []uint64
	if err := straight.RunTo(tr.Len()-1, func(int) error {
		h := uint64(0)
		if in := straight.Instance("c1"); in.Handler() != nil {
			h = state.Hash(in.Handler())
		}
		want = append(want, h)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	straight.Close()

	r, err := New(tr, reg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := NewCursor(r, 200)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Seek(tr.Len() - 1); err != nil {
		t.Fatal(err)
	}
	n := r.nodes["c1"]
	if len(n.restarts) == 0 {
		t.Fatal("c1 never restarted: pick a seed with churn at c1")
	}
	last := n.restarts[len(n.restarts)-1].step
	steps := tr.NodeSteps("c1")
	// Back to an event of c1 two checkpoints after its last restart, so
	// that the checkpoint the cursor restores is after the restart.
	target := -1
	for _, s := range steps {
		if s > last+2*200 {
			target = s
			break
		}
	}
	if target < 0 {
		t.Fatalf("c1 has too few events after its last restart at #%d", last)
	}
	if err := c.Seek(target); err != nil {
		t.Fatal(err)
	}
	if r.Instance("c1").LiveTasks() == 0 {
		t.Fatal("c1 has no live tasks there: the test would not exercise a rebuild")
	}
	since := 0 // c1's events from its last restart to the target
	for _, s := range steps {
		if s >= last && s <= target {
			since++
		}
	}
	if got := r.nodes["c1"].rebuilt; got == 0 || got > since {
		t.Fatalf("the rebuild re-executed %d events; c1 has %d from its last restart (#%d) to #%d, %d in all",
			got, since, last, target, len(steps))
	}
	for _, pos := range []int{target, target - 1, target - 2} {
		if err := c.Seek(pos); err != nil {
			t.Fatal(err)
		}
		got := uint64(0)
		if h := r.Instance("c1").Handler(); h != nil {
			got = state.Hash(h)
		}
		if got != want[pos] {
			t.Fatalf("c1 at #%d after seeking back differs from the straight replay", pos)
		}
	}
	// Forward again, through the rest of the trace: the rebuilt node and
	// its tasks replay on without divergence.
	if err := c.Seek(tr.Len() - 1); err != nil {
		t.Fatal(err)
	}
}
