package predicates

import "slices"

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
	depElems                        // the elements of a chained list column read by index: id is the row, sub the column number
	depDown                         // down_nodes(), crashes(): which nodes are down, how often each crashed
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
	downDep    = dep{kind: depDown}
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
	// readNow: a predicate's evaluation (or a quantifier body under it)
	// read the time frontier, now() (Checker.SafetyReadingNow).
	readNow bool
	// deps is what the current evaluation read, each once; depSet
	// indexes it once it is long. gen counts forgets: index entries
	// made under an older gen are stale.
	deps   []dep
	depSet map[dep]struct{}
	gen    uint32
	runs   uint32 // runs begun, for quant.multi
	dirty  bool
	// While a rerun: prev is what the last run read, still indexed, and
	// kept how much of it this run read again.
	rerunning bool
	prev      []dep
	kept      int
	// stale: not dirty itself, but a quantifier instance under it is
	// (dirty or stale): settle may find its result unchanged.
	stale bool

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

// index maps each dependency to the frames that read it. Entries are
// not removed when a frame forgets what it read (that would cost a map
// operation per read, at every re-evaluation): they go stale, and are
// dropped when the dependency changes or its list doubles.
type index map[dep][]reader

type reader struct {
	f   *frame
	gen uint32
}

func (r reader) live() bool { return r.f.gen == r.gen }

// depSetAt is the number of reads after which a frame's reads are
// deduplicated through a map rather than by scanning them.
const depSetAt = 16

func (c *Checker) newFrame(kind frameKind, parent *frame) *frame {
	c.nextFrame++
	return &frame{kind: kind, id: c.nextFrame, parent: parent, dirty: true}
}

// read records that the frame being evaluated read d.
func (c *Checker) read(d dep) {
	f := c.cur
	if f == nil {
		return
	}
	if f.depSet != nil {
		if _, ok := f.depSet[d]; ok {
			return
		}
		f.depSet[d] = struct{}{}
	} else {
		for _, x := range f.deps {
			if x == d {
				return
			}
		}
		if len(f.deps) == depSetAt {
			f.depSet = make(map[dep]struct{}, 2*depSetAt)
			for _, x := range f.deps {
				f.depSet[x] = struct{}{}
			}
			f.depSet[d] = struct{}{}
		}
	}
	f.deps = append(f.deps, d)
	if f.rerunning && slices.Contains(f.prev, d) {
		f.kept++
		return // indexed by the last run, and still live
	}
	c.indexRead(f, d)
}

// indexRead adds f, as of its gen, to the readers of d.
func (c *Checker) indexRead(f *frame, d dep) {
	c.indexAdds++
	if c.indexAdds > max(4096, 2*c.indexLive) {
		c.sweepIndex()
	}
	rs := c.index[d]
	if n := len(rs); n >= 8 && n&(n-1) == 0 {
		rs = compact(rs) // amortised: at each doubling
	}
	c.index[d] = append(rs, reader{f, f.gen})
}

// sweepIndex drops every stale reader, and dependencies nobody reads any
// more (a removed row's columns): run when as many readers were added as
// were live at the last sweep, so the index stays proportional to what
// is read now, not to how long the check ran.
func (c *Checker) sweepIndex() {
	live := 0
	for d, rs := range c.index {
		rs = compact(rs)
		if len(rs) == 0 {
			delete(c.index, d)
			continue
		}
		c.index[d] = rs
		live += len(rs)
	}
	c.indexLive, c.indexAdds = live, 0
}

// compact drops stale readers.
func compact(rs []reader) []reader {
	n := 0
	for _, r := range rs {
		if r.live() {
			rs[n] = r
			n++
		}
	}
	clear(rs[n:])
	return rs[:n]
}

// forget drops a frame's dependencies before it is re-evaluated or
// dropped: its index entries go stale.
func (c *Checker) forget(f *frame) {
	f.gen++
	f.runs++
	f.deps = f.deps[:0]
	f.depSet = nil
	f.rerunning, f.prev = false, f.prev[:0]
}

// rerun starts running f again. Unlike forget, the index entries of its
// last run stay live while it reads the same things again, as a body
// re-run because one column it read changed mostly does: only new reads
// cost an index update. endRun settles what was not read again.
func (c *Checker) rerun(f *frame) {
	if f.depSet != nil || len(f.deps) == 0 {
		c.forget(f)
		return
	}
	f.runs++
	f.prev, f.deps = f.deps, f.prev[:0]
	f.rerunning, f.kept = true, 0
}

// endRun ends a rerun (or a run that failed half-way). If the run did
// not read all that the last one did, the entries of those reads must go
// stale: every read of this run is indexed afresh under a new gen.
func (c *Checker) endRun(f *frame) {
	if !f.rerunning {
		return
	}
	f.rerunning = false
	if f.kept < len(f.prev) {
		f.gen++
		for _, d := range f.deps {
			c.indexRead(f, d)
		}
	}
	f.prev = f.prev[:0]
}

// changed marks every frame that read d dirty, and their ancestors: a
// predicate must re-run for its quantifier to refresh a dirty instance.
func (c *Checker) changed(d dep) {
	rs, ok := c.index[d]
	if !ok {
		return
	}
	n := 0
	for _, r := range rs {
		if r.live() {
			c.markDirty(r.f)
			rs[n] = r
			n++
		}
	}
	if n == 0 {
		delete(c.index, d)
		return
	}
	clear(rs[n:])
	c.index[d] = rs[:n]
}

// markDirty marks f, which read what changed, dirty: it must run again.
// Its ancestors are only stale: their own reads did not change, and settle may find that
// the quantifiers under them answer as before, so that they need not run.
func (c *Checker) markDirty(f *frame) {
	self := true
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
			queued := f.dirty || f.stale
			if self {
				f.dirty = true
			} else {
				f.stale = true
			}
			if !queued {
				f.q.dirty = append(f.q.dirty, f)
			}
			self = false
			continue
		}
		if f.dirty || (f.stale && !self) {
			return
		}
		if self {
			f.dirty = true
		} else {
			f.stale = true
		}
		self = false
	}
}
