package replay

import (
	"fmt"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/world"
)

// Checkpoint is every replayed node's state after one step: a point from
// which another replayer of the same trace and nodes can go on, as if it
// had executed every step before. `replay check --jobs` starts its
// segments from checkpoints that a cheap pass (no predicates) takes.
type Checkpoint struct {
	pos   int
	nodes map[node.ID]*nodeSnap
}

// Pos is the last step the checkpoint's nodes executed (-1: none).
func (cp *Checkpoint) Pos() int { return cp.pos }

// TakeCheckpoint deep-copies every replayed node's state after the last
// executed step. A node whose state a copy cannot reproduce (see
// state.Copyable, or one with live tasks) is recorded as such; StartAt rebuilds it by
// re-executing its own events.
func (r *Replayer) TakeCheckpoint() *Checkpoint {
	cp := &Checkpoint{pos: r.pos, nodes: map[node.ID]*nodeSnap{}}
	for _, id := range r.ids {
		n := r.nodes[id]
		ns := &nodeSnap{lastRun: n.lastRun}
		if n.inst.LiveTasks() == 0 && state.Copyable(n.inst.Handler()) {
			ns.snap = n.inst.Snapshot(state.Copier)
		}
		cp.nodes[id] = ns
	}
	return cp
}

// CompareStateHashes turns the comparison of recorded state hashes on or
// off from the next step on: a replay without them (a cheap pass) can be
// handed to a checker that wants them, instead of copying its nodes into
// a checkpoint.
func (r *Replayer) CompareStateHashes(on bool) { r.opts.SkipStateHashes = !on }

// Rebind says that the replay goes on on the calling goroutine: a replay
// handed from one goroutine to another must call it there before its next
// step (see node.Instance.Rebind).
func (r *Replayer) Rebind() {
	for _, n := range r.nodes {
		n.inst.Rebind()
	}
}

// StartAt moves a replayer that has not stepped yet to a checkpoint taken
// on a replay of the same trace with the same nodes; its next step is the
// one after the checkpoint's. The checkpoint's copies are taken over, not
// copied again: a checkpoint starts one replayer only.
func (r *Replayer) StartAt(cp *Checkpoint) error {
	if r.pos != -1 {
		return fmt.Errorf("start at #%d: the replayer has already run to step #%d", cp.pos, r.pos)
	}
	if len(cp.nodes) != len(r.ids) {
		return fmt.Errorf("start at #%d: the checkpoint holds %d nodes, the replay %d", cp.pos, len(cp.nodes), len(r.ids))
	}
	for _, id := range r.ids {
		s := cp.nodes[id]
		if s == nil {
			return fmt.Errorf("start at #%d: node %s is not in the checkpoint", cp.pos, id)
		}
		if s.lastRun < 0 {
			continue // never ran: the fresh instance is its state
		}
		if s.snap == nil {
			if err := r.rebuild(id, cp.pos, nil, 0); err != nil {
				r.err = err
				return err
			}
			continue
		}
		n := r.nodes[id]
		n.inst.Restore(s.snap, world.Share)
		n.lastRun = s.lastRun
	}
	cp.nodes = nil // taken over
	r.pos, r.ran = cp.pos, false
	return nil
}
