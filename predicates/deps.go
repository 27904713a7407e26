package predicates

// What an evaluation read, so that it is re-evaluated only when one of
// those things changed.

type depKind uint8

const (
	depEvent     depKind = iota + 1 // the event built-in (changes every step)
	depTime                         // now(), since_change() (changes when time advances)
	depMsgs                         // msgs.recent (changes at every receive)
	depUnknown                      // unknown_nodes()
	depTable                        // a table's membership (rows added or removed)
	depRow                          // one row's content
	depDerived                      // a derived value
	depNode                         // a node's runtime state (timers)
	depTableAny                     // any change in a table: membership or any row (since_change)
	depCol                          // one column of one row: id is the row, sub the table's column number
	depNodeRows                     // the rows one node has in a table: id is the table, sub the node's index
	depOrdered                      // anything about an ordered index: its rows, keys or order
	depGapBefore                    // the gap before one row of an ordered index (sub: the row, 0: the end)
	depGapAfter                     // the gap after one row of an ordered index (sub: the row, 0: the start)
)

// dep identifies one thing an evaluation can read. Rows are tracked per
// column (depCol), so an evaluation that reads only some columns of a row
// is not re-run when another column changes; depRow stands for reads of
// the whole row (since_change(row), a row kept in a history).
type dep struct {
	kind depKind
	id   int
	sub  int
}

var (
	evDep      = dep{kind: depEvent}
	timeDep    = dep{kind: depTime}
	msgsDep    = dep{kind: depMsgs}
	unknownDep = dep{kind: depUnknown}
)

type frameKind uint8

const (
	framePredicate frameKind = iota + 1
	frameAux                 // a liveness/safety aux or alarm evaluation
	frameDerived
	frameInstance // one row's body in a quantifier
	frameKey      // one row's key in an ordered index
)

// frame is one memoised evaluation: a predicate, a derived value, or the
// body of a quantifier for one row. Frames form a tree: a quantifier's
// instances are children of the frame that called it.
type frame struct {
	kind   frameKind
	id     int
	parent *frame
	deps   map[dep]struct{}
	dirty  bool

	// For instance frames (q) and key frames (ord).
	q      *quant
	ord    *Ordered
	row    *rowState
	result bool
	// witness is the last quantifier evaluated in this frame; its deciding
	// row (forall: first failing; exists: first holding) is the witness.
	witness *quant
	// quants are the quantifiers memoised under this frame.
	quants []quantKey
}

// index maps each dependency to the frames that read it.
type index map[dep]map[*frame]struct{}

func (c *Checker) newFrame(kind frameKind, parent *frame) *frame {
	c.nextFrame++
	return &frame{kind: kind, id: c.nextFrame, parent: parent, deps: map[dep]struct{}{}, dirty: true}
}

// read records that the frame being evaluated read d.
func (c *Checker) read(d dep) {
	f := c.cur
	if f == nil {
		return
	}
	if _, ok := f.deps[d]; ok {
		return
	}
	f.deps[d] = struct{}{}
	set := c.index[d]
	if set == nil {
		set = map[*frame]struct{}{}
		c.index[d] = set
	}
	set[f] = struct{}{}
}

// forget removes a frame's dependencies before it is re-evaluated or
// dropped.
func (c *Checker) forget(f *frame) {
	for d := range f.deps {
		if set := c.index[d]; set != nil {
			delete(set, f)
			if len(set) == 0 {
				delete(c.index, d)
			}
		}
	}
	clear(f.deps)
}

// changed marks every frame that read d dirty, and their ancestors: a
// predicate must re-run for its quantifier to refresh a dirty instance.
func (c *Checker) changed(d dep) {
	for f := range c.index[d] {
		c.markDirty(f)
	}
}

func (c *Checker) markDirty(f *frame) {
	for ; f != nil; f = f.parent {
		if f.kind == frameKey {
			// Keys are brought up to date before anything reads them.
			if !f.dirty {
				f.dirty = true
				f.ord.dirty = append(f.ord.dirty, f)
			}
			return
		}
		if f.kind == frameInstance {
			// An instance may stay dirty while its parent ran without
			// calling the quantifier; the parent must still be marked.
			if !f.dirty {
				f.dirty = true
				f.q.dirty = append(f.q.dirty, f)
			}
			continue
		}
		if f.dirty {
			return
		}
		f.dirty = true
	}
}
