package sim_test

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/system"
	"github.com/replaycheck/replaycheck/world"
)

// parentRun simulates sys with churn, loss and duplication. It records
// causal clocks only, as a live recording does, so that a fork's own
// serial clocks are what keeps its continuation in time order.
func parentRun(t *testing.T, sys *system.System, seed uint64) *replay.Trace {
	t.Helper()
	return simulated(t, sys, seed, true)
}

// simulated simulates sys with churn, loss and duplication, recording
// causal clocks only if causal.
func simulated(t *testing.T, sys *system.System, seed uint64, causal bool) *replay.Trace {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Time, cfg.Steps, cfg.Churn, cfg.Drop, cfg.Dup = seed, 3*time.Second, 2500, 1, 0.1, 0.05
	cfg.CausalClocks = causal
	var buf bytes.Buffer
	if _, err := sim.Run(sys, cfg.WithDefaults(sys), &buf); err != nil {
		t.Fatalf("%s: %v", sys.Name, err)
	}
	tr, err := replay.FromBytes(buf.Bytes(), sys.Name+".lz4")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func worldOf(t *testing.T, tr *replay.Trace, step int) *world.World {
	t.Helper()
	r, err := replay.New(tr, examples.Registry(), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := replay.WorldAt(r, step, nil)
	if err != nil {
		t.Fatalf("world at #%d: %v", step, err)
	}
	return w
}

func forkConfig(sys *system.System, seed uint64) sim.Config {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps, cfg.Time, cfg.Churn, cfg.Drop, cfg.Dup = seed, 1500, 2*time.Second, 1, 0.1, 0.05
	return cfg.WithDefaults(sys)
}

// fork continues tr at step and returns the fork's bytes and trace.
func fork(t *testing.T, sys *system.System, tr *replay.Trace, step int, cfg sim.Config) ([]byte, *replay.Trace, *world.World) {
	t.Helper()
	w := worldOf(t, tr, step)
	var buf bytes.Buffer
	if _, err := sim.RunFrom(sys, cfg, w, tr.Prefix(step+1), &buf); err != nil {
		t.Fatalf("%s fork at #%d: %v", sys.Name, step, err)
	}
	ft, err := replay.FromBytes(buf.Bytes(), "fork.lz4")
	if err != nil {
		t.Fatalf("%s fork at #%d: %v", sys.Name, step, err)
	}
	return buf.Bytes(), ft, w
}

// verifies replays a whole trace, state hashes included.
func verifies(t *testing.T, tr *replay.Trace) {
	t.Helper()
	r, err := replay.New(tr, examples.Registry(), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RunTo(tr.Len()-1, nil); err != nil {
		t.Fatalf("%s: %v", tr.Files[0].Path, err)
	}
}

// TestForkEveryBundledSystem forks every bundled system's churned, lossy
// run at several steps, the last included: the fork keeps steps 0..STEP
// as they were, replays without divergence (state hashes included), is
// byte-identical for the same seed, and delivers messages that were in
// flight at the fork. Its continuation replays in the order the simulator
// ran it, which is time order: no idle node's later event comes first.
func TestForkEveryBundledSystem(t *testing.T) {
	for _, sys := range examples.All() {
		t.Run(sys.Name, func(t *testing.T) {
			tr := parentRun(t, sys, 3)
			delivered := 0
			for _, step := range []int{0, tr.Len() / 3, tr.Len() * 2 / 3, tr.Len() - 1} {
				cfg := forkConfig(sys, 11)
				data, ft, w := fork(t, sys, tr, step, cfg)
				h := ft.Header
				if h.Driver != sim.ForkDriver || h.Run["fork_at"] != strconv.Itoa(step) || h.Run["fork_of"] != sys.Name+".lz4" ||
					!reflect.DeepEqual(h.ForkClocks, []uint64{tr.Event(step).Lamport}) {
					t.Fatalf("#%d: header driver %q run %v fork clocks %v", step, h.Driver, h.Run, h.ForkClocks)
				}
				if ft.Len() <= step {
					t.Fatalf("#%d: the fork has %d steps", step, ft.Len())
				}
				for s := 0; s <= step; s++ {
					if !reflect.DeepEqual(ft.Event(s), tr.Event(s)) {
						t.Fatalf("#%d: step #%d differs:\nfork   %+v\nparent %+v", step, s, ft.Event(s), tr.Event(s))
					}
				}
				for s := step + 1; s < ft.Len(); s++ {
					if ft.Event(s).Lamport <= w.Lamport {
						t.Fatalf("#%d: continuation step #%d has Lamport %d, not above the fork's %d", step, s, ft.Event(s).Lamport, w.Lamport)
					}
				}
				if h.SerialClocks != w.Lamport {
					t.Fatalf("#%d: serial clocks %d, want the fork's %d", step, h.SerialClocks, w.Lamport)
				}
				inTimeOrder(t, ft, step+1)
				verifies(t, ft)
				again, _, _ := fork(t, sys, tr, step, cfg)
				if !bytes.Equal(data, again) {
					t.Fatalf("#%d: two forks with seed 11 differ", step)
				}
				for _, m := range w.InFlight {
					for _, rs := range ft.Receipts(m.ID) {
						if rs <= step {
							t.Fatalf("#%d: in-flight %s received at #%d, before the fork", step, m.ID, rs)
						}
						if ev := ft.Event(rs); !bytes.Equal(ev.Payload, m.Payload) || ev.Node != m.To {
							t.Fatalf("#%d: in-flight %s delivered at #%d to %s with other content", step, m.ID, rs, ev.Node)
						}
						delivered++
					}
				}
			}
			if delivered == 0 {
				t.Fatal("no message in flight at a fork was delivered in its continuation")
			}
		})
	}
}

// Another seed gives another continuation of the same world; a fork of a
// fork keeps both forks' clock floors and verifies.
func TestForkOfAFork(t *testing.T) {
	sys := paxos.System
	tr := parentRun(t, sys, 5)
	step := tr.Len() / 2
	a, ft, _ := fork(t, sys, tr, step, forkConfig(sys, 1))
	b, _, _ := fork(t, sys, tr, step, forkConfig(sys, 2))
	if bytes.Equal(a, b) {
		t.Fatal("seeds 1 and 2 continued the same way")
	}
	second := step + (ft.Len()-step)/2
	_, ft2, _ := fork(t, sys, ft, second, forkConfig(sys, 3))
	want := []uint64{tr.Event(step).Lamport, ft.Event(second).Lamport}
	if !reflect.DeepEqual(ft2.Header.ForkClocks, want) {
		t.Fatalf("fork clocks %v, want %v", ft2.Header.ForkClocks, want)
	}
	// The first fork's kept continuation ran serially too.
	if got := ft2.Header.SerialClocks; got != want[0] {
		t.Fatalf("serial clocks %d, want %d", got, want[0])
	}
	inTimeOrder(t, ft2, step+1)
	verifies(t, ft2)
	// Forking the fork before its own fork step drops its floor.
	_, ft3, _ := fork(t, sys, ft, step/2, forkConfig(sys, 3))
	if !reflect.DeepEqual(ft3.Header.ForkClocks, []uint64{ft.Event(step / 2).Lamport}) || ft3.Header.SerialClocks != ft.Event(step/2).Lamport {
		t.Fatalf("fork clocks %v, serial clocks %d", ft3.Header.ForkClocks, ft3.Header.SerialClocks)
	}
	inTimeOrder(t, ft3, step/2+1)
	verifies(t, ft3)
}

// inTimeOrder fails unless the trace's steps from from on are in time
// order, so that now() never runs ahead of a step still to come.
func inTimeOrder(t *testing.T, tr *replay.Trace, from int) {
	t.Helper()
	if s := outOfTimeOrder(tr, from); s > 0 {
		a, b := tr.Event(s-1), tr.Event(s)
		t.Fatalf("step #%d (%s %s at %v) replays after #%d (%s %s at %v), later in time",
			s, b.Node, b.Kind, time.Duration(b.Time-tr.Header.Start), s-1, a.Node, a.Kind, time.Duration(a.Time-tr.Header.Start))
	}
}

// outOfTimeOrder is the first step from from on that replays after a
// step later in time, or -1.
func outOfTimeOrder(tr *replay.Trace, from int) int {
	for s := from + 1; s < tr.Len(); s++ {
		if tr.Event(s).Time < tr.Event(s-1).Time {
			return s
		}
	}
	return -1
}

// A simulated run replays in the order the simulator ran it, which is time
// order, on every bundled system: its header says it is serial from its
// first event, replay raises clocks to match, and forks keep it. With
// causal clocks only (as a live recording has), idle nodes' events replay
// early on some system, which is what serial clocks prevent.
func TestSimulatedRunsReplayInTimeOrder(t *testing.T) {
	jumps := 0
	for _, sys := range examples.All() {
		tr := simulated(t, sys, 3, false)
		if got := tr.Header.SerialClocks; got != 1 {
			t.Fatalf("%s: serial clocks %d, want 1", sys.Name, got)
		}
		inTimeOrder(t, tr, 0)
		verifies(t, tr)
		step := tr.Len() / 2
		_, ft, _ := fork(t, sys, tr, step, forkConfig(sys, 7))
		if got := ft.Header.SerialClocks; got != 1 {
			t.Fatalf("%s: the fork's serial clocks %d, want the parent's 1", sys.Name, got)
		}
		inTimeOrder(t, ft, 0)
		causal := simulated(t, sys, 3, true)
		if got := causal.Header.SerialClocks; got != 0 || causal.Header.Run["clocks"] != "causal" {
			t.Fatalf("%s with causal clocks: serial clocks %d, run %v", sys.Name, got, causal.Header.Run)
		}
		verifies(t, causal)
		if outOfTimeOrder(causal, 0) > 0 {
			jumps++
		}
	}
	if jumps == 0 {
		t.Fatal("no bundled system's run with causal clocks replays out of time order: the test shows nothing")
	}
}

// RunFrom continues a world in place; a copy continues it again, the same
// way for the same seed.
func TestForkWorldCopy(t *testing.T) {
	sys := paxos.System
	tr := parentRun(t, sys, 6)
	step := tr.Len() / 3
	w := worldOf(t, tr, step)
	keep := w.Copy(state.Copier)
	cfg := forkConfig(sys, 4)
	var a, b bytes.Buffer
	if _, err := sim.RunFrom(sys, cfg, w, tr.Prefix(step+1), &a); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.RunFrom(sys, cfg, keep, tr.Prefix(step+1), &b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("a copy of the world continued differently")
	}
}

// Nodes down at the fork restart under churn and stay down without it.
func TestForkDownNodes(t *testing.T) {
	sys := paxos.System
	tr := parentRun(t, sys, 3)
	step := -1
	var down []node.ID
	for s := tr.Len() / 4; s < tr.Len() && step < 0; s += 37 {
		if w := worldOf(t, tr, s); len(w.Down()) > 0 {
			step, down = s, w.Down()
		}
	}
	if step < 0 {
		t.Fatal("no node is ever down at the steps tried")
	}
	restarts := func(ft *replay.Trace) int {
		n := 0
		for i := step + 1; i < ft.Len(); i++ {
			ev := ft.Event(i)
			if ev.Node == down[0] && ev.Kind != node.KindCrash {
				n++
			}
		}
		return n
	}
	_, churned, _ := fork(t, sys, tr, step, forkConfig(sys, 8))
	if restarts(churned) == 0 {
		t.Fatalf("%s, down at #%d, never ran again under churn", down[0], step)
	}
	calm := forkConfig(sys, 8)
	calm.Churn = 0
	_, ft, _ := fork(t, sys, tr, step, calm)
	if n := restarts(ft); n != 0 {
		t.Fatalf("%s, down at #%d, ran %d events without churn", down[0], step, n)
	}
	verifies(t, ft)
}

// RunFrom refuses a world of another system and a prefix that is not the
// world's steps; a handler panic in the continuation keeps the trace.
func TestForkBadInput(t *testing.T) {
	tr := parentRun(t, paxos.System, 1)
	w := worldOf(t, tr, 10)
	chord := examples.Registry()
	other, _ := chord.Lookup("chord")
	if _, err := sim.RunFrom(other, forkConfig(other, 1), w, tr.Prefix(11), io.Discard); err == nil {
		t.Fatal("a paxos world continued as chord")
	}
	if _, err := sim.RunFrom(paxos.System, forkConfig(paxos.System, 1), w, tr.Prefix(5), io.Discard); err == nil {
		t.Fatal("a fork at #10 with 5 kept events")
	}
	cfg := forkConfig(paxos.System, 1)
	cfg.Drop = 2
	if _, err := sim.RunFrom(paxos.System, cfg, w, tr.Prefix(11), io.Discard); err == nil {
		t.Fatal("drop 2 accepted")
	}
	cfg = forkConfig(paxos.System, 1)
	boom := errors.New("observer stop")
	cfg.Observe = func(*node.Event, *node.Instance) error { return boom }
	var buf bytes.Buffer
	if _, err := sim.RunFrom(paxos.System, cfg, w, tr.Prefix(11), &buf); !errors.Is(err, boom) {
		t.Fatalf("observer error: %v", err)
	}
	ft, err := replay.FromBytes(buf.Bytes(), "stopped.lz4")
	if err != nil || ft.Len() != 12 {
		t.Fatalf("the stopped fork holds %v steps (%v), want the 11 kept and the one that failed", ft, err)
	}
}

// TestContinuationOf reads a fork's continuation as a schedule: exactly
// the events after the fork step, in file order, under the fork's
// settings; ScheduleOf still refuses a fork and ContinuationOf a
// simulated run. The world rebuilt from the fork's own first steps is
// the parent's world at the fork step, which is what lets a fork be
// continued again (shrink does) without its parent trace.
func TestContinuationOf(t *testing.T) {
	sys := paxos.System
	tr := parentRun(t, sys, 5)
	step := tr.Len() / 2
	data, ft, pw := fork(t, sys, tr, step, forkConfig(sys, 1))
	f := recordOf(t, data)
	sc, at, err := sim.ContinuationOf(f)
	if err != nil {
		t.Fatal(err)
	}
	if at != step || len(sc.Events) != len(f.Events)-step-1 || len(sc.Events) == 0 {
		t.Fatalf("at %d, %d events; want at %d, %d events", at, len(sc.Events), step, len(f.Events)-step-1)
	}
	for i, se := range sc.Events {
		ev := f.Events[step+1+i]
		if se.Node != ev.Node || se.Kind != ev.Kind || se.At != time.Duration(ev.Time-f.Header.Start) {
			t.Fatalf("continuation event %d is %v, the file's #%d %s %s", i, se.Pending, step+1+i, ev.Node, ev.Kind)
		}
	}
	if sc.Seed != 1 || sc.Nodes != len(f.Header.Nodes) || sc.System != sys.Name {
		t.Fatalf("settings: seed %d, %d nodes, system %s", sc.Seed, sc.Nodes, sc.System)
	}
	if _, err := sim.ScheduleOf(f); err == nil {
		t.Fatal("ScheduleOf read a fork")
	}
	pf := tr.Files[0]
	if _, _, err := sim.ContinuationOf(pf); err == nil {
		t.Fatal("ContinuationOf read a simulated run")
	}

	w := worldOf(t, ft, step)
	if w.Step != pw.Step || w.Lamport != pw.Lamport || w.Now != pw.Now || w.Start != pw.Start ||
		len(w.InFlight) != len(pw.InFlight) || !reflect.DeepEqual(w.Nodes, pw.Nodes) {
		t.Fatalf("world from the fork: step %d L=%d now %d, %d in flight; from the parent: step %d L=%d now %d, %d in flight",
			w.Step, w.Lamport, w.Now, len(w.InFlight), pw.Step, pw.Lamport, pw.Now, len(pw.InFlight))
	}
	for id, n := range pw.Node {
		if m := w.Node[id]; m.Up != n.Up || m.Seq != n.Seq || m.Lamport != n.Lamport || m.Incarnation != n.Incarnation {
			t.Fatalf("node %s differs: from the fork %+v, from the parent %+v", id, m, n)
		}
	}
	// Continuing it again gives the same run, floors included; only the
	// header's fork_of differs (it names the trace the world came from).
	again, g, _ := fork(t, sys, ft, step, forkConfig(sys, 1))
	if !reflect.DeepEqual(g.Header.ForkClocks, ft.Header.ForkClocks) || g.Header.Run["fork_of"] != "fork.lz4" {
		t.Fatalf("re-forked: fork clocks %v fork_of %q; want %v, fork.lz4", g.Header.ForkClocks, g.Header.Run["fork_of"], ft.Header.ForkClocks)
	}
	if gf := recordOf(t, again); !reflect.DeepEqual(gf.Events, f.Events) {
		t.Fatal("re-forking the fork at its own step ran another continuation")
	}
}

// TestForkSerialClocksStillChecked: above serial_clocks replay raises a
// node to the clock of the step before, as the simulator did, not to one
// below the recorded clock, so a continuation event whose recorded clock
// was moved ahead (moving it to a later step) still diverges.
func TestForkSerialClocksStillChecked(t *testing.T) {
	sys := paxos.System
	tr := parentRun(t, sys, 3)
	step := tr.Len() / 2
	data, ft, _ := fork(t, sys, tr, step, forkConfig(sys, 11))
	f := recordOf(t, data)
	// A node's last event, in the continuation and with no sends: moving
	// its clock ahead keeps the trace well formed (each node's clocks
	// rise with its seqs, no receive names it).
	last := map[node.ID]*node.Event{}
	for _, ev := range f.Events {
		if l := last[ev.Node]; l == nil || ev.Seq > l.Seq {
			last[ev.Node] = ev
		}
	}
	var moved *node.Event
	for _, id := range ft.Nodes {
		if ev := last[id]; ev.Lamport > ft.Event(step).Lamport+10 && len(ev.Sends) == 0 {
			moved = ev
			break
		}
	}
	if moved == nil {
		t.Fatal("no node's last event is a continuation event without sends")
	}
	moved.Lamport += 1_000_000
	var buf bytes.Buffer
	w, err := record.NewWriter(&buf, *f.Header, record.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range f.Events {
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(f.Ends[len(f.Ends)-1]); err != nil {
		t.Fatal(err)
	}
	tampered, err := replay.FromBytes(buf.Bytes(), "tampered.lz4")
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(tampered, examples.Registry(), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var div *replay.Divergence
	if err := r.RunTo(tampered.Len()-1, nil); !errors.As(err, &div) {
		t.Fatalf("a continuation clock moved ahead by 10^6 replayed: %v", err)
	}
}

// recordOf reads a fork's bytes as a record file.
func recordOf(t *testing.T, data []byte) *record.File {
	t.Helper()
	f, err := record.Read(bytes.NewReader(data), "fork.lz4", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// restartAtOnce restarts its nodes at the first decisions of a run, as
// the walks of replay critical do, then defers to a seeded chooser.
type restartAtOnce struct {
	*sim.Seeded
	down []node.ID
}

func (c *restartAtOnce) Next(ch *sim.Choice) (sim.Decision, error) {
	if len(c.down) > 0 {
		id := c.down[0]
		c.down = c.down[1:]
		return sim.Decision{Restart: id, At: ch.Now()}, nil
	}
	return c.Seeded.Next(ch)
}

// A message sent to a node that was down, whose latency window closed
// before the fork with the node still down, reached nobody in the parent run: a fork that restarts the receiver at
// once (replay critical's walks do) must not hand it over late.
func TestForkRestartingADownNodeDoesNotDeliverWhatReachedItDown(t *testing.T) {
	sys := paxos.System
	cfg := forkConfig(sys, 8)
	cfg.Churn = 0
	found := 0
	for seed := uint64(1); seed <= 4 && found < 3; seed++ {
		tr := simulated(t, sys, seed, false) // in time order, as sim runs by default
		for s := tr.Len() / 4; s < tr.Len() && found < 3; s += 13 {
			w := worldOf(t, tr, s)
			stale := map[node.MsgID]bool{}
			for _, m := range w.InFlight {
				to := w.Node[m.To]
				if !to.Up && to.Started && m.SentAt > tr.Event(to.LastStep).Time && m.SentAt+int64(cfg.LatencyMax) < w.Start+w.Now {
					stale[m.ID] = true
				}
			}
			if len(stale) == 0 {
				continue
			}
			found++
			var buf bytes.Buffer
			run := cfg
			run.Chooser = &restartAtOnce{Seeded: sim.NewSeeded(9), down: w.Down()}
			if _, err := sim.RunFrom(sys, run, w, tr.Prefix(s+1), &buf); err != nil {
				t.Fatalf("seed %d, fork at #%d: %v", seed, s, err)
			}
			ft, err := replay.FromBytes(buf.Bytes(), "fork.lz4")
			if err != nil {
				t.Fatal(err)
			}
			for i := s + 1; i < ft.Len(); i++ {
				if ev := ft.Event(i); ev.Kind == node.KindRecv && stale[ev.Msg()] {
					t.Fatalf("seed %d, fork at #%d (%v, %s down): #%d delivers %s, whose window (%v) closed while %s was down",
						seed, s, time.Duration(w.Now), idsOf(w.Down()), i, ev.Msg(), cfg.LatencyMax, ev.Node)
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("no fork point with a message that reached a down node")
	}
}

func idsOf(ids []node.ID) string {
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += " "
		}
		s += string(id)
	}
	return s
}

// TestForkCountsADownNodesDowntimeFromItsCrash forks a churned run where
// a node has been down for most of --down's maximum: under churn it comes
// back within the maximum of its crash, never before the fork, whatever
// the seed. A draw counted from the fork kept it down up to twice as long
// as the parent's settings allow: futures "down too long" that predict
// reported and the parent could not have had.
func TestForkCountsADownNodesDowntimeFromItsCrash(t *testing.T) {
	sys := paxos.System
	tr := simulated(t, sys, 3, false)
	cfg := forkConfig(sys, 0)
	long := cfg.DownMax * 7 / 10
	step, id, crashed := -1, node.ID(""), int64(0)
	crashAt := map[node.ID]int64{}
	for s := 0; s < tr.Len() && step < 0; s++ {
		ev := tr.Event(s)
		switch ev.Kind {
		case node.KindCrash:
			crashAt[ev.Node] = ev.Time
		case node.KindRestart, node.KindInit:
			delete(crashAt, ev.Node)
		}
		for n, at := range crashAt {
			if time.Duration(ev.Time-at) >= long && ev.Node != n {
				step, id, crashed = s, n, at
				break
			}
		}
	}
	if step < 0 {
		t.Fatalf("no node is down %v at any step", long)
	}
	forkTime := tr.Event(step).Time
	for seed := uint64(1); seed <= 6; seed++ {
		cfg := forkConfig(sys, seed)
		_, ft, _ := fork(t, sys, tr, step, cfg)
		restarted := false
		for i := step + 1; i < ft.Len() && !restarted; i++ {
			ev := ft.Event(i)
			if ev.Node != id || ev.Kind != node.KindRestart {
				continue
			}
			restarted = true
			if down := time.Duration(ev.Time - crashed); down > cfg.DownMax || ev.Time < forkTime {
				t.Errorf("seed %d: %s, crashed %v before the fork at #%d, restarted at #%d after %v down (--down %v-%v)",
					seed, id, time.Duration(forkTime-crashed), step, i, down, cfg.DownMin, cfg.DownMax)
			}
		}
		if !restarted {
			t.Errorf("seed %d: %s, down at #%d, never restarted under churn", seed, id, step)
		}
	}
}
