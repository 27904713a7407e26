package replay_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/world"
)

func worldAt(t *testing.T, tr *replay.Trace, step int, opts replay.Options) (*world.World, error) {
	t.Helper()
	r, err := replay.New(tr, examples.Registry(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return replay.WorldAt(r, step, nil)
}

// TestWorldAtMatchesTheTrace checks a world against what the trace says
// by itself: the messages in flight are exactly those sent at or before
// the step and not received by then, with the content their receivers
// recorded (where they did), the send's clock and time; each node's seq,
// clock and up/down are those of its last event.
func TestWorldAtMatchesTheTrace(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Time, cfg.Churn, cfg.Drop, cfg.Dup = 3, 2*time.Second, 2, 0.1, 0.05
	tr := simulate(t, paxos.System, cfg)
	receivedLater, down := 0, 0
	for _, step := range []int{0, tr.Len() / 5, tr.Len() / 2, tr.Len() * 3 / 4, tr.Len() - 1} {
		w, err := worldAt(t, tr, step, replay.Options{})
		if err != nil {
			t.Fatalf("#%d: %v", step, err)
		}
		if w.Step != step || w.Lamport != tr.Event(step).Lamport || w.System != "paxos" || len(w.Nodes) != len(tr.Nodes) {
			t.Fatalf("#%d: world step %d lamport %d system %s nodes %v", step, w.Step, w.Lamport, w.System, w.Nodes)
		}
		want := map[node.MsgID]*node.Event{} // in flight -> its send event
		for s := 0; s <= step; s++ {
			ev := tr.Event(s)
			for i := range ev.Sends {
				id := ev.SentMsg(i)
				received := false
				for _, rs := range tr.Receipts(id) {
					received = received || rs <= step
				}
				if !received {
					want[id] = ev
				}
			}
		}
		if len(w.InFlight) != len(want) {
			t.Fatalf("#%d: %d messages in flight, want %d", step, len(w.InFlight), len(want))
		}
		for _, m := range w.InFlight {
			send := want[m.ID]
			if send == nil {
				t.Fatalf("#%d: %s is not in flight", step, m.ID)
			}
			s := send.Sends[m.ID.Index]
			if m.To != s.To || m.Type != s.Type || m.SendLamport != send.Lamport || m.SentAt != send.Time {
				t.Fatalf("#%d: %s: to %s type %s lamport %d at %d; the send says %s %s %d %d", step, m.ID, m.To, m.Type,
					m.SendLamport, m.SentAt, s.To, s.Type, send.Lamport, send.Time)
			}
			if rs := tr.Receipts(m.ID); len(rs) > 0 {
				receivedLater++
				if !bytes.Equal(tr.Event(rs[0]).Payload, m.Payload) {
					t.Fatalf("#%d: %s: the payload differs from what its receiver recorded", step, m.ID)
				}
			}
		}
		for _, id := range w.Nodes {
			n := w.Node[id]
			last, ok := tr.LastStepOf(id, step)
			if !ok {
				if n.Started || n.Seq != 0 || n.LastStep != -1 {
					t.Fatalf("#%d: %s has not run yet but reads %+v", step, id, n)
				}
				continue
			}
			ev := tr.Event(last)
			if n.Seq != ev.Seq || n.Lamport != ev.Lamport || n.LastStep != last || n.Up == (ev.Kind == node.KindCrash) {
				t.Fatalf("#%d: %s: seq %d lamport %d last #%d up %v; its last event #%d is %s seq %d lamport %d",
					step, id, n.Seq, n.Lamport, n.LastStep, n.Up, last, ev.Kind, ev.Seq, ev.Lamport)
			}
			if !n.Up && len(n.Timers) > 0 {
				t.Fatalf("#%d: %s is down with %d timers", step, id, len(n.Timers))
			}
		}
		if err := w.Check(); err != nil {
			t.Fatal(err)
		}
		down += len(w.Down())
	}
	if receivedLater == 0 || down == 0 {
		t.Fatalf("the worlds held %d messages received later and %d down nodes: pick other steps", receivedLater, down)
	}
}

// A replayer that built a world has handed its nodes over: it refuses to
// go on instead of changing the world's states.
func TestWorldAtSpendsTheReplayer(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Time = 1, time.Second
	tr := simulate(t, paxos.System, cfg)
	r, err := replay.New(tr, examples.Registry(), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.WorldAt(r, 10, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Next(); err == nil || !strings.Contains(err.Error(), "handed to the world") {
		t.Fatalf("Next after WorldAt: %v", err)
	}
	if _, err := replay.WorldAt(r, 10, nil); err == nil {
		t.Fatal("WorldAt on a replayer that already ran")
	}
}

// TestWorldAtRefusesUnknownNodes: a node left out of the replay, a node
// whose recording has a gap before the step, and steps outside the trace
// are refused with an error naming the node and why; a step before the
// gap is fine.
func TestWorldAtRefusesUnknownNodes(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Time, cfg.Churn = 2, time.Second, 0
	tr := simulate(t, paxos.System, cfg)
	var we *replay.WorldError
	if _, err := worldAt(t, tr, 20, replay.Options{Nodes: []node.ID{"n1", "n2"}}); !errors.As(err, &we) || we.Node != "n3" || !strings.Contains(err.Error(), "left out of the replay") {
		t.Fatalf("partial replay: %v", err)
	}
	for _, step := range []int{-1, tr.Len()} {
		if _, err := worldAt(t, tr, step, replay.Options{}); err == nil || !strings.Contains(err.Error(), "outside the trace") {
			t.Fatalf("step %d: %v", step, err)
		}
	}

	// The same events with a gap in n2's recording from its seq 10 on.
	f := tr.Files[0]
	var buf bytes.Buffer
	w, err := record.NewWriter(&buf, *f.Header, record.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Gap(record.Gap{Node: "n2", From: 10, Reason: "disk too slow"}); err != nil {
		t.Fatal(err)
	}
	gapAt := -1
	for _, ev := range f.Events {
		if ev.Node == "n2" && ev.Seq >= 10 {
			continue
		}
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(f.Ends[0]); err != nil {
		t.Fatal(err)
	}
	gapped, err := replay.FromBytes(buf.Bytes(), "gapped.lz4")
	if err != nil {
		t.Fatal(err)
	}
	for s := range gapped.Len() {
		ev := gapped.Event(s)
		if ev.Node == "n2" && ev.Seq == 9 {
			gapAt = s
		}
	}
	if gapAt < 0 {
		t.Fatal("n2 has no seq 9")
	}
	if _, err := worldAt(t, gapped, gapAt, replay.Options{}); err != nil {
		t.Fatalf("at n2's last recorded event: %v", err)
	}
	_, err = worldAt(t, gapped, gapAt+1, replay.Options{})
	if !errors.As(err, &we) || we.Node != "n2" || !strings.Contains(err.Error(), "disk too slow") {
		t.Fatalf("after the gap: %v", err)
	}
}

// TestWorldOfARunCutBeforeSomeInits: a simulation records every node from
// the start, so a node with no event in a simulated trace had not started
// (the run was cut before its init): it is in the world, not started,
// where fork, predict and explore --from refused the trace ("its
// recording holds no events").
func TestWorldOfARunCutBeforeSomeInits(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps = 1, 3
	tr := simulate(t, paxos.System, cfg)
	if len(tr.Recorded) != 3 || len(tr.Nodes) != 7 {
		t.Fatalf("%d of %d nodes have events, want 3 of 7", len(tr.Recorded), len(tr.Nodes))
	}
	w, err := worldAt(t, tr, 2, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range tr.Nodes {
		n := w.Node[id]
		if n == nil {
			t.Fatalf("%s is not in the world", id)
		}
		if started := n.Seq > 0; n.Started != started || started != (id <= "n3") {
			t.Fatalf("%s: started %v at seq %d", id, n.Started, n.Seq)
		}
	}
	// A left-out node of the same trace is still refused.
	var we *replay.WorldError
	if _, err := worldAt(t, tr, 2, replay.Options{Nodes: []node.ID{"n1", "n2"}}); !errors.As(err, &we) || we.Node != "n3" {
		t.Fatalf("partial replay: %v", err)
	}
}
