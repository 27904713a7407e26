package world

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/replaycheck/replaycheck/node"
)

// World is a system after step Step of a trace.
//
// A World owns the handlers and stores in its nodes' states, and a driver
// that continues it continues them in place (sim.RunFrom does): continue
// a Copy to keep the world for another continuation.
type World struct {
	// System, Bug and Params build the nodes' handlers, as the trace's
	// header recorded them.
	System string
	Bug    string
	Params map[string]string
	// Codec is the message encoding of the trace (its header's codec;
	// empty: node.CodecName): a continuation encodes its messages so, as
	// its kept prefix was encoded.
	Codec string
	// Nodes lists every node of the system, sorted; Node has one entry
	// per node.
	Nodes []node.ID
	Node  map[node.ID]*Node
	// Step is the last executed step of the trace (0-based).
	Step int
	// Lamport is the Lamport clock of step Step: every event of steps
	// 0..Step has a clock at or below it.
	Lamport uint64
	// Start is the trace's time origin (Unix ns) and Now the time since
	// it at the world: the latest time of the events 0..Step (a live
	// trace's clocks may disagree; the latest is the one no event
	// contradicts).
	Start int64
	Now   int64
	// InFlight lists the messages sent at or before Step and not
	// received at or before it, in the order they were sent. A message
	// the original run never delivered (lost, or still in flight when
	// the recording ended) is in flight too: whoever continues the world
	// decides its fate.
	InFlight []Message
	// ForkClocks are the Lamport floors of the forks the trace itself
	// came from (its header's fork_clocks), so that a fork of a fork
	// keeps them.
	ForkClocks []uint64
	// SerialClocks is the clock above which the trace's steps were run
	// serially by the simulator (its header's serial_clocks; 0: none),
	// so that a fork keeps it.
	SerialClocks uint64
	// Stopped lists the nodes that are down because their live process
	// had ended its recording cleanly by Now (traces record no crash for
	// a stopped process), with the end's reason.
	Stopped []Stop
	// Parent names the trace files the world was built from.
	Parent []string
}

// Stop is a node whose process had stopped.
type Stop struct {
	Node   node.ID
	Reason string
}

// Node is one node's state in a world.
type Node struct {
	ID node.ID
	// Started reports whether the node has run its init (Seq > 0).
	Started bool
	// Up reports whether it is running: started and not crashed.
	Up bool
	// Seq and Lamport are its per-node sequence number and Lamport
	// clock after its last event.
	Seq     uint64
	Lamport uint64
	// Incarnation counts its inits and restarts so far.
	Incarnation int
	// Timers are its pending timers, by ID, with their due times (Unix
	// ns). Empty while the node is down.
	Timers []node.PendingTimer
	// LastStep is the step of its last event (-1: none yet).
	LastStep int
	// State is the instance's complete state (handler, store, runtime),
	// for node.Instance.Restore.
	State *node.Snapshot
}

// Message is a message in flight: the inputs of its receive event, its
// destination and when it was sent.
type Message struct {
	ID          node.MsgID
	To          node.ID
	SendLamport uint64
	Type        string
	Payload     []byte
	// SentAt is the time of the send event (Unix ns); SendStep its step.
	SentAt   int64
	SendStep int
}

// Share is the node.Copier that copies nothing: a snapshot taken or
// restored with it shares the instance's handler and store. Replay hands
// its instances to a world with it and the simulator takes them over with
// it, because a deep copy cannot rebind a function value bound to the
// handler's own objects (a method value such as etcd raft's tick): the
// copy's would still act on the original.
var Share = node.Copier{
	Handler: func(h node.Handler) node.Handler { return h },
	Store:   func(s node.Store) node.Store { return s },
}

// Copy returns a world whose nodes' handlers and stores are copied with c
// (state.Copier deep-copies them), for one more continuation of w. A
// handler whose state holds a function bound to itself (state.Copyable
// says so: etcd raft's r.tick) does not survive a copy; rebuild such a
// world with replay.WorldAt instead.
func (w *World) Copy(c node.Copier) *World {
	cp := *w
	cp.Params = maps.Clone(w.Params)
	cp.Nodes = slices.Clone(w.Nodes)
	cp.InFlight = slices.Clone(w.InFlight) // payloads are never written to
	cp.ForkClocks = slices.Clone(w.ForkClocks)
	cp.Parent = slices.Clone(w.Parent)
	cp.Stopped = slices.Clone(w.Stopped)
	cp.Node = make(map[node.ID]*Node, len(w.Node))
	for id, n := range w.Node {
		nc := *n
		nc.Timers = slices.Clone(n.Timers)
		nc.State = n.State.Copy(c)
		cp.Node[id] = &nc
	}
	return &cp
}

// Recv returns the inputs of the message's delivery, for a driver to
// dispatch at its receiver.
func (m Message) Recv() node.Event {
	return node.Event{Kind: node.KindRecv, From: m.ID.From, MsgSeq: m.ID.Seq, MsgIndex: m.ID.Index,
		SendLamport: m.SendLamport, MsgType: m.Type, Payload: m.Payload}
}

// Down lists the nodes that have started and are not running, sorted.
func (w *World) Down() []node.ID {
	var ids []node.ID
	for _, id := range w.Nodes {
		if n := w.Node[id]; n.Started && !n.Up {
			ids = append(ids, id)
		}
	}
	return ids
}

// NotStarted lists the nodes that have not run their init yet, sorted.
func (w *World) NotStarted() []node.ID {
	var ids []node.ID
	for _, id := range w.Nodes {
		if !w.Node[id].Started {
			ids = append(ids, id)
		}
	}
	return ids
}

// Timers counts the pending timers of every node.
func (w *World) Timers() int {
	n := 0
	for _, id := range w.Nodes {
		n += len(w.Node[id].Timers)
	}
	return n
}

// Check reports a world no driver could continue: a node missing its
// state, a message to or from a node that is not in the world, messages
// out of order.
func (w *World) Check() error {
	if len(w.Nodes) == 0 {
		return fmt.Errorf("world at step #%d has no nodes", w.Step)
	}
	if !slices.IsSorted(w.Nodes) {
		return fmt.Errorf("world at step #%d: nodes are not sorted", w.Step)
	}
	for _, id := range w.Nodes {
		n := w.Node[id]
		if n == nil || n.State == nil {
			return fmt.Errorf("world at step #%d: node %s has no state", w.Step, id)
		}
		if n.Up && !n.Started {
			return fmt.Errorf("world at step #%d: node %s is up but never started", w.Step, id)
		}
	}
	known := func(id node.ID) bool { _, ok := slices.BinarySearch(w.Nodes, id); return ok }
	for i, m := range w.InFlight {
		if !known(m.To) || !known(m.ID.From) {
			return fmt.Errorf("world at step #%d: message %s to %s: not a node of the world", w.Step, m.ID, m.To)
		}
		if i > 0 && compareSent(w.InFlight[i-1], m) >= 0 {
			return fmt.Errorf("world at step #%d: message %s is listed out of send order", w.Step, m.ID)
		}
	}
	return nil
}

// SortInFlight puts the messages in send order: by send step, then by
// index among the event's sends.
func (w *World) SortInFlight() { slices.SortFunc(w.InFlight, compareSent) }

func compareSent(a, b Message) int {
	if c := cmp.Compare(a.SendStep, b.SendStep); c != 0 {
		return c
	}
	return cmp.Compare(a.ID.Index, b.ID.Index)
}
