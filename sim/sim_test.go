package sim_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// Ping is the test system's only message.
type Ping struct{ N int }

// pinger broadcasts a Ping on every tick, counting received pings in
// memory (Volatile) and on disk.
type pinger struct {
	Volatile int
	Durable  int
	Restored int // what Init read back from disk
	Got      map[node.ID]int
}

func (p *pinger) Init(env node.Env) {
	p.Got = map[node.ID]int{}
	if b, ok := env.Disk().Get("durable"); ok {
		node.Unmarshal(b, &p.Durable)
		p.Restored = p.Durable
	}
	env.After(10*time.Millisecond, "tick")
}

func (p *pinger) Receive(env node.Env, from node.ID, m node.Message) {
	p.Volatile++
	p.Durable++
	p.Got[from]++
	b, _ := node.Marshal(p.Durable)
	env.Disk().Put("durable", b)
}

func (p *pinger) Timer(env node.Env, t node.Timer) {
	for _, peer := range env.Peers() {
		env.Send(peer, Ping{N: p.Volatile})
	}
	env.After(time.Duration(5+env.Rand().IntN(10))*time.Millisecond, "tick")
}

func pingSystem(scenario func(system.Controller)) *system.System {
	return &system.System{
		Name:     "ping",
		Codec:    node.NewCodec().MustRegister(Ping{}),
		New:      func(node.ID, system.Config) node.Handler { return &pinger{} },
		Sim:      system.SimDefaults{Nodes: 4, Steps: 3000, Time: 2 * time.Second},
		Scenario: scenario,
	}
}

func run(t *testing.T, sys *system.System, cfg sim.Config) ([]byte, *sim.Result) {
	t.Helper()
	var buf bytes.Buffer
	res, err := sim.Run(sys, cfg.WithDefaults(sys), &buf)
	if err != nil {
		t.Fatalf("sim: %v", err)
	}
	return buf.Bytes(), res
}

func readTrace(t *testing.T, data []byte) *replay.Trace {
	t.Helper()
	f, err := record.Read(bytes.NewReader(data), "sim.lz4", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Damage != nil || !f.Ended {
		t.Fatalf("trace damaged=%v ended=%v", f.Damage, f.Ended)
	}
	tr, err := replay.Merge([]*record.File{f})
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	return tr
}

func TestSameSeedSameBytes(t *testing.T) {
	for _, bug := range paxos.System.BugNames() {
		cfg := sim.DefaultConfig()
		cfg.Seed, cfg.Bug = 7, bug
		a, _ := run(t, paxos.System, cfg)
		b, _ := run(t, paxos.System, cfg)
		if !bytes.Equal(a, b) {
			t.Fatalf("bug %s: two runs with seed 7 produced different traces (%d vs %d bytes)", bug, len(a), len(b))
		}
		cfg.Seed = 8
		c, _ := run(t, paxos.System, cfg)
		if bytes.Equal(a, c) {
			t.Fatalf("bug %s: seeds 7 and 8 produced the same trace", bug)
		}
	}
}

// checkLamport asserts the invariants every trace must satisfy, directly
// (replay.Merge checks them too; this does not rely on it).
func checkLamport(t *testing.T, tr *replay.Trace) {
	t.Helper()
	last := map[node.ID]*node.Event{}
	sends := map[node.MsgID]node.Send{}
	sendClock := map[node.MsgID]uint64{}
	byNode := map[node.ID][]*node.Event{}
	for i := range tr.Len() {
		ev := tr.Event(i)
		byNode[ev.Node] = append(byNode[ev.Node], ev)
		for i, s := range ev.Sends {
			sends[ev.SentMsg(i)] = s
			sendClock[ev.SentMsg(i)] = ev.Lamport
		}
	}
	for id, evs := range byNode {
		for i, ev := range evs {
			if ev.Seq != uint64(i+1) {
				t.Fatalf("%s: event %d has seq %d", id, i, ev.Seq)
			}
			if p := last[id]; p != nil && ev.Lamport <= p.Lamport {
				t.Fatalf("%s seq %d: Lamport %d not above previous %d", id, ev.Seq, ev.Lamport, p.Lamport)
			}
			last[id] = ev
		}
	}
	for step := range tr.Len() {
		ev := tr.Event(step)
		if step > 0 && tr.Event(step-1).Lamport > ev.Lamport {
			t.Fatalf("step %d out of Lamport order", step)
		}
		if ev.Kind != node.KindRecv {
			continue
		}
		s, ok := sends[ev.Msg()]
		if !ok {
			t.Fatalf("step %d: received %s that was never sent", step, ev.Msg())
		}
		if ev.SendLamport != sendClock[ev.Msg()] || ev.Lamport <= ev.SendLamport {
			t.Fatalf("step %d: send clock %d (recorded %d), receive clock %d", step, sendClock[ev.Msg()], ev.SendLamport, ev.Lamport)
		}
		if s.To != ev.Node || s.Digest != xxhash.Sum64(ev.Payload) {
			t.Fatalf("step %d: content differs from what was sent", step)
		}
	}
}

func TestLamportInvariantsOnEveryTrace(t *testing.T) {
	for _, bug := range paxos.System.BugNames() {
		for seed := uint64(1); seed <= 10; seed++ {
			cfg := sim.DefaultConfig()
			cfg.Seed, cfg.Bug, cfg.Dup = seed, bug, 0.1
			data, _ := run(t, paxos.System, cfg)
			checkLamport(t, readTrace(t, data))
		}
	}
	data, _ := run(t, pingSystem(nil), sim.Config{Seed: 3, Drop: 0.2, Dup: 0.2, Churn: 2})
	checkLamport(t, readTrace(t, data))
}

func TestPartitionedMessagesNeverDelivered(t *testing.T) {
	var cutAt, healAt time.Duration = 300 * time.Millisecond, 900 * time.Millisecond
	sys := pingSystem(func(ctl system.Controller) {
		ctl.At(cutAt, func() { ctl.Partition([]node.ID{"n1", "n2"}) })
		ctl.At(healAt, func() { ctl.Heal() })
	})
	data, res := run(t, sys, sim.Config{Seed: 1, Drop: 0, Dup: 0, Churn: 0, LatencyMin: 5 * time.Millisecond, LatencyMax: 40 * time.Millisecond})
	if res.Stats.Partitioned == 0 {
		t.Fatal("no message was cut by the partition")
	}
	tr := readTrace(t, data)
	group := map[node.ID]int{"n1": 0, "n2": 0, "n3": 1, "n4": 1}
	crossBefore, crossAfter := 0, 0
	for i := range tr.Len() {
		ev := tr.Event(i)
		if ev.Kind != node.KindRecv {
			continue
		}
		at := time.Duration(ev.Time - sim.Epoch)
		cross := group[ev.From] != group[ev.Node]
		switch {
		case cross && at >= cutAt && at < healAt:
			// Includes messages sent before the cut and in flight.
			t.Fatalf("%s received a message from %s at %v, inside the partition", ev.Node, ev.From, at)
		case cross && at < cutAt:
			crossBefore++
		case cross && at >= healAt:
			crossAfter++
		}
	}
	if crossBefore == 0 || crossAfter == 0 {
		t.Fatalf("cross-group traffic before the cut %d, after healing %d: both should be > 0", crossBefore, crossAfter)
	}
}

func TestCrashLosesVolatileKeepsDisk(t *testing.T) {
	sys := pingSystem(func(ctl system.Controller) {
		ctl.At(500*time.Millisecond, func() { ctl.Crash("n3") })
		ctl.At(700*time.Millisecond, func() { ctl.Restart("n3") })
	})
	var beforeCrash *pinger
	var afterRestart *pinger
	cfg := sim.Config{Seed: 2, Churn: 0, Time: time.Second}
	cfg.Observe = func(ev *node.Event, in *node.Instance) error {
		if ev.Node != "n3" {
			return nil
		}
		switch ev.Kind {
		case node.KindCrash:
			if in.Up() || in.Handler() != nil {
				t.Fatal("a crashed node still has a handler")
			}
			if len(in.Timers()) != 0 {
				t.Fatal("a crashed node still has pending timers")
			}
		case node.KindRestart:
			p := *in.Handler().(*pinger)
			afterRestart = &p
		default:
			if afterRestart == nil && in.Up() {
				p := *in.Handler().(*pinger)
				beforeCrash = &p
			}
		}
		return nil
	}
	data, _ := run(t, sys, cfg)
	if beforeCrash == nil || afterRestart == nil {
		t.Fatal("the scenario did not crash and restart n3")
	}
	if beforeCrash.Volatile == 0 {
		t.Fatal("n3 received nothing before its crash")
	}
	if afterRestart.Volatile != 0 {
		t.Fatalf("volatile state survived the crash: %d", afterRestart.Volatile)
	}
	if afterRestart.Restored != beforeCrash.Durable {
		t.Fatalf("disk after restart holds %d, before the crash %d", afterRestart.Restored, beforeCrash.Durable)
	}
	// Nothing is delivered to n3 while it is down.
	tr := readTrace(t, data)
	for i := range tr.Len() {
		ev := tr.Event(i)
		at := time.Duration(ev.Time - sim.Epoch)
		if ev.Node == "n3" && at > 500*time.Millisecond && at < 700*time.Millisecond && ev.Kind != node.KindCrash {
			t.Fatalf("n3 ran a %s event at %v while down", ev.Kind, at)
		}
	}
}

func TestLossAndDuplication(t *testing.T) {
	_, lossy := run(t, pingSystem(nil), sim.Config{Seed: 4, Drop: 1, Churn: 0})
	if lossy.Stats.Delivered != 0 || lossy.Stats.Lost != lossy.Stats.Sent || lossy.Stats.Sent == 0 {
		t.Fatalf("drop 1: %+v", lossy.Stats)
	}
	data, dup := run(t, pingSystem(nil), sim.Config{Seed: 4, Dup: 1, Churn: 0, Steps: 1000})
	tr := readTrace(t, data)
	seen := map[node.MsgID]int{}
	for i := range tr.Len() {
		ev := tr.Event(i)
		if ev.Kind == node.KindRecv {
			seen[ev.Msg()]++
		}
	}
	twice := 0
	for _, n := range seen {
		if n == 2 {
			twice++
		}
		if n > 2 {
			t.Fatal("a message was delivered more than twice")
		}
	}
	if dup.Stats.Duplicated == 0 || twice == 0 {
		t.Fatalf("dup 1: %d duplicated, %d delivered twice", dup.Stats.Duplicated, twice)
	}
}

func TestStopConditions(t *testing.T) {
	_, res := run(t, pingSystem(nil), sim.Config{Seed: 1, Steps: 123, Time: time.Hour})
	if res.Steps != 123 || res.Reason != "step limit (123)" {
		t.Fatalf("step limit: %d steps, %q", res.Steps, res.Reason)
	}
	_, res = run(t, pingSystem(nil), sim.Config{Seed: 1, Steps: 1e6, Time: 250 * time.Millisecond})
	if res.Time > 250*time.Millisecond || res.Reason != "time limit (250ms)" {
		t.Fatalf("time limit: %v, %q", res.Time, res.Reason)
	}
	sys := pingSystem(func(ctl system.Controller) {
		ctl.StopWhen(func() bool {
			p, _ := ctl.Handler("n1").(*pinger)
			return p != nil && p.Volatile >= 10
		})
	})
	_, res = run(t, sys, sim.Config{Seed: 1, Steps: 1e6, Time: time.Hour, Churn: 0})
	if res.Reason != "scenario done" {
		t.Fatalf("StopWhen: %q", res.Reason)
	}
}

func TestBadConfigRejected(t *testing.T) {
	var buf bytes.Buffer
	cfg := sim.DefaultConfig()
	cfg.Bug = "nonesuch"
	_, err := sim.Run(paxos.System, cfg.WithDefaults(paxos.System), &buf)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("latest-response")) {
		t.Fatalf("unknown bug: %v", err)
	}
	sys := pingSystem(func(ctl system.Controller) { ctl.Crash("nobody") })
	_, err = sim.Run(sys, sim.Config{}.WithDefaults(sys), &buf)
	if err == nil {
		t.Fatal("a scenario naming an unknown node ran")
	}
}

// panicky panics on its third event.
type panicky struct{ N int }

func (p *panicky) Init(env node.Env)                       { env.After(time.Millisecond, "t") }
func (p *panicky) Receive(node.Env, node.ID, node.Message) {}
func (p *panicky) Timer(env node.Env, _ node.Timer) {
	p.N++
	if p.N == 2 {
		panic(fmt.Sprintf("boom at %d", p.N))
	}
	env.After(time.Millisecond, "t")
}

func TestHandlerPanicKeepsTrace(t *testing.T) {
	sys := &system.System{Name: "panicky", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &panicky{} }, Sim: system.SimDefaults{Nodes: 1}}
	var buf bytes.Buffer
	res, err := sim.Run(sys, sim.Config{Seed: 1}.WithDefaults(sys), &buf)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("boom at 2")) || !bytes.Contains([]byte(err.Error()), []byte("seed 1")) {
		t.Fatalf("error %v does not report the panic with its seed", err)
	}
	f, rerr := record.Read(bytes.NewReader(buf.Bytes()), "p.lz4", int64(buf.Len()))
	if rerr != nil || !f.Ended || len(f.Events) != res.Steps {
		t.Fatalf("trace after a panic: err=%v ended=%v events=%d steps=%d", rerr, f != nil && f.Ended, len(f.Events), res.Steps)
	}
}

// An observer that stops a run may say why, and the trace's end says it
// (replay info read "stopped by observer" after sim said "stopped:
// interrupted").
func TestAnObserverSaysWhyItStopped(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{sim.ErrStopped, "stopped by observer"},
		{fmt.Errorf("interrupted: %w", sim.ErrStopped), "interrupted"},
	} {
		cfg := sim.DefaultConfig()
		n := 0
		cfg.Observe = func(*node.Event, *node.Instance) error {
			if n++; n == 10 {
				return c.err
			}
			return nil
		}
		var buf bytes.Buffer
		res, err := sim.Run(paxos.System, cfg.WithDefaults(paxos.System), &buf)
		if err != nil || res.Reason != c.want {
			t.Fatalf("%v: reason %q, err %v; want %q", c.err, res.Reason, err, c.want)
		}
	}
}

// A scenario's crash keeps its node down until the scenario restarts it,
// also when churn had crashed the node just before: churn's planned
// restart must not undo it (a new user's permanent crash vanished so).
func TestAScenarioCrashOfANodeChurnHadCrashedHolds(t *testing.T) {
	const crashAt = 600 * time.Millisecond
	sys := pingSystem(func(ctl system.Controller) {
		ctl.At(crashAt, func() { ctl.Crash("n2") })
	})
	overlapped := 0
	for seed := uint64(1); seed <= 40; seed++ {
		cfg := sim.Config{Seed: seed, Churn: 3, Time: 2 * time.Second, MaxDown: 4}
		data, _ := run(t, sys, cfg)
		tr := readTrace(t, data)
		downAtCrash, restartedAfter := false, time.Duration(-1)
		for i := range tr.Len() {
			ev := tr.Event(i)
			if ev.Node != "n2" {
				continue
			}
			at := time.Duration(ev.Time - sim.Epoch)
			switch {
			case at < crashAt:
				downAtCrash = ev.Kind == node.KindCrash
			case ev.Kind == node.KindRestart && restartedAfter < 0:
				restartedAfter = at
			}
		}
		if !downAtCrash {
			continue
		}
		overlapped++
		if restartedAfter >= 0 {
			t.Fatalf("seed %d: churn had n2 down when the scenario crashed it at %v, and n2 restarted at %v", seed, crashAt, restartedAfter)
		}
	}
	if overlapped == 0 {
		t.Fatal("no seed had churn crash n2 just before the scenario's crash")
	}
}
