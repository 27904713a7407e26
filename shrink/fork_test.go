package shrink

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/system"
)

// forkOf continues the recorded run data at step under the seeded
// chooser for seed, with churn and loss as replay fork has them.
func forkOf(t *testing.T, sys *system.System, data []byte, step int, seed uint64) []byte {
	t.Helper()
	_, tr := readTrace(t, data)
	tr.Files[0].Path = "parent.lz4"
	r, err := replay.New(tr, examples.Registry(), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := replay.WorldAt(r, step, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Churn, cfg.Drop, cfg.Steps, cfg.Time = seed, 1, 0.3, 5000, 2*time.Second
	var buf bytes.Buffer
	if _, err := sim.RunFrom(sys, cfg.WithDefaults(sys), w, tr.Prefix(step+1), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// failingFork is the first seeded fork of paxos spec seed 8 (whose own
// violation is at #1074) from #1000 that violates AcceptedRoundIncreasing
// in its continuation within 200 steps, and where.
func failingFork(t *testing.T) (*system.System, []byte, int) {
	t.Helper()
	sys, parent := simulate(t, "paxos", "spec", 8)
	const at = 1000
	for seed := uint64(1); seed <= 40; seed++ {
		data := forkOf(t, sys, parent, at, seed)
		chk, err := simtest.CheckTrace(sys, sim.Config{}, nil, data, paxosScript, simtest.Options{Registry: examples.Registry()})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range chk.Failing {
			if v.Predicate == "AcceptedRoundIncreasing" && v.Decided() > at+20 {
				return sys, data, at
			}
		}
	}
	t.Fatal("no fork of seeds 1-40 violates AcceptedRoundIncreasing between #1020 and #1200")
	return nil, nil, 0
}

// With every continuation entry kept, a fork re-runs event for event:
// the messages in flight at the fork and the timers pending there are
// named by the kept steps that sent and set them, so the chooser
// delivers (or loses) them as the fork did.
func TestKeepingEverythingReproducesAFork(t *testing.T) {
	sys, parent := simulate(t, "paxos", "spec", 8)
	for _, c := range []struct {
		at   int
		seed uint64
	}{{400, 1}, {1040, 2}} {
		data := forkOf(t, sys, parent, c.at, c.seed)
		f, tr := readTrace(t, data)
		b, err := newBase(f, tr)
		if err != nil {
			t.Fatal(err)
		}
		if b.fixed != c.at+1 {
			t.Fatalf("%d fixed entries, want %d", b.fixed, c.at+1)
		}
		sc, _, err := sim.ContinuationOf(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg := sc.Config().WithDefaults(sys)
		if err := runLimits(&cfg, f.Header.Run); err != nil {
			t.Fatal(err)
		}
		ch := newChooser(b, all(len(b.entries)), policy{}, 2*cfg.LatencyMax)
		cfg.Chooser, cfg.Observe = ch, ch.observe
		r, err := replay.New(tr, examples.Registry(), replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := replay.WorldAt(r, c.at, nil)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := sim.RunFrom(sys, cfg, w, tr.Prefix(c.at+1), &buf); err != nil {
			t.Fatal(err)
		}
		again, _ := readTrace(t, buf.Bytes())
		for i, ev := range f.Events[:min(len(f.Events), len(again.Events))] {
			got := again.Events[i]
			if got.Node != ev.Node || got.Seq != ev.Seq || got.Kind != ev.Kind || got.Time != ev.Time ||
				got.Msg() != ev.Msg() || len(got.Sends) != len(ev.Sends) || got.StateHash != ev.StateHash {
				t.Fatalf("fork at #%d, event %d: %s seq %d %s at %d, want %s seq %d %s at %d", c.at, i, got.Node, got.Seq, got.Kind, got.Time,
					ev.Node, ev.Seq, ev.Kind, ev.Time)
			}
		}
		if len(again.Events) != len(f.Events) {
			t.Fatalf("fork at #%d: %d events, want %d", c.at, len(again.Events), len(f.Events))
		}
	}
}

// A fork shrinks to a fork: the same kept steps #0..#fork_at, byte for
// byte, the same parent and fork clocks, a shorter continuation that
// still fails the predicate (checked as replay check does), and the same
// bytes when shrunk again.
func TestShrinkForkKeepsItsPrefix(t *testing.T) {
	sys, data, at := failingFork(t)
	opts := Options{Script: paxosScript, Check: simtest.Options{Registry: examples.Registry()}, From: "fork.lz4"}
	res, err := Shrink(context.Background(), sys, data, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Predicate != "AcceptedRoundIncreasing" || res.Stopped != StoppedDone {
		t.Fatalf("shrunk for %s, stopped %s", res.Predicate, res.Stopped)
	}
	orig, _ := readTrace(t, data)
	small, _ := readTrace(t, res.Trace)
	if !reflect.DeepEqual(small.Events[:at+1], orig.Events[:at+1]) {
		t.Fatal("the shrunk fork's steps #0..#fork_at differ from the fork's")
	}
	h, oh := small.Header, orig.Header
	if h.Driver != sim.ForkDriver || h.Run["fork_at"] != strconv.Itoa(at) || h.Run["fork_of"] != oh.Run["fork_of"] ||
		h.Run["fork_time"] != oh.Run["fork_time"] || !reflect.DeepEqual(h.ForkClocks, oh.ForkClocks) ||
		h.Run["shrunk_from"] != "fork.lz4" || h.Run["shrunk_for"] != res.Predicate {
		t.Fatalf("header: driver %q, run %v, fork clocks %v (the fork's: %v, %v)", h.Driver, h.Run, h.ForkClocks, oh.Run, oh.ForkClocks)
	}
	if res.Before.Prefix != at+1 || res.After.Prefix != at+1 || res.Schedule != nil || res.NoSchedule == "" {
		t.Fatalf("prefix %d -> %d, schedule %v (%q)", res.Before.Prefix, res.After.Prefix, res.Schedule != nil, res.NoSchedule)
	}
	// Fewer events in the continuation up to the violation, not only
	// fewer after it.
	chk, err := simtest.CheckTrace(sys, sim.Config{}, nil, data, paxosScript, simtest.Options{Registry: examples.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	before := firstOf(chk.Failing, res.Predicate)
	if before == nil {
		t.Fatal("the fork does not fail")
	}
	chk, err = simtest.CheckTrace(sys, sim.Config{}, nil, res.Trace, paxosScript, simtest.Options{Registry: examples.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	after := firstOf(chk.Failing, res.Predicate)
	if after == nil {
		t.Fatalf("replay check of the shrunk fork finds no %s violation", res.Predicate)
	}
	if after.Decided() <= at || after.Decided()-at >= before.Decided()-at {
		t.Fatalf("violated %d steps after the fork, %d before shrinking: want fewer, after the fork", after.Decided()-at, before.Decided()-at)
	}
	t.Logf("continuation to the violation: %d -> %d steps, %d candidates", before.Decided()-at, after.Decided()-at, res.Candidates)
	// The shrunk fork replays without divergence.
	_, str := readTrace(t, res.Trace)
	r, err := replay.New(str, examples.Registry(), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RunTo(str.Len()-1, nil); err != nil {
		t.Fatal(err)
	}
	again, err := Shrink(context.Background(), sys, data, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Trace, res.Trace) {
		t.Fatal("shrinking the same fork twice gave different traces")
	}
}

func firstOf(vs []*predicates.Violation, pred string) *predicates.Violation {
	for _, v := range vs {
		if v.Predicate == pred {
			return v
		}
	}
	return nil
}

// A fork whose violation is among its recorded steps has nothing to
// shrink: its continuation is not needed.
func TestShrinkRefusesAForkViolatedBeforeItsContinuation(t *testing.T) {
	sys, parent := simulate(t, "paxos", "spec", 8)
	data := forkOf(t, sys, parent, 1100, 1) // the parent violates at #1074
	opts := Options{Script: paxosScript, Check: simtest.Options{Registry: examples.Registry()}, From: "late.lz4",
		Predicate: "AcceptedRoundIncreasing"}
	_, err := Shrink(context.Background(), sys, data, opts)
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want an InputError", err)
	}
	t.Log(err)
}
