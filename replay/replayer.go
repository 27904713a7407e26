package replay

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/stall"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/system"
)

// Options configure a replay.
type Options struct {
	// Nodes restricts the replay to these nodes (partial replay). Messages
	// from the others come from the receivers' traces. Empty: every node
	// with recorded events.
	Nodes []node.ID
	// SkipStateHashes turns off the comparison of recorded state hashes
	// (faster; divergence is then detected only through effects).
	SkipStateHashes bool
	// Verbose keeps Debug-level handler log lines.
	Verbose bool
	// TaskBound is the wall time a resumed task may run without blocking
	// through the runtime (0: node.DefaultTaskBound).
	TaskBound time.Duration
	// Watch, if set, watches every handler call from another goroutine,
	// which may give up on one that does not return (a handler that
	// loops only when replayed: code changed since the recording, or
	// nondeterministic). The replay then ends with ErrAbandoned when, if
	// ever, the call returns.
	Watch *stall.Watch
}

// ErrAbandoned ends a replay whose handler call a watch gave up on
// (Options.Watch): the command that owned it has ended.
var ErrAbandoned = errors.New("replay: a handler call was given up on as stuck")

// Replayer re-executes a trace step by step, in causal order, on fresh
// instances built by the system's factory, feeding each event the recorded
// nondeterminism and checking its effects against the recording.
type Replayer struct {
	tr    *Trace
	sys   *system.System
	codec *node.Codec // sys.Codec as of the trace's codec version
	opts  Options
	nodes map[node.ID]*rnode
	ids   []node.ID // replayed nodes, sorted
	pos   int       // the last executed step; -1 before the first
	// rec is the recorded event of step recAt: the step just executed,
	// which the checker asks for at every step (a spilled trace takes a
	// lock shared with every other reader of it to look one up).
	rec   *node.Event
	recAt int
	ran   bool // whether step pos ran a handler here (its node is replayed and known)
	buf   node.Event
	src   recorded
	err   error // sticky: a divergence ends the replay

	members *node.Members // every node of the trace, shared by the instances
	sysCfg  system.Config // shared by the factories (see system.Config.Shared)

	slot *stall.Slot // the handler calls as Options.Watch sees them (nil: not watched)
}

type rnode struct {
	id    node.ID
	inst  *node.Instance
	store *node.MemStore
	// lastRun is the last step this node executed (-1: none), used to skip
	// restoring nodes a checkpoint would not change.
	lastRun int
	// restarts are the node's restart steps replayed so far, in order,
	// each with a copy of its disk just before: a node that cannot be
	// copied (live tasks) is rebuilt from its last restart, not from the
	// start.
	restarts []restartPoint
	// rebuilt counts the events its last rebuild re-executed (tests).
	rebuilt int
	// calls describe the node's handler calls, by kind of event, to a
	// watch (made when first needed).
	calls [node.KindTask + 1]*string
}

type restartPoint struct {
	step  int
	store *node.MemStore
}

// New prepares a replay of tr with the system registered under the trace's
// system name.
func New(tr *Trace, reg *system.Registry, opts Options) (*Replayer, error) {
	sys, err := reg.LookupRecorded(tr.Header.System)
	if err != nil {
		return nil, fmt.Errorf("cannot replay %s: %w", tr.Files[0].Path, err)
	}
	if err := sys.CheckBug(tr.Header.Bug); err != nil {
		return nil, fmt.Errorf("cannot replay %s: %w", tr.Files[0].Path, err)
	}
	for _, name := range tr.Header.Types {
		if !sys.Codec.Known(name) {
			return nil, fmt.Errorf("cannot replay %s: message type %q in the trace is not registered by system %s in this binary (was the code changed since recording?)",
				tr.Files[0].Path, name, sys.Name)
		}
	}
	if sys.CryptoRand {
		node.InterceptCryptoRand()
	}
	ids := opts.Nodes
	if len(ids) == 0 {
		ids = tr.Recorded
	}
	all := node.NewMembers(tr.Nodes)
	for _, id := range ids {
		if !all.Contains(id) {
			return nil, fmt.Errorf("--nodes: %s is not a node of this trace (nodes: %s)", id, joinIDs(tr.Nodes))
		}
	}
	// What handlers send is encoded as the recording encoded it.
	codec, err := sys.Codec.ForTrace(tr.Header.Codec)
	if err != nil {
		return nil, fmt.Errorf("cannot replay %s: %w", tr.Files[0].Path, err)
	}
	r := &Replayer{tr: tr, sys: sys, codec: codec, opts: opts, nodes: map[node.ID]*rnode{}, pos: -1, slot: opts.Watch.Slot()}
	for _, id := range ids {
		r.nodes[id] = r.newNode(id)
		r.ids = append(r.ids, id)
	}
	slices.Sort(r.ids)
	return r, nil
}

func joinIDs(ids []node.ID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, " ")
}

// Trace is the trace being replayed.
func (r *Replayer) Trace() *Trace { return r.tr }

// System is the system the trace records.
func (r *Replayer) System() *system.System { return r.sys }

// Watch is the watch of the replay's handler calls (Options.Watch; nil:
// none), for work bound to the replay (a predicates checker) to be
// watched by the same owner.
func (r *Replayer) Watch() *stall.Watch { return r.opts.Watch }

// Nodes lists the replayed nodes, sorted.
func (r *Replayer) Nodes() []node.ID { return r.ids }

// Pos is the last executed step (-1 before the first).
func (r *Replayer) Pos() int { return r.pos }

// Len is the number of steps in the trace.
func (r *Replayer) Len() int { return r.tr.Len() }

// Instance returns a replayed node's instance (nil if not replayed).
func (r *Replayer) Instance(id node.ID) *node.Instance {
	if n := r.nodes[id]; n != nil {
		return n.inst
	}
	return nil
}

// Unknown reports whether a node's state is unknown at the current
// position (its recording is missing there), and why.
func (r *Replayer) Unknown(id node.ID) (string, bool) {
	u, ok := r.tr.UnknownAt(id, r.pos)
	return u.Reason, ok
}

// Recorded is the recorded event of the last executed step.
func (r *Replayer) Recorded() *node.Event {
	if r.pos < 0 {
		return nil
	}
	if r.rec == nil || r.recAt != r.pos {
		r.rec, r.recAt = r.tr.Event(r.pos), r.pos
	}
	return r.rec
}

// Replayed is the re-executed event of the last step (with its regenerated
// log lines), or nil if the step's node is not replayed or its state is
// unknown there. It is valid until the next step.
func (r *Replayer) Replayed() *node.Event {
	if !r.ran {
		return nil
	}
	return &r.buf
}

// Close ends the replayed nodes' tasks (node.Go), whose goroutines would
// otherwise outlive the replay; the nodes' states may still be read. A
// replay without tasks has nothing to end.
func (r *Replayer) Close() {
	r.opts.Watch.Drop(r.slot)
	if r.slot != nil && r.slot.Abandoned() {
		return // a stuck handler holds its node; its tasks go with the process
	}
	for _, n := range r.nodes {
		n.inst.Close()
	}
}

// Err is the divergence or failure that stopped the replay, if any.
func (r *Replayer) Err() error { return r.err }

// Next executes the next step. It returns io.EOF after the last step and a
// *Divergence when the node did not do what the recording says.
func (r *Replayer) Next() error {
	if r.err != nil {
		return r.err
	}
	step := r.pos + 1
	if step >= r.tr.Len() {
		return io.EOF
	}
	r.pos, r.ran = step, false
	rec := r.tr.Event(step)
	r.rec, r.recAt = rec, step
	n := r.nodes[rec.Node]
	if n == nil {
		return nil
	}
	if _, unknown := r.tr.UnknownAt(rec.Node, step); unknown && rec.Kind != node.KindRestart {
		return nil
	}
	// From here on the node's state changes, even if the step diverges.
	n.lastRun = step
	if rec.Kind == node.KindRestart && (len(n.restarts) == 0 || n.restarts[len(n.restarts)-1].step < step) {
		if st, ok := n.inst.Store().(*node.MemStore); ok {
			n.restarts = append(n.restarts, restartPoint{step: step, store: st.Clone()})
		}
	}
	if err := r.exec(step, rec, n, !r.opts.SkipStateHashes); err != nil {
		r.err = err
		return r.err
	}
	r.ran = true
	if step == r.tr.Len()-1 && !r.opts.SkipStateHashes {
		if err := r.checkFinalStates(); err != nil {
			r.err = err
			return r.err
		}
	}
	return nil
}

// checkFinalStates compares each node's state after its last event with
// the hash its end record holds (traces whose hashes are spaced hash the
// last event of a node only there). A node whose last replayed event is
// not the one the hash follows (a damaged or partial recording) is
// skipped.
func (r *Replayer) checkFinalStates() error {
	for _, f := range r.tr.Files {
		for _, end := range f.Ends {
			for _, fs := range end.States {
				n := r.nodes[fs.Node]
				if n == nil || n.lastRun < 0 || !n.inst.Up() || n.inst.Seq() != fs.Seq {
					continue
				}
				if h := state.Hash(n.inst.Handler()); h != fs.Hash {
					rec := r.tr.Event(n.lastRun)
					d := r.divergence(n.lastRun, rec)
					d.What = "the node's final state (its effects matched)" + r.hashWindow(n.lastRun, rec.Node)
					d.Recorded, d.Now = fmt.Sprintf("state hash %016x (end record)", fs.Hash), fmt.Sprintf("state hash %016x", h)
					d.Causes = r.causes(stateCauses...)
					return d
				}
			}
		}
	}
	return nil
}

// hashWindow says where in a node's events a state mismatch found at step
// lies when the trace's hashes are spaced: after the node's last event
// whose recorded hash matched. "" when that is the event before.
func (r *Replayer) hashWindow(step int, id node.ID) string {
	events := 0
	for i := step - 1; i >= 0; i-- {
		ev := r.tr.Event(i)
		if ev.Node != id {
			continue
		}
		events++
		if ev.HasStateHash || ev.Kind == node.KindCrash {
			if events == 1 {
				return ""
			}
			how := "record with replay sim --hash-every 1 to have every event checked"
			if r.tr.Header.Driver != "sim" {
				// Live recordings space them by state size, with no flag
				// to change it: a simulated run of the system can.
				how = "a live recording spaces them by state size; a simulated run with --hash-every 1 has every event checked"
			}
			return fmt.Sprintf("; its state last matched its recording after #%d, so one of its %d events #%d..#%d made the difference (hashes in this trace are spaced; %s)", i, events, i+1, step, how)
		}
	}
	if events == 0 {
		return ""
	}
	return fmt.Sprintf("; no earlier event of the node carries a state hash, so one of its %d events up to #%d made the difference", events+1, step)
}

// stateCauses are the likely causes of a state-only divergence.
var stateCauses = []string{causeMapOrder, causeTime, causeRand, causeState, causeCode,
	"a field that should not be observed state (a cache, a handle) is not tagged replay:\"-\""}

// exec re-executes one recorded event on its node and checks its effects
// against the recording, and its state hash when hashes is set.
func (r *Replayer) exec(step int, rec *node.Event, n *rnode, hashes bool) error {
	if rec.Kind == node.KindRestart {
		// A restart after a process died without recording a crash
		// (kill -9), or a trace that begins with a restart: the new
		// incarnation continues from the recorded seq and clock.
		if n.inst.Up() {
			n.inst.Kill()
		}
		if rec.Seq != n.inst.Seq()+1 {
			n.inst.Resume(rec.Seq-1, rec.Lamport-1)
		}
	}
	h := r.tr.Files[r.tr.fileOf[step]].Header
	if len(h.ForkClocks) > 0 {
		raiseToFloor(n.inst, h.ForkClocks, rec.Lamport)
	}
	if s := h.SerialClocks; s > 0 && rec.Lamport > s && step > 0 {
		raiseSerial(n.inst, r.tr.Event(step-1).Lamport)
	}
	ev := &r.buf
	nondet, sends, set, cancelled, logs := ev.Nondet[:0], ev.Sends[:0], ev.TimersSet[:0], ev.TimersCancelled[:0], ev.Logs[:0]
	*ev = rec.Inputs()
	ev.Nondet, ev.Sends, ev.TimersSet, ev.TimersCancelled, ev.Logs = nondet, sends, set, cancelled, logs
	r.src.reset(rec)
	if r.slot != nil && !r.slot.Begin(step, n.call(rec.Kind)) {
		return ErrAbandoned
	}
	err := n.inst.Dispatch(ev, &r.src)
	if r.slot != nil && !r.slot.Leave() {
		return ErrAbandoned // given up on while the handler ran: the command has ended
	}
	if err != nil {
		return r.diverged(step, rec, ev, err)
	}
	if err := r.src.unconsumed(); err != nil {
		return r.diverged(step, rec, ev, err)
	}
	if d := r.compare(step, rec, ev); d != nil {
		return d
	}
	if rec.HasStateHash && hashes && n.inst.Up() {
		if h := state.Hash(n.inst.Handler()); h != rec.StateHash {
			d := r.divergence(step, rec)
			d.What = "the node's state after the event (its effects matched)" + r.hashWindow(step, rec.Node)
			d.Recorded, d.Now = fmt.Sprintf("state hash %016x", rec.StateHash), fmt.Sprintf("state hash %016x", h)
			d.Causes = r.causes(stateCauses...)
			return d
		}
	}
	return nil
}

// call describes the node's handler call for an event of kind to a watch.
func (n *rnode) call(kind node.Kind) *string {
	if kind < 0 || int(kind) >= len(n.calls) {
		kind = 0
	}
	if n.calls[kind] == nil {
		what := fmt.Sprintf("node %s's handler, in its %s event", n.id, kind)
		n.calls[kind] = &what
	}
	return n.calls[kind]
}

// newNode builds a fresh replayed node: a new instance on an empty store.
func (r *Replayer) newNode(id node.ID) *rnode {
	return r.newNodeOn(id, node.NewMemStore())
}

// newNodeOn builds a fresh replayed node on store.
func (r *Replayer) newNodeOn(id node.ID, store *node.MemStore) *rnode {
	if r.members == nil {
		// One node set and one system configuration for every node, so
		// that what a factory derives once per run (Config.Shared) is.
		r.members = node.NewMembers(r.tr.Nodes)
		r.sysCfg = system.NewConfig(r.tr.Header.Bug, r.tr.Nodes, r.tr.Header.Params)
	}
	cfg := r.sysCfg
	sys := r.sys
	return &rnode{id: id, store: store, lastRun: -1, inst: node.NewInstance(node.Config{
		ID: id, Nodes: r.tr.Nodes, Members: r.members, Codec: r.codec, Store: store, Verbose: r.opts.Verbose, TaskBound: r.opts.TaskBound,
		New: func() node.Handler { return sys.New(id, cfg) },
	})}
}

// rebuild puts a node in its state after step upTo by re-executing its
// own events from the start on a fresh instance: the way to restore a
// node whose state a copy cannot reproduce (see state.Copyable) or that
// has live tasks (node.Go). Each node's events replay on their own, so
// the others are untouched. With base set, the node starts from that
// snapshot, taken before step from, instead of from the start; a restart
// of the node replayed between from and upTo is a later start: the node
// is rebuilt from there, on a copy of its disk before the restart.
func (r *Replayer) rebuild(id node.ID, upTo int, base *node.Snapshot, from int) error {
	if base == nil {
		from = 0
	}
	old := r.nodes[id]
	var restart *restartPoint
	if old != nil {
		for i := len(old.restarts) - 1; i >= 0; i-- {
			if p := &old.restarts[i]; p.step <= upTo {
				if p.step >= from {
					restart = p
				}
				break
			}
		}
	}
	var n *rnode
	switch {
	case restart != nil:
		n = r.newNodeOn(id, restart.store.Clone())
		from = restart.step
	case base != nil:
		n = r.newNode(id)
		n.inst.Restore(base, state.Copier)
		n.store = n.inst.Store().(*node.MemStore)
	default:
		n = r.newNode(id)
	}
	if old != nil {
		n.restarts = old.restarts
		old.inst.Close() // its tasks' goroutines end
	}
	for _, step := range r.tr.NodeSteps(id) {
		if step < from {
			continue
		}
		if step > upTo {
			break
		}
		rec := r.tr.Event(step)
		if _, unknown := r.tr.UnknownAt(id, step); unknown && rec.Kind != node.KindRestart {
			continue
		}
		n.lastRun = step
		n.rebuilt++
		// Every step up to here ran forward once with its state hash
		// checked; effects are still compared, which is cheap.
		if err := r.exec(step, rec, n, false); err != nil {
			return fmt.Errorf("rebuilding %s at #%d: %w", id, step, err)
		}
	}
	r.nodes[id] = n
	return nil
}

// RunTo executes steps up to and including step to (or to the end, if to
// is beyond it), calling each (if not nil) after every step.
func (r *Replayer) RunTo(to int, each func(step int) error) error {
	for r.pos < to {
		if err := r.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if each != nil {
			if err := each(r.pos); err != nil {
				return err
			}
		}
	}
	return nil
}
