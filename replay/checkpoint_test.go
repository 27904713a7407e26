package replay_test

import (
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/state"
)

// TestStartAtGoesOnLikeTheReplay: a replayer started from a checkpoint
// re-executes the rest of the trace with every effect and state hash
// checked, and its nodes end in the states of a replay from the start.
func TestStartAtGoesOnLikeTheReplay(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Time, cfg.Churn, cfg.Drop = 5, 2*time.Second, 2, 0.1
	tr := simulate(t, paxos.System, cfg)
	full, err := replay.New(tr, examples.Registry(), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := tr.Len() / 2
	if err := full.RunTo(at, nil); err != nil {
		t.Fatal(err)
	}
	cp := full.TakeCheckpoint()
	if cp.Pos() != at {
		t.Fatalf("checkpoint at #%d, want #%d", cp.Pos(), at)
	}
	if err := full.RunTo(tr.Len(), nil); err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(tr, examples.Registry(), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartAt(cp); err != nil {
		t.Fatal(err)
	}
	if r.Pos() != at {
		t.Fatalf("started at #%d, want #%d", r.Pos(), at)
	}
	if err := r.RunTo(tr.Len(), nil); err != nil {
		t.Fatalf("the replay from the checkpoint: %v", err)
	}
	for _, id := range tr.Nodes {
		a, b := full.Instance(id), r.Instance(id)
		if a.Up() != b.Up() || a.Seq() != b.Seq() || a.Lamport() != b.Lamport() {
			t.Fatalf("%s: up %v seq %d clock %d from the start, %v %d %d from the checkpoint", id, a.Up(), a.Seq(), a.Lamport(), b.Up(), b.Seq(), b.Lamport())
		}
		if a.Up() && state.Hash(a.Handler()) != state.Hash(b.Handler()) {
			t.Fatalf("%s: its state differs from the replay from the start", id)
		}
	}
	// A checkpoint starts one replayer: its copies were taken over.
	again, _ := replay.New(tr, examples.Registry(), replay.Options{})
	if err := again.StartAt(cp); err == nil {
		t.Fatal("a used checkpoint started a second replayer")
	}
}
