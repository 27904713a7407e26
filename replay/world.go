package replay

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/world"
)

// WorldError says why the world at a step cannot be rebuilt: a node whose
// state there is unknown.
type WorldError struct {
	Step   int
	Node   node.ID
	Reason string
}

func (e *WorldError) Error() string {
	return fmt.Sprintf("cannot rebuild the world at #%d: node %s: %s", e.Step, e.Node, e.Reason)
}

// WorldAt re-executes a fresh replayer through step and returns the world
// there: every node's state, the messages in flight and the pending timers.
// The messages' content comes from re-executing their senders, so it is
// known even where the receiver's trace has not recorded it (yet). A node
// whose state at step is unknown (not in the traces, a killed process, a
// gap, a recording that begins with a restart) makes it fail with a
// *WorldError naming the node and why, before anything is replayed; a
// replay that diverges fails with the *Divergence. progress, if not nil,
// is called every few thousand steps.
//
// The world takes over the replayed nodes' handlers and stores (see
// world.Share): r cannot step any further.
func WorldAt(r *Replayer, step int, progress func(step int)) (*world.World, error) {
	tr := r.tr
	if r.pos != -1 {
		return nil, fmt.Errorf("world at #%d: the replayer has already run to step #%d (it must start from the beginning)", step, r.pos)
	}
	if step < 0 || step >= tr.Len() {
		return nil, fmt.Errorf("step #%d is outside the trace (#0..#%d)", step, tr.Len()-1)
	}
	for _, id := range tr.Nodes {
		if r.nodes[id] == nil && r.notStarted(id) {
			// Part of the world, to be started by its continuation.
			r.nodes[id] = r.newNode(id)
			continue
		}
		if why := r.unknownAt(id, step); why != "" {
			return nil, &WorldError{Step: step, Node: id, Reason: why}
		}
	}
	inflight := map[node.MsgID]world.Message{}
	incarnation := map[node.ID]int{}
	now := int64(math.MinInt64)
	err := r.RunTo(step, func(s int) error {
		rec := tr.Event(s)
		now = max(now, rec.Time)
		switch rec.Kind {
		case node.KindInit, node.KindRestart:
			incarnation[rec.Node]++
		case node.KindRecv:
			delete(inflight, rec.Msg())
		}
		ev := r.Replayed()
		if ev == nil { // unknownAt rules this out
			return fmt.Errorf("world at #%d: step #%d (%s seq %d) was not re-executed", step, s, rec.Node, rec.Seq)
		}
		for i, snd := range ev.Sends {
			id := ev.SentMsg(i)
			inflight[id] = world.Message{ID: id, To: snd.To, SendLamport: ev.Lamport, Type: snd.Type,
				Payload: slices.Clone(snd.Payload), SentAt: rec.Time, SendStep: s}
		}
		if progress != nil && s%2048 == 0 {
			progress(s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if r.pos != step {
		return nil, fmt.Errorf("world at #%d: the replay stopped at #%d", step, r.pos)
	}
	// Times count from the first file's origin, as every verb prints
	// them, so that a fork's kept steps print as the parent's.
	start := tr.Header.Start
	floors := map[uint64]bool{}
	var parent []string
	var serial uint64
	for _, f := range tr.Files {
		parent = append(parent, f.Path)
		for _, seg := range f.Segments {
			for _, c := range seg.ForkClocks {
				floors[c] = true
			}
			if c := seg.SerialClocks; c > 0 && (serial == 0 || c < serial) {
				serial = c
			}
		}
	}
	w := &world.World{
		System: tr.Header.System, Bug: tr.Header.Bug, Params: maps.Clone(tr.Header.Params), Codec: tr.Header.Codec,
		Nodes: slices.Clone(tr.Nodes), Node: map[node.ID]*world.Node{},
		Step: step, Lamport: tr.Event(step).Lamport,
		Start: start, Now: now - start,
		ForkClocks:   slices.Sorted(maps.Keys(floors)),
		SerialClocks: serial,
		Parent:       parent,
	}
	stopped := r.stoppedAt(step, now)
	for _, id := range tr.Nodes {
		inst := r.Instance(id)
		if why, ok := stopped[id]; ok {
			inst.Kill() // the process was gone; its disk is what it wrote
			w.Stopped = append(w.Stopped, world.Stop{Node: id, Reason: why})
		}
		last, ok := tr.LastStepOf(id, step)
		if !ok {
			last = -1
		}
		n := &world.Node{ID: id, Started: inst.Seq() > 0, Up: inst.Up(), Seq: inst.Seq(), Lamport: inst.Lamport(),
			Incarnation: incarnation[id], LastStep: last, State: inst.Snapshot(world.Share)}
		if inst.Up() {
			n.Timers = inst.Timers()
		}
		w.Node[id] = n
	}
	// The world owns the instances' handlers and stores now.
	r.err = fmt.Errorf("this replay's nodes were handed to the world at #%d; start a new replay", step)
	for _, m := range inflight {
		w.InFlight = append(w.InFlight, m)
	}
	w.SortInFlight()
	if err := w.Check(); err != nil {
		return nil, err
	}
	return w, nil
}

// stoppedAt finds the live nodes whose process had stopped at the world:
// their recording ended cleanly (an end record: SIGTERM, a clean close)
// no later than the world's time now (Unix ns), after their last event at
// or before step. Replay keeps such a node up, since no crash was
// recorded; a world must not, or its continuation would run a node that
// was not running.
func (r *Replayer) stoppedAt(step int, now int64) map[node.ID]string {
	tr := r.tr
	stopped := map[node.ID]string{}
	for _, f := range tr.Files {
		if f.Header.Driver != "live" {
			continue // a simulation's end is the run's, not a process's
		}
		k := 0
		for i, seg := range f.Segments {
			if !f.SegmentEnded[i] {
				continue
			}
			end := f.Ends[k]
			k++
			if end.Time > now {
				continue
			}
			span := f.NodeSpans()[i]
			for _, id := range seg.Recorded {
				last, ok := tr.LastStepOf(id, step)
				if sp, in := span[id]; !ok || !in || !sp.Contains(tr.Event(last).Seq) {
					continue // it ran in another segment since
				}
				stopped[id] = end.Reason
			}
		}
	}
	return stopped
}

// notStarted reports whether a node the replay leaves out had not started
// by the end of a simulation: a simulation records every node from the
// start, so one without events (a run cut before its init) is known not
// to have run, as a recording of a live process cannot tell.
func (r *Replayer) notStarted(id node.ID) bool {
	if len(r.tr.NodeSteps(id)) > 0 || len(r.opts.Nodes) > 0 || len(r.tr.Unknown[id]) > 0 {
		return false // a damaged file may have lost its init
	}
	for _, f := range r.tr.Files {
		if f.Header.Driver != "sim" {
			return false
		}
	}
	return true
}

// unknownAt says why a node's state at step cannot be known ("" if it
// can). Its disk must be known too: replay rebuilds a node's store from
// the writes it re-executes, so a stretch of missing recording before the
// step loses writes even when a restart rebuilt the handler since.
func (r *Replayer) unknownAt(id node.ID, step int) string {
	tr := r.tr
	if r.nodes[id] == nil {
		if u, ok := tr.UnknownAt(id, step); ok {
			return "state unknown: " + u.Reason
		}
		if slices.Contains(tr.Recorded, id) {
			return "it is left out of the replay (--nodes)"
		}
		for _, f := range tr.Files {
			for _, seg := range f.Segments {
				if slices.Contains(seg.Recorded, id) {
					return "state unknown: its recording holds no events"
				}
			}
		}
		return "state unknown: none of the given traces records it (give its trace file too)"
	}
	for _, u := range tr.Unknown[id] {
		switch {
		case u.Covers(step):
			after := fmt.Sprintf("since its last recorded event at #%d", u.After)
			switch {
			case u.Down:
				after = fmt.Sprintf("since its crash at #%d (it was down; whether it came back is not recorded)", u.After)
			case u.After < 0:
				after = "from the start"
			}
			return fmt.Sprintf("state unknown %s: %s", after, u.Reason)
		case u.After < step && u.Until >= 0 && u.Until <= step:
			return fmt.Sprintf("its recording is missing from after #%d until its restart at #%d (%s), so its disk at #%d is unknown",
				u.After, u.Until, u.Reason, step)
		}
	}
	if steps := tr.NodeSteps(id); len(steps) > 0 {
		if first := tr.Event(steps[0]); first.Kind != node.KindInit {
			return fmt.Sprintf("its recording begins with a %s (seq %d at #%d), so its state and disk from before the recording are unknown",
				first.Kind, first.Seq, steps[0])
		}
	}
	return ""
}

// raiseToFloor applies a fork's clock floors before a node's event whose
// recorded clock is lamport: the forking simulator raised every clock to
// at least the floor of its fork, so the node's first event above a floor
// follows a clock at that floor.
func raiseToFloor(in *node.Instance, floors []uint64, lamport uint64) {
	i, _ := slices.BinarySearch(floors, lamport) // floors[i-1] < lamport
	if i == 0 {
		return
	}
	if f := floors[i-1]; in.Lamport() < f {
		in.Resume(in.Seq(), f)
	}
}

// raiseSerial applies a trace's serial clocks before a node's event above
// them: the simulator raised the node's clock to the highest
// clock run before the event, which is prev, the clock of the step
// before it. Raising to prev rather than to one below the event's own
// clock keeps a recorded clock that jumps ahead a divergence.
func raiseSerial(in *node.Instance, prev uint64) {
	if in.Lamport() < prev {
		in.Resume(in.Seq(), prev)
	}
}

// IsWorldError reports whether err says a world cannot be rebuilt.
func IsWorldError(err error) bool {
	var we *WorldError
	return errors.As(err, &we)
}
