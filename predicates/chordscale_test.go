package predicates_test

import (
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

// TestChordScriptWorkPerStep counts, through the checker's step stats,
// what scripts/chord.star re-evaluates while 300 chord nodes join (a ring
// of 2^16 positions; both liveness intervals stay open throughout): a
// step re-runs a few quantifier bodies and ordered-index keys, whatever
// the number of nodes, and the stability measure and alarm run only at
// steps that change what they read (the population or the time), not at
// every step an interval is open. Work that grows with the number of
// nodes would show as hundreds of bodies in one step. The run records
// causal clocks only, as a live recording does: replayed in time order
// (a simulation's default) the frontier advances at nearly every step,
// and the measure rightly runs at each.
func TestChordScriptWorkPerStep(t *testing.T) {
	const nodes = 300
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Nodes, cfg.Steps, cfg.Time = 1, nodes, 6000, time.Hour
	cfg.CausalClocks = true
	cfg.Params = map[string]string{"bits": "16"}
	tr, err := replay.FromBytes(simTrace(t, "chord", cfg), "chord.lz4")
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(tr, examples.Registry(), replay.Options{SkipStateHashes: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := predicates.Load("../scripts/chord.star", r, predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	var aux, askable int
	front := int64(-1 << 62)
	for r.Next() == nil {
		if err := c.Observe(); err != nil {
			t.Fatal(err)
		}
		st, ev := c.LastStep(), r.Recorded()
		if st.Bodies > 16 || st.Keys > 4 || st.Aux > 2 || st.Rows > 0 {
			t.Fatalf("step #%d (%s %s) re-ran %d bodies, %d keys and %d aux or alarm functions and looped over %d rows; want at most 16, 4, 2 and none with %d nodes",
				r.Pos(), ev.Node, ev.Kind, st.Bodies, st.Keys, st.Aux, st.Rows, nodes)
		}
		aux += st.Aux
		// What stability() reads changes only here: the time frontier
		// advanced, or a node came up (the population).
		if ev.Time > front || ev.Kind == node.KindInit || ev.Kind == node.KindRestart || ev.Kind == node.KindCrash {
			askable++
		}
		front = max(front, ev.Time)
	}
	rep := c.Finish()
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	steps := tr.Len()
	open := 0
	for _, v := range rep.Violations {
		if v.Predicate == "RingConsistent" {
			end := v.EndStep
			if end < 0 {
				end = steps
			}
			open += end - v.Step
		}
	}
	if open < steps*9/10 {
		t.Fatalf("RingConsistent was open for %d of %d steps: the run does not test an interval kept open", open, steps)
	}
	if aux > 2*askable || aux > steps/4 {
		t.Fatalf("the aux and alarm ran %d times in %d steps (%d steps changed what they read): they run at every open step", aux, steps, askable)
	}
	t.Logf("%d steps, interval open for %d; aux and alarm ran %d times (%d steps changed what they read)", steps, open, aux, askable)
}
