package replay

import (
	"fmt"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
)

// DefaultCheckpointEvery is the default K: any seek re-executes at most K
// events.
const DefaultCheckpointEvery = 1000

// checkpoint is the state of every replayed node before step Before.
type checkpoint struct {
	before int
	nodes  map[node.ID]*nodeSnap
}

type nodeSnap struct {
	snap    *node.Snapshot // nil: the node cannot be copied (or has live tasks); rebuild it
	lastRun int
}

// Cursor moves a replay to any step, forward or back. Checkpoints (deep
// copies of every node) taken every K steps bound a seek to K re-executed
// events. Position p means steps 0..p have executed; -1 is the start.
type Cursor struct {
	r     *Replayer
	every int
	cps   []*checkpoint // cps[i].before == i*every
}

// NewCursor wraps a fresh replayer (one that has not stepped yet).
func NewCursor(r *Replayer, every int) (*Cursor, error) {
	if r.pos != -1 {
		return nil, fmt.Errorf("replay cursor: the replayer has already run to step %d", r.pos)
	}
	if every <= 0 {
		every = DefaultCheckpointEvery
	}
	c := &Cursor{r: r, every: every}
	c.cps = append(c.cps, c.take(nil))
	return c, nil
}

// Replayer is the replay the cursor drives (for its accessors).
func (c *Cursor) Replayer() *Replayer { return c.r }

// Pos is the last executed step (-1 at the start).
func (c *Cursor) Pos() int { return c.r.pos }

// Len is the number of steps in the trace.
func (c *Cursor) Len() int { return c.r.Len() }

// State returns a node's handler at the current position, read-only (nil
// while the node is down, not yet started, not replayed or unknown).
func (c *Cursor) State(id node.ID) node.Handler {
	n := c.r.nodes[id]
	if n == nil {
		return nil
	}
	if _, unknown := c.r.Unknown(id); unknown {
		return nil
	}
	return n.inst.Handler()
}

// take snapshots every replayed node, sharing the previous checkpoint's
// snapshot for nodes that have not run since.
func (c *Cursor) take(prev *checkpoint) *checkpoint {
	cp := &checkpoint{before: c.r.pos + 1, nodes: map[node.ID]*nodeSnap{}}
	for _, id := range c.r.ids {
		n := c.r.nodes[id]
		if prev != nil {
			if old := prev.nodes[id]; old != nil && old.lastRun == n.lastRun {
				cp.nodes[id] = old
				continue
			}
		}
		ns := &nodeSnap{lastRun: n.lastRun}
		if n.inst.LiveTasks() == 0 && state.Copyable(n.inst.Handler()) {
			ns.snap = n.inst.Snapshot(state.Copier)
		}
		cp.nodes[id] = ns
	}
	return cp
}

// Step executes the next step (io.EOF at the end).
func (c *Cursor) Step() error {
	if err := c.r.Next(); err != nil {
		return err
	}
	c.maybeCheckpoint()
	return nil
}

func (c *Cursor) maybeCheckpoint() {
	next := c.r.pos + 1
	if next%c.every == 0 && next/c.every == len(c.cps) && next < c.r.Len() {
		c.cps = append(c.cps, c.take(c.cps[len(c.cps)-1]))
	}
}

// Back moves one step back.
func (c *Cursor) Back() error {
	if c.r.pos < 0 {
		return fmt.Errorf("already at the start")
	}
	return c.Seek(c.r.pos - 1)
}

// Seek moves to position target (-1: the start; Len()-1: the end).
func (c *Cursor) Seek(target int) error {
	if target < -1 || target >= c.r.Len() {
		return fmt.Errorf("step #%d is outside the trace (#0..#%d)", target, c.r.Len()-1)
	}
	if target == c.r.pos {
		return nil
	}
	// Going forward from the current position needs no restore unless a
	// later checkpoint is closer. Restoring clears a divergence; stepping
	// forward again reproduces it at the same step.
	best := min((target+1)/c.every, len(c.cps)-1)
	if target < c.r.pos || c.cps[best].before > c.r.pos+1 {
		if err := c.restore(c.cps[best]); err != nil {
			return err
		}
	}
	for c.r.pos < target {
		if err := c.Step(); err != nil {
			return err
		}
	}
	return nil
}

// restore puts every node back in a checkpoint's state; nodes that have not
// run since the checkpoint are already in it and are left alone. A node
// whose state could not be copied is rebuilt by re-executing its events,
// which costs its events up to the checkpoint rather than K steps.
func (c *Cursor) restore(cp *checkpoint) error {
	c.r.err = nil
	for _, id := range c.r.ids {
		n := c.r.nodes[id]
		s := cp.nodes[id]
		if n.lastRun == s.lastRun {
			continue
		}
		if s.snap == nil {
			// Re-execute from the latest earlier checkpoint that could
			// copy the node (a node with tasks is copyable whenever it
			// has none live), or from the start.
			var base *node.Snapshot
			from := 0
			for j := cp.before/c.every - 1; j >= 0 && j < len(c.cps); j-- {
				if b := c.cps[j].nodes[id]; b != nil && b.snap != nil {
					base, from = b.snap, c.cps[j].before
					break
				}
			}
			if err := c.r.rebuild(id, cp.before-1, base, from); err != nil {
				c.r.err = err
				return err
			}
			continue
		}
		n.inst.Restore(s.snap, state.Copier)
		n.lastRun = s.lastRun
	}
	c.r.pos = cp.before - 1
	c.r.ran = false
	return nil
}
