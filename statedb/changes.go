package statedb

import (
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
)

// Changes follows nodes' flattened states from step to step as a build
// does, and says what each step changed: the database's deltas without
// a database (replay why without an index). Flattening a node's state
// against its last one shares that one's strings, and the diff needs no
// index of paths, so a step costs about what the build's replay side
// does, not a map of every leaf.
type Changes struct {
	flat  state.Flattener
	nodes map[node.ID]*changing
	used  []bool
}

// changing is a node's state after its last step, and the spare the next
// step's is flattened into.
type changing struct{ last, spare *stepLeaves }

// NewChanges starts following states: every node's is empty.
func NewChanges() *Changes { return &Changes{nodes: map[node.ID]*changing{}} }

// Step flattens inst, the instance of node id, after one of its steps
// (start: the trace's start, for timers' due times) and returns the paths
// the step removed and the leaves it added or changed, in state order.
func (c *Changes) Step(id node.ID, inst *node.Instance, start int64) (removed []string, set []state.Leaf) {
	n := c.nodes[id]
	if n == nil {
		n = &changing{spare: new(stepLeaves)}
		c.nodes[id] = n
	}
	cur := n.spare
	cur.after(&c.flat, inst, start, n.last)
	var old []state.Leaf
	if n.last != nil {
		old = n.last.leaves
	}
	if cap(c.used) < len(old) {
		c.used = make([]bool, len(old))
	}
	d, ok := diffMatched(old, cur.leaves, cur.from, c.used)
	if !ok {
		d = diffLeaves(old, cur.leaves)
	}
	// The state before is no one's now: the next step flattens into it.
	n.spare, n.last = n.last, cur
	if n.spare == nil {
		n.spare = new(stepLeaves)
	}
	set = make([]state.Leaf, len(d.set))
	for i, s := range d.set {
		set[i] = state.Leaf{Path: s.path, Value: s.value}
	}
	return d.removed, set
}
