package sim

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/system"
	"github.com/replaycheck/replaycheck/world"
)

// ForkDriver is the driver name in a fork's trace header. It is not "sim"
// because the trace's first steps are the parent's, not the simulator's:
// ScheduleOf refuses it (a fork is re-made by forking its parent again,
// with the same seed).
const ForkDriver = "fork"

// RunFrom continues a world in simulation and writes the whole trace to
// out: first prefix, the parent trace's events 0..w.Step in step order
// (so that every verb numbers them as in the parent), then the
// continuation, run under cfg.Chooser (nil: Seeded for cfg.Seed).
//
// The world fixes the system's build (bug, params) and nodes: cfg's are
// replaced by the world's. cfg.Steps and cfg.Time bound the continuation
// (events run and virtual time elapsed after the fork), not the whole
// trace.
//
// The run takes over the world's handlers and stores and changes them as
// it goes: pass w.Copy(state.Copier) to continue one world more than once
// (the deep copy has the limits of state.Clone).
//
// What the continuation starts with:
//
//   - every node restored to its state in the world, its Lamport clock
//     raised to the world's (so that every new event sorts after the
//     kept steps; the header's fork_clocks tells replay);
//   - a node that has not started yet runs its init at once;
//   - pending timers at their due times (at once if already due);
//   - live tasks taken over as they stand (the world's instances move,
//     never copied), runnable ones resumed at once;
//   - messages in flight delivered within their latency window from
//     their send time, but not before the fork (an overdue message
//     arrives as the continuation starts); the chooser decides again
//     whether each is lost or duplicated, since the trace does not say;
//   - except a message whose receiver's own clock had passed the end of
//     its latency window: had it been on its way, it would have arrived
//     by then, so the parent lost it (dropped, or its receiver was down)
//     and it stays lost. The receiver's clock, not the world's, decides,
//     because a causal cut need not be a time cut. A receiver that is
//     down at the fork (or has not started) in a trace run in time order
//     was down through the world's time, so for it the world's time
//     decides: a message whose window closed before the fork reached a
//     down node and stays lost, even if the continuation restarts the
//     node at once (ReceiverWasDown);
//   - nodes down at the fork: under churn they restart after a --down
//     draw counted from their crash, among the downtimes longer than they
//     have been down already (restartLater); without churn they stay
//     down unless the chooser restarts them;
//   - no partition (traces do not record them: the network is healed);
//   - no scenario: the system's Scenario is not run again (it would
//     replay its inputs and faults from time zero), so a continuation
//     receives no external inputs.
func RunFrom(sys *system.System, cfg Config, w *world.World, prefix []*node.Event, out io.Writer) (*Result, error) {
	if err := w.Check(); err != nil {
		return nil, err
	}
	if w.System != sys.Name {
		return nil, fmt.Errorf("the world is of system %q, not %q", w.System, sys.Name)
	}
	if len(prefix) != w.Step+1 {
		return nil, fmt.Errorf("a fork at #%d keeps steps #0..#%d: got %d events", w.Step, w.Step, len(prefix))
	}
	cfg.Bug, cfg.Params, cfg.Nodes, cfg.Codec = w.Bug, w.Params, len(w.Nodes), w.Codec
	if err := sys.CheckBug(cfg.Bug); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := sys.CheckConfig(system.Config{Bug: cfg.Bug, Nodes: w.Nodes, Params: cfg.Params}); err != nil {
		return nil, err
	}
	s := newSim(sys, cfg, slices.Clone(w.Nodes))
	s.start, s.now, s.until = w.Start, w.Now, after(w.Now, int64(cfg.Time))

	h := s.header()
	h.Driver = ForkDriver
	h.Run["fork_of"] = record.ListValue(w.Parent)
	h.Run["fork_at"] = strconv.Itoa(w.Step)
	h.Run["fork_time"] = time.Duration(w.Now).String()
	// Floors of earlier forks at or above this one's concern only steps
	// this fork does not keep.
	for _, c := range w.ForkClocks {
		if c < w.Lamport {
			h.ForkClocks = append(h.ForkClocks, c)
		}
	}
	h.ForkClocks = append(h.ForkClocks, w.Lamport)
	// The continuation runs serially (see record.Header.SerialClocks),
	// and so do the kept steps of an earlier fork above its floor.
	h.SerialClocks = w.Lamport
	if c := w.SerialClocks; c > 0 && c < w.Lamport {
		h.SerialClocks = c
	}
	s.serialClock, s.causal = w.Lamport, false
	tw, err := record.NewWriter(out, h, record.WriterOptions{})
	if err != nil {
		return nil, err
	}
	s.w = tw
	for _, ev := range prefix {
		if err := tw.Append(ev); err != nil {
			tw.Close(record.End{Reason: "error: " + err.Error()})
			return nil, fmt.Errorf("write trace: %w", err)
		}
	}
	if err := s.restore(w, prefix); err != nil {
		return s.finish(err)
	}
	if cfg.Churn > 0 {
		for _, id := range s.ids {
			if sn := s.nodes[id]; sn.inst.Seq() > 0 && !sn.inst.Up() {
				s.restartLater(id, s.crashedAt(w.Node[id], prefix))
				continue
			}
			s.scheduleCrash(id)
		}
	}
	return s.runWatched(s.loop)
}

// restore builds the nodes from the world and queues what is pending in
// it: inits of nodes not started, timers, messages in flight.
func (s *Sim) restore(w *world.World, prefix []*node.Event) error {
	for _, id := range s.ids {
		wn := w.Node[id]
		sn := s.addNode(id)
		sn.inst.Restore(wn.State, world.Share)
		st, ok := sn.inst.Store().(*node.MemStore)
		if !ok {
			return fmt.Errorf("node %s: the world's store is a %T, not a memory store", id, sn.inst.Store())
		}
		sn.store = st
		sn.inst.Resume(sn.inst.Seq(), max(sn.inst.Lamport(), w.Lamport))
		sn.incarnation = wn.Incarnation
		switch {
		case !wn.Started:
			s.push(&item{at: s.now, kind: itemInit, to: id})
		case !wn.Up:
			s.down++
		}
		for _, t := range sn.inst.Timers() {
			s.push(&item{at: max(s.now, t.Due-s.start), kind: itemTimer, to: id, incarnation: sn.incarnation,
				ev: node.Event{Kind: node.KindTimer, TimerID: t.ID, TimerName: t.Name}})
		}
		s.queueTasks(sn, sn.inst.Runnable())
	}
	for _, m := range w.InFlight {
		msg, sent := m.Recv(), m.SentAt-s.start
		if LostByParent(w, m, func(step int) int64 { return prefix[step].Time }, s.cfg.LatencyMax) {
			s.stats.Lost++ // lost in the parent (a self-send too: its node crashed): see RunFrom
			s.stats.LostByParent++
			continue
		}
		if m.To == m.ID.From { // never lost, as in send
			s.deliverSince(sent, m.To, msg)
			continue
		}
		if s.lose(m.ID, m.To) {
			continue
		}
		s.deliverSince(sent, m.To, msg)
		if s.chooser.Duplicate(m.ID, m.To, s.cfg.Dup) {
			s.stats.Duplicated++
			s.deliverSince(sent, m.To, msg)
		}
	}
	return nil
}

// LostByParent says whether a fork of w takes message m, in flight in the
// world, as lost by the parent run: its receiver's own clock (the time of
// its last step, by stepTime) has passed the end of the message's latency
// window, so had it been on its way it would have arrived (see RunFrom).
// A receiver down at the fork, or not started, was down until the world's
// time, so that time is its clock here: the message reached a node that
// could not take it.
func LostByParent(w *world.World, m world.Message, stepTime func(step int) int64, latencyMax time.Duration) bool {
	if ReceiverWasDown(w, m, latencyMax) {
		return true
	}
	last := w.Node[m.To].LastStep
	return last >= 0 && stepTime(last) > after(m.SentAt, int64(latencyMax))
}

// ReceiverWasDown says whether message m, in flight in w, had its latency
// window close while its receiver was down (or not yet started) up to the
// world's time: the parent lost it because nothing was there to take it.
// The world's time says so only where the trace's steps are in time
// order (serial clocks, as the simulator runs them, from before the
// receiver went down): in a causal order (a live recording, --clocks
// causal) the receiver may have come back before that time in a step
// the cut leaves out, and taken the message then.
func ReceiverWasDown(w *world.World, m world.Message, latencyMax time.Duration) bool {
	to := w.Node[m.To]
	if to == nil || to.Up || w.SerialClocks == 0 || to.Started && to.Lamport < w.SerialClocks {
		return false
	}
	return w.Start+w.Now > after(m.SentAt, int64(latencyMax))
}

// SplitInFlight parts the world's messages in flight into those a fork
// delivers (flying) and those it takes as lost by the parent run
// (LostByParent), in the world's order.
func SplitInFlight(w *world.World, stepTime func(step int) int64, latencyMax time.Duration) (flying, lost []world.Message) {
	for _, m := range w.InFlight {
		if LostByParent(w, m, stepTime, latencyMax) {
			lost = append(lost, m)
		} else {
			flying = append(flying, m)
		}
	}
	return flying, lost
}

// deliverSince queues a delivery of a message sent at virtual time sent
// (before now): its latency window counts from the send, and what is
// overdue arrives from now on.
func (s *Sim) deliverSince(sent int64, to node.ID, msg node.Event) {
	lat := s.chooser.Latency(s.cfg.LatencyMin, s.cfg.LatencyMax)
	at := max(s.now, after(sent, int64(lat)))
	latest := max(s.now, after(sent, int64(max(lat, s.cfg.LatencyMax))))
	s.push(&item{at: at, latest: latest, kind: itemDeliver, to: to, ev: msg})
}

// crashedAt is the virtual time of the crash that keeps node n down at
// the fork: its last step's, when that is a crash, and no later than the
// fork. A node with no crash to count from (a live process that stopped
// cleanly, whose stop the trace does not time) counts from the fork.
func (s *Sim) crashedAt(n *world.Node, prefix []*node.Event) int64 {
	if n.LastStep < 0 || n.LastStep >= len(prefix) {
		return s.now
	}
	ev := prefix[n.LastStep]
	if ev.Node != n.ID || ev.Kind != node.KindCrash {
		return s.now
	}
	return min(ev.Time-s.start, s.now)
}

// restartLater restarts a node down at the fork after a --down draw
// counted from its crash (crashed, virtual time), then lets churn crash
// it again, as scheduleCrash does after its own crashes. A node already
// down for a while draws among the downtimes longer than that, so a fork
// never keeps a node down longer than --down allows (drawn from the fork
// instead, a node down for 400ms of a 500ms maximum stayed down up to
// 900ms: a "down too long" the parent's settings could not produce). One
// down longer than the maximum already restarts at once.
func (s *Sim) restartLater(id node.ID, crashed int64) {
	at := s.now
	if elapsed := time.Duration(s.now - crashed); elapsed < s.cfg.DownMax {
		down := s.chooser.DownFor(max(s.cfg.DownMin, elapsed), s.cfg.DownMax)
		at = max(s.now, after(crashed, int64(down)))
	}
	s.push(&item{at: at, kind: itemCall, fn: func() {
		s.Restart(id)
		s.push(&item{at: s.now, kind: itemCall, fn: func() { s.scheduleCrash(id) }})
	}})
}
