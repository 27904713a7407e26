package shrink

import (
	"fmt"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

// A key names an event by its cause rather than by ids a run assigns:
// message ids and timer ids count a node's events, so removing one event
// renumbers everything its node does after it. A delivery is the slot-th
// send of the run's event by, a timer firing the slot-th timer set by
// event by, a task's resumption the one woken by event by (ties in
// order, checked by the task's name). Events without a cause inside the run (init, the scenario's
// inputs and crashes, injected crashes and restarts) are named by node,
// time and, for an input, its payload digest; by is then -1.
type key struct {
	kind   node.Kind
	node   node.ID
	by     int
	slot   int
	at     time.Duration
	digest uint64
}

// loose is an input's key without its payload: the node and time a
// scenario input has.
func (k key) loose() key {
	return key{kind: k.kind, node: k.node, by: k.by, at: k.at}
}

// looseOK says whether entry i is an input that its node and time name
// alone: the base's only input to that node at that time. A scenario may
// draw an input's content from the nodes' state (randtree's contact),
// which a candidate changes; such an input is then matched by node and
// time. Two inputs at one node and time are matched by content only, or
// a left-out one could pass for the kept one.
func (b *base) looseOK(i int) bool {
	e := &b.entries[i]
	return e.Kind == node.KindInput && b.inputsAt[e.key.loose()] == 1
}

// entry is one event of a base run, in the order the simulator ran it.
type entry struct {
	sim.ScheduledEvent
	ev   *node.Event
	step int // its step in causal order, as every verb numbers it
	key  key
}

// base is a failing run that candidates are carved from.
type base struct {
	entries []entry
	nodes   int
	// fixed counts the entries that are a fork's kept steps #0..#fork_at
	// (0 for a simulated run): the recording's, replayed before the
	// continuation starts, so no candidate leaves them out or runs them.
	// They are entries so that the continuation's deliveries and timers
	// they caused are named by cause like any other.
	fixed int
	// from is when the schedule starts: the fork's time for a fork, 0 for
	// a simulated run.
	from time.Duration
	// inputsAt counts the inputs at each node and time (key.loose).
	inputsAt map[key]int
	// inFlight holds, by the key their delivery would have, the
	// messages in flight at the run's end (replay.InFlight).
	inFlight map[key]bool
}

// schedulable reports whether entry i belongs to the schedule a candidate
// edits (not a fork's recorded prefix).
func (b *base) schedulable(i int) bool { return i >= b.fixed }

// nodeSeq names one event of one node.
type nodeSeq struct {
	node node.ID
	seq  uint64
}

// timerOrigin is the event (by index) that set a timer and its position
// among the timers that event set.
type timerOrigin struct{ by, slot int }

// newBase reads a simulated trace or a fork into a base: its schedule
// (a fork's: that of its continuation, after its kept prefix), and for
// every event its step and its key.
func newBase(f *record.File, tr *replay.Trace) (*base, error) {
	b := &base{nodes: len(f.Header.Nodes)}
	var events []sim.ScheduledEvent
	if f.Header.Driver == sim.ForkDriver {
		sc, at, err := sim.ContinuationOf(f)
		if err != nil {
			return nil, err
		}
		b.fixed = at + 1
		for _, ev := range f.Events[:b.fixed] {
			events = append(events, sim.ScheduledEvent{At: time.Duration(ev.Time - f.Header.Start),
				Pending: sim.Pending{Kind: ev.Kind, Node: ev.Node}})
			b.from = max(b.from, time.Duration(ev.Time-f.Header.Start))
		}
		events = append(events, sc.Events...)
	} else {
		sc, err := sim.ScheduleOf(f)
		if err != nil {
			return nil, err
		}
		events = sc.Events
	}
	b.entries = make([]entry, len(events))
	bySeq := map[nodeSeq]int{}
	timers := map[node.ID]map[node.TimerID]timerOrigin{}
	for i, se := range events {
		ev := f.Events[i]
		step, ok := tr.Step(ev.Node, ev.Seq)
		if !ok {
			return nil, fmt.Errorf("%s: event %d (%s seq %d) has no step in the merged trace", f.Path, i, ev.Node, ev.Seq)
		}
		k := key{kind: se.Kind, node: se.Node, by: -1}
		switch se.Kind {
		case node.KindRecv:
			if by, ok := bySeq[nodeSeq{se.Msg.From, se.Msg.Seq}]; ok {
				k.by, k.slot = by, int(se.Msg.Index)
			}
		case node.KindTimer:
			if o, ok := timers[se.Node][se.Timer]; ok {
				k.by, k.slot = o.by, o.slot
			}
		case node.KindInput:
			k.at, k.digest = se.At, se.InputDigest
		case node.KindCrash, node.KindRestart:
			k.at = se.At
		case node.KindTask:
			// By the event that woke it: task ids count the tasks a node
			// started, so leaving out one renumbers the rest.
			if by, ok := bySeq[nodeSeq{ev.Node, ev.WakeSeq}]; ok {
				k.by = by
			}
		}
		b.entries[i] = entry{ScheduledEvent: se, ev: ev, step: step, key: k}
		if se.Kind == node.KindInput {
			if b.inputsAt == nil {
				b.inputsAt = map[key]int{}
			}
			b.inputsAt[k.loose()]++
		}
		bySeq[nodeSeq{ev.Node, ev.Seq}] = i
		setTimers(timers, ev, i, ev.TimersSet)
		for j, snd := range ev.Sends {
			if snd.To != ev.Node && tr.Fate(ev, j).Fate == replay.InFlight {
				if b.inFlight == nil {
					b.inFlight = map[key]bool{}
				}
				b.inFlight[key{kind: node.KindRecv, node: snd.To, by: i, slot: j}] = true
			}
		}
	}
	return b, nil
}

// setTimers notes the timers an event set. A node's timer ids start
// again after a crash and a restart, so its table starts again too.
func setTimers(timers map[node.ID]map[node.TimerID]timerOrigin, ev *node.Event, by int, set []node.TimerSet) {
	if ev.Kind == node.KindCrash || ev.Kind == node.KindRestart || timers[ev.Node] == nil {
		timers[ev.Node] = map[node.TimerID]timerOrigin{}
	}
	for j, ts := range set {
		timers[ev.Node][ts.ID] = timerOrigin{by: by, slot: j}
	}
}

// payloadDigest names an input by its content, as schedules do.
func payloadDigest(b []byte) uint64 { return xxhash.Sum64(b) }

// Size is what the table of docs/shrinking.md counts of a run.
type Size struct {
	Events int `json:"events"`
	Nodes  int `json:"nodes"`
	// Faults are crashes plus messages the network lost: sent to another
	// node, never received, and due (latency max after the send) before
	// the trace's last event. Messages still in flight at the end are not
	// losses; dropped deliveries are; a message whose receiver was down
	// over its whole delivery window is the crash's (replay's fate
	// "receiver down"), not a loss.
	Faults  int `json:"faults"`
	Crashes int `json:"crashes"`
	Lost    int `json:"lost"`
	// Dropped is the run's network drop counter (its end record's
	// "lost"). In a shrunk run it counts every message the candidate did
	// not deliver (also one its base sent to a node that was down), but
	// those it ended before: the deliveries its base made after the last
	// event it keeps, and messages in flight at its base's end.
	Dropped int `json:"dropped"`
	Inputs  int `json:"inputs"`
	// Prefix counts a fork's kept steps #0..#fork_at among Events: the
	// recording's, the same before and after (0 for a simulated run).
	Prefix int `json:"prefix,omitempty"`
}

// sizeOf measures f, whose merged trace tr tells each message's fate.
func sizeOf(f *record.File, tr *replay.Trace, latencyMax time.Duration) Size {
	s := Size{Events: len(f.Events), Nodes: len(f.Header.Nodes)}
	received := map[node.MsgID]bool{}
	var end int64
	for _, ev := range f.Events {
		switch ev.Kind {
		case node.KindCrash:
			s.Crashes++
		case node.KindInput:
			s.Inputs++
		case node.KindRecv:
			received[ev.Msg()] = true
		}
		end = max(end, ev.Time)
	}
	for _, ev := range f.Events {
		for i, snd := range ev.Sends {
			if snd.To != ev.Node && !received[ev.SentMsg(i)] && ev.Time+int64(latencyMax) <= end && tr.Fate(ev, i).Fate != replay.ReceiverDown {
				s.Lost++
			}
		}
	}
	s.Faults = s.Crashes + s.Lost
	for _, e := range f.Ends {
		s.Dropped += int(e.Stats["lost"])
	}
	return s
}
