package predicates

import (
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/predicates/internal/dd"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// TestIndexStaysBounded: a node crashing and restarting thousands of
// times makes new rows each time, and readers of the old rows' columns go
// stale; the dependency index must not keep them all (memory would grow
// with the trace, not with what is read).
func TestIndexStaysBounded(t *testing.T) {
	const cycles = 2000
	c := ddChecker(t, func(ctl system.Controller) {
		for i := range cycles {
			at := time.Duration(3*i+1) * time.Millisecond
			ctl.At(at, func() { ctl.Input("n2", dd.Cmd{Op: "set", Args: []string{"V", "1"}}) })
			ctl.At(at+time.Millisecond, func() { ctl.Crash("n2") })
			ctl.At(at+2*time.Millisecond, func() { ctl.Restart("n2") })
		}
	}, sim.Config{Seed: 1, Nodes: 3, Time: time.Duration(3*cycles+5) * time.Millisecond, Drop: 0, Dup: 0, Churn: 0}, `Cell = table("dd.Cell")
ByV = ordered("byv", Cell, by = lambda c: c.V)
d = derived("v2", lambda: Cell["n2"].V + len(Cell["n2"].Name) if Cell.get("n2") else -1)
safety("Small", lambda: forall(Cell, lambda c: c.V < 5 and ByV.ceiling(c.V) != None))
`)
	rep, err := c.Run(RunOptions{})
	if err != nil || rep.Err() != nil {
		t.Fatal(err, rep.Err())
	}
	if rep.Steps < 3*cycles {
		t.Fatalf("checked %d steps, want at least %d", rep.Steps, 3*cycles)
	}
	entries := 0
	for _, rs := range c.index {
		entries += len(rs)
	}
	// About ten readers per cycle are added; at most 4,096 stale ones
	// wait for a sweep, plus what is live now.
	if entries > 6000 || len(c.index) > 6000 {
		t.Errorf("after %d crash-restart cycles the index holds %d readers under %d dependencies: it grows with the trace", cycles, entries, len(c.index))
	}
}
