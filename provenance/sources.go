package provenance

import (
	"fmt"
	"slices"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/stall"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/statedb"
	"github.com/replaycheck/replaycheck/system"
)

// FromDB serves states from a trace database: a state is a checkpoint
// plus a few deltas, a last write one read of the field's versions, so a
// query costs a few reads per hop whatever the trace's length.
func FromDB(db *statedb.DB) States { return dbStates{db} }

type dbStates struct{ db *statedb.DB }

func (d dbStates) State(id node.ID, pos int) ([]state.Leaf, map[string]bool, error) {
	ns, err := d.db.State(id, pos)
	if err != nil {
		return nil, nil, err
	}
	return ns.Leaves, ns.Changed, nil
}

func (d dbStates) LastWrite(id node.ID, path string, pos int) (Write, bool, error) {
	vs, err := d.db.History(id, path, pos, 1, 0)
	if err != nil || len(vs) == 0 {
		return Write{}, false, err
	}
	v := vs[len(vs)-1]
	return Write{Step: v.Step, Value: v.Value, Removed: v.Removed}, true, nil
}

// Replayed serves states from one replay of the trace up to a step, for a
// trace without a database: it keeps what each step changed in its node's
// state (the database's deltas, in memory), not whole states, so memory
// grows with the changes, and a state is rebuilt from them.
type Replayed struct {
	tr    *replay.Trace
	upTo  int
	steps map[node.ID][]int // each node's replayed steps, in order
	delta map[int][]change  // what each step changed on its node
}

// change is one field a step set or removed (state.Diff cannot tell a
// removal from a change to an empty value).
type change struct {
	path, value string
	removed     bool
}

// Replay replays tr up to step upTo (inclusive), recording the changes.
// Provenance only looks back from its query step, so nothing after it is
// needed. watch, if set, watches the handler calls (replay.Options.Watch).
func Replay(tr *replay.Trace, reg *system.Registry, upTo int, watch *stall.Watch) (*Replayed, error) {
	r, err := replay.New(tr, reg, replay.Options{SkipStateHashes: true, Watch: watch})
	if err != nil {
		return nil, err
	}
	rp := &Replayed{tr: tr, upTo: upTo, steps: map[node.ID][]int{}, delta: map[int][]change{}}
	changes := statedb.NewChanges()
	err = r.RunTo(upTo, func(step int) error {
		id := tr.Event(step).Node
		inst := r.Instance(id)
		if inst == nil {
			return nil // not replayed here (partial trace)
		}
		removed, set := changes.Step(id, inst, tr.Header.Start)
		var d []change
		if n := len(removed) + len(set); n > 0 {
			d = make([]change, 0, n)
		}
		for _, l := range set {
			d = append(d, change{path: l.Path, value: l.Value})
		}
		for _, p := range removed {
			d = append(d, change{path: p, removed: true})
		}
		rp.delta[step] = d
		rp.steps[id] = append(rp.steps[id], step)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rp, nil
}

func (rp *Replayed) check(pos int) error {
	if pos > rp.upTo {
		return fmt.Errorf("step #%d is past the replayed steps (#0..#%d)", pos, rp.upTo)
	}
	return nil
}

// State rebuilds a node's state from its changes up to pos.
func (rp *Replayed) State(id node.ID, pos int) ([]state.Leaf, map[string]bool, error) {
	if err := rp.check(pos); err != nil {
		return nil, nil, err
	}
	var order []string
	vals := map[string]string{}
	changed := map[string]bool{}
	for _, s := range rp.steps[id] {
		if s > pos {
			break
		}
		for _, c := range rp.delta[s] {
			if c.removed {
				delete(vals, c.path)
			} else {
				if _, had := vals[c.path]; !had {
					order = append(order, c.path)
				}
				vals[c.path] = c.value
			}
			if s == pos {
				changed[c.path] = true
			}
		}
	}
	// Paths in order of first appearance: close to the handler's field
	// order; a removed-then-readded path keeps its first place.
	var out []state.Leaf
	seen := map[string]bool{}
	for _, p := range order {
		if v, ok := vals[p]; ok && !seen[p] {
			seen[p] = true
			out = append(out, state.Leaf{Path: p, Value: v})
		}
	}
	return out, changed, nil
}

// LastWrite scans the node's steps back from pos for a change of path.
func (rp *Replayed) LastWrite(id node.ID, path string, pos int) (Write, bool, error) {
	if err := rp.check(pos); err != nil {
		return Write{}, false, err
	}
	steps := rp.steps[id]
	i, _ := slices.BinarySearch(steps, pos+1)
	for j := i - 1; j >= 0; j-- {
		for _, c := range rp.delta[steps[j]] {
			if c.path == path {
				return Write{Step: steps[j], Value: c.value, Removed: c.removed}, true, nil
			}
		}
	}
	return Write{}, false, nil
}
