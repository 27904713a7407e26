package predicates_test

import (
	"bytes"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

func paxosTrace(t *testing.T, seed uint64, bug string) *replay.Trace {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug = seed, bug
	return paxosTraceOf(t, cfg)
}

// paxosTraceOf simulates paxos as cfg says.
func paxosTraceOf(t testing.TB, cfg sim.Config) *replay.Trace {
	t.Helper()
	var buf bytes.Buffer
	if _, err := sim.Run(paxos.System, cfg.WithDefaults(paxos.System), &buf); err != nil {
		t.Fatal(err)
	}
	tr, err := replay.FromBytes(buf.Bytes(), "p.lz4")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestWatcherAgreesWithChecker: at every position a cursor seeks to, a
// watch evaluated from scratch agrees with the incremental checker's
// derived value at that step.
func TestWatcherAgreesWithChecker(t *testing.T) {
	tr := paxosTrace(t, 21, "latest-response")
	reg := system.NewRegistry(paxos.System)
	r1, _ := replay.New(tr, reg, replay.Options{})
	c, err := predicates.Load("../scripts/paxos.star", r1, predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{}
	holds := map[int]bool{}
	for r1.Next() == nil {
		if err := c.Observe(); err != nil {
			t.Fatal(err)
		}
		for _, d := range c.DerivedValues() {
			if d.Name() == "decision" {
				want[r1.Pos()] = d.Value().String()
			}
		}
		holds[r1.Pos()] = c.Holds()["GlobalConsistency"]
	}
	r2, _ := replay.New(tr, reg, replay.Options{})
	cur, _ := replay.NewCursor(r2, 100)
	w, err := predicates.NewWatcher(r2, "../scripts/paxos.star")
	if err != nil {
		t.Fatal(err)
	}
	// The first step where GlobalConsistency fails, and the one before.
	broke := 0
	for broke < tr.Len() && holds[broke] {
		broke++
	}
	if broke == 0 || broke == tr.Len() {
		t.Fatalf("GlobalConsistency fails at #%d of %d steps: the run should break it part of the way in", broke, tr.Len())
	}
	for _, step := range []int{5, broke - 1, broke, 900, 100, 0, tr.Len() - 1} {
		if err := cur.Seek(step); err != nil {
			t.Fatal(err)
		}
		w.Sync()
		// The function, and the derived value itself.
		for _, expr := range []string{"chosen()", "decision()", "decision"} {
			got, err := w.Eval(expr)
			if err != nil {
				t.Fatal(err)
			}
			if got != want[step] {
				t.Errorf("at #%d the watch %s says %s, the checker %s", step, expr, got, want[step])
			}
		}
	}
	// A table declared in a watch is filled at once, and declaring it
	// again reuses it rather than piling tables up.
	for range 3 {
		got, err := w.Eval("len(table(\"paxos.Leader\"))")
		if err != nil || got != "7" {
			t.Errorf("an ad-hoc table in a watch: %q %v, want 7 rows", got, err)
		}
	}
	if n := len(c2Tables(w)); n != 2 {
		t.Errorf("after three ad-hoc watches the watcher holds %d tables, want 2 (Agent, Leader)", n)
	}
	if _, err := w.Eval("forall(Agent, lambda a: a.Nope)"); err == nil {
		t.Error("a bad watch evaluated without error")
	}
}

func c2Tables(w *predicates.Watcher) []*predicates.Table { return w.Tables() }

// TestWatchReadsOrderedIndexes: a watch over a script with ordered
// indexes (the debugger's case) sees them as of the step the cursor is at,
// moving back and forth, the same as the table they order.
func TestWatchReadsOrderedIndexes(t *testing.T) {
	sys, _ := examples.Registry().Lookup("chord")
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug = 1, "pred-order"
	var buf bytes.Buffer
	if _, err := sim.Run(sys, cfg.WithDefaults(sys), &buf); err != nil {
		t.Fatal(err)
	}
	tr, err := replay.FromBytes(buf.Bytes(), "chord.lz4")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := replay.New(tr, examples.Registry(), replay.Options{})
	cur, _ := replay.NewCursor(r, 100)
	w, err := predicates.NewWatcher(r, "../scripts/chord.star")
	if err != nil {
		t.Fatal(err)
	}
	const (
		viaIndex = `[(m.node, m.Key) for m in members]`
		direct   = `[(m.node, m.Key) for m in sorted([n for n in Node if n.Joined and not n.Left], key = lambda n: n.Key)]`
		lookup   = `[members.ceiling(k, wrap = True).node if len(members) else None for k in [0, 100, 300, 511]]`
		scan     = `[([m.node for m in sorted([n for n in Node if n.Joined and not n.Left], key = lambda n: n.Key) if m.Key >= k] + [m.node for m in sorted([n for n in Node if n.Joined and not n.Left], key = lambda n: n.Key)] + [None])[0] for k in [0, 100, 300, 511]]`
	)
	nonEmpty := 0
	for _, step := range []int{0, 40, 400, 1500, tr.Len() - 1, 200, 3, 900} {
		if err := cur.Seek(step); err != nil {
			t.Fatal(err)
		}
		w.Sync()
		for _, pair := range [][2]string{{viaIndex, direct}, {lookup, scan}} {
			a, err := w.Eval(pair[0])
			if err != nil {
				t.Fatal(err)
			}
			b, err := w.Eval(pair[1])
			if err != nil {
				t.Fatal(err)
			}
			if a != b {
				t.Errorf("at #%d: %s = %s, but %s", step, pair[0], a, b)
			}
			if a != "[]" {
				nonEmpty++
			}
		}
	}
	if nonEmpty < 8 {
		t.Errorf("the ring was empty at most steps looked at (%d non-empty answers): the test checks nothing", nonEmpty)
	}
}
