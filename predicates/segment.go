package predicates

// Segments: checking parts of one trace on several cores with the result
// of a sequential check (replay check --jobs).
//
// A segment's checker starts from a checkpoint of the world a warm-up
// window before the first step it owns (its mark), evaluates the warm-up
// without reporting, and takes over from the previous segment at the mark
// only if its state there is that of the sequential run. Its state has
// two parts:
//
//   - certain state, which must be equal at the seam: derived values,
//     predicates' open intervals, breaks, disabled flags, histories of
//     operations, the time frontier, the message window, present rows;
//   - history-like state that no warm-up can rebuild: when a derived
//     value, table, row or column last changed (since_change), the kept
//     versions of derived values and rows (keep=, history(), prev()), the
//     history of rows that are absent at the mark. These are patched
//     with the previous segment's values at the seam, unless the warm-up
//     read one of them in an evaluation whose result persists (then the
//     seam is refused). After the mark, a segment that reads such an item
//     it has not rewritten since waits until the seam is settled, unless
//     its warm-up saw the item change more often than a full rewrite
//     takes (see guessable): then it goes on with its own value, and the
//     seam is refused if that value was not the sequential run's. Either
//     way no report holds a value the sequential run would not have.
//
// A refused seam costs time, never exactness: the previous segment goes
// on past it, as a sequential check would.

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.starlark.net/starlark"

	"github.com/replaycheck/replaycheck/internal/printable"
	"github.com/replaycheck/replaycheck/node"
)

// itemKind names one piece of history-like checker state.
type itemKind uint8

const (
	itemDerivedSince itemKind = iota + 1
	itemDerivedHist
	itemTableChanged
	itemRowChanged   // a row's last change
	itemRowField     // one column's last change
	itemRowVersions  // a row's kept versions
	itemRowHist      // the whole history of a row absent at the mark
	itemOrderedSince // an ordered index's last change
)

type item struct {
	kind itemKind
	id   int // derived index, or table id
	key  rowKey
	col  int
}

// seamTrack follows the history-like state of a segment's checker: what
// its warm-up read in evaluations that persist, and what it rewrote after
// its mark.
type seamTrack struct {
	seg       *Segment
	marked    bool
	settled   bool
	warmReads map[item]bool
	writes    map[item]int // rewrites since the mark
	// warmWrites counts rewrites in the warm-up; guessed holds what was
	// read after the mark with the warm-up's value (see read).
	warmWrites map[item]int
	guessed    map[item]bool
}

// read is called where an evaluation reads history-like state.
func (t *seamTrack) read(c *Checker, it item) {
	if t.settled {
		return
	}
	if !t.marked {
		// Aux, alarm and history recorders run in throwaway frames: what
		// they computed is part of the certain state, compared anyway.
		if f := c.cur; f != nil && f.kind != frameAux {
			t.warmReads[it] = true
		}
		return
	}
	need := t.need(c, it)
	if t.writes[it] >= need {
		return // rewritten since the mark: the same as the sequential run's
	}
	if guessable(it.kind) && t.warmWrites[it]+t.writes[it] > need {
		// The warm-up saw it change often enough (one more than needed:
		// the warm-up's first evaluation may count as a change the
		// sequential run did not make) that its value is most likely
		// the sequential run's. Go on with it rather than wait; the seam
		// is refused if it differs after all (takeOver), so a wrong
		// guess costs time, never exactness.
		t.guessed[it] = true
		return
	}
	// The evaluation waits: its time and memory budgets do not count the
	// wait, nor what other segments allocated meanwhile.
	b := c.budget
	var h0 uint64
	if b.baseRead {
		h0 = b.heap()
	}
	waited := t.seg.Waited
	t.seg.settle(true)
	w := t.seg.Waited - waited
	b.start, b.deadline = b.start.Add(w), b.deadline.Add(w)
	if b.baseRead {
		if h1 := b.heap(); h1 >= h0 {
			b.base += h1 - h0
		} else {
			b.base -= min(b.base, h0-h1)
		}
	}
}

// guessable says which items a segment may read with its warm-up's value
// when the warm-up saw them change often. Not a table's or an ordered
// index's last change, nor the history of a row that was absent: they
// change with any row, so the warm-up's first steps count as changes the
// sequential run did not make, and a guess was wrong on the bundled chord
// and paxos scripts more often than right.
func guessable(k itemKind) bool {
	switch k {
	case itemDerivedSince, itemDerivedHist, itemRowChanged, itemRowField, itemRowVersions:
		return true
	}
	return false
}

// need is how many rewrites after the mark replace an item entirely.
func (t *seamTrack) need(c *Checker, it item) int {
	switch it.kind {
	case itemDerivedHist:
		return max(1, c.derived[it.id].keep)
	case itemRowVersions:
		return max(1, c.tables[it.id-1].keep)
	}
	return 1
}

func (t *seamTrack) wrote(it item) {
	if t.marked {
		t.writes[it]++
	} else {
		t.warmWrites[it]++
	}
}

// trackDerived: d's value changed (its since and history were written).
func (c *Checker) trackDerived(d *Derived) {
	if t := c.track; t != nil {
		i := d.id - 1
		t.wrote(item{kind: itemDerivedSince, id: i})
		t.wrote(item{kind: itemDerivedHist, id: i})
	}
}

// trackOrdered: o's rows, keys or order changed.
func (c *Checker) trackOrdered(o *Ordered) {
	if t := c.track; t != nil {
		t.wrote(item{kind: itemOrderedSince, id: o.id})
	}
}

func (c *Checker) trackTable(tb *Table) {
	if t := c.track; t != nil {
		t.wrote(item{kind: itemTableChanged, id: tb.id})
	}
}

// trackRow: a row's content changes from old to fields (per-column hashes).
func (c *Checker) trackRow(tb *Table, key rowKey, old, fields []uint64) {
	t := c.track
	if t == nil {
		return
	}
	t.wrote(item{kind: itemRowChanged, id: tb.id, key: key})
	t.wrote(item{kind: itemRowVersions, id: tb.id, key: key})
	t.wrote(item{kind: itemRowHist, id: tb.id, key: key})
	for i := range fields {
		if i >= len(old) || old[i] != fields[i] {
			t.wrote(item{kind: itemRowField, id: tb.id, key: key, col: i})
		}
	}
}

func (c *Checker) trackRead(it item) {
	if t := c.track; t != nil {
		t.read(c, it)
	}
}

func (c *Checker) trackReadDerived(d *Derived, kind itemKind) {
	if c.track != nil {
		c.trackRead(item{kind: kind, id: d.id - 1})
	}
}

// Segment is a checker that owns the steps of a trace from its mark on
// (and, when the next segment's seam is refused, past its end). The first
// segment starts at #0 and owns every step from the start.
type Segment struct {
	c     *Checker
	first bool
	mark  int // the first owned step
	prev  <-chan *Seam
	at    *Seam // the state at the mark (not the first segment)
	track *seamTrack

	// Refused says why the seam at the mark was refused (nil: not).
	Refused error
	// Cancelled: the chain ended before the seam was settled.
	Cancelled bool
	// Waited is how long the segment waited for the previous one's
	// state (a read of history-like state it could not know, or the end
	// of its range).
	Waited time.Duration

	part Part
	// Counters at the mark: what the report held before the segment
	// owned any step.
	vMark, eMark, sMark int
	evMark              []int
	scan                stopScan // what ShouldStop has looked at
}

// Part is what one segment contributes to the report: the steps it owned.
type Part struct {
	violations []*Violation
	errors     []EvalFailure
	steps      int
	evals      []int
	// openStart and openEnd hold, per predicate, its open interval at
	// the start (the previous part's, carried on) and at the end.
	openStart, openEnd []*Violation
	names              []string // the predicates, in declaration order
	final              *Report  // the last part's finished report
	// tables and reached are what the segment learnt of its tables'
	// types (unmatchedTables).
	tables  []tableSighting
	reached map[string]reflect.Type
}

// NewFirstSegment binds a checker on a fresh replay: it owns every step
// from #0.
func NewFirstSegment(c *Checker) *Segment {
	s := &Segment{c: c, first: true, mark: 0}
	s.markCounters()
	return s
}

// ResumeSegment binds a checker whose replay starts at a checkpoint
// (r.StartAt): it catches up with what the trace says by itself up to
// there (time frontier, message window, unknown nodes), scans every node's
// state into the tables, and will evaluate from the next step on. Its
// mark is set by Mark; prev delivers the sequential run's state there.
func ResumeSegment(c *Checker, prev <-chan *Seam) *Segment {
	r := c.r
	pos := r.Pos()
	tr := r.Trace()
	for s := 0; s <= pos; s++ {
		ev := tr.Event(s)
		t := ev.Time - c.start
		c.now = max(c.now, t)
		c.nodeNow[ev.Node] = max(c.nodeNow[ev.Node], t)
		if ev.Kind == node.KindRecv && c.usesMsgs {
			c.msgs.add(t, ev.MsgType)
		}
	}
	c.step = pos
	if pos >= 0 {
		c.ev = tr.Event(pos)
	}
	for _, id := range tr.Nodes {
		inst := r.Instance(id)
		if inst == nil {
			continue
		}
		_, unknown := r.Unknown(id)
		if unknown {
			c.unknown[id] = true
			continue
		}
		c.scanNode(id, inst.Handler())
	}
	s := &Segment{c: c, prev: prev}
	s.track = &seamTrack{seg: s, warmReads: map[item]bool{}, writes: map[item]int{}, warmWrites: map[item]int{}, guessed: map[item]bool{}}
	c.track = s.track
	return s
}

// Step replays and observes the next step (io.EOF after the last).
func (s *Segment) Step() error {
	if err := s.c.r.Next(); err != nil {
		return err
	}
	return s.c.Observe()
}

// Pos is the last observed step.
func (s *Segment) Pos() int { return s.c.r.Pos() }

// Mark ends the warm-up: the segment owns the steps after the last
// observed one, and its state there is kept to be compared with the
// sequential run's.
func (s *Segment) Mark() {
	c := s.c
	s.mark = c.r.Pos() + 1
	s.at = c.seam()
	s.markCounters()
	s.track.marked = true
}

func (s *Segment) markCounters() {
	c := s.c
	s.vMark, s.eMark, s.sMark = len(c.report.Violations), len(c.report.Errors), c.report.Steps
	s.evMark = make([]int, len(c.preds))
	s.part.openStart = make([]*Violation, len(c.preds))
	for i, p := range c.preds {
		s.evMark[i] = p.Evals
		s.part.openStart[i] = p.open
	}
	// Intervals open at the mark count, as in a sequential run, once
	// judged after it.
	s.scan.from(len(c.report.Violations), s.part.openStart)
}

// Settled reports whether the segment's state is known to be the
// sequential run's (the first segment's always is).
func (s *Segment) Settled() bool { return s.first || s.track.settled }

// Poll settles the seam if the previous segment's state has arrived.
func (s *Segment) Poll() { s.settle(false) }

// Wait settles the seam, waiting for the previous segment's state.
func (s *Segment) Wait() { s.settle(true) }

// Rejected reports whether the segment cannot take over (its seam was
// refused, or the chain ended before the seam).
func (s *Segment) Rejected() bool { return s.Refused != nil || s.Cancelled }

func (s *Segment) settle(wait bool) {
	if s.first || s.track.settled || s.Rejected() {
		return
	}
	var prev *Seam
	if wait {
		start := time.Now()
		prev = <-s.prev
		s.Waited += time.Since(start)
	} else {
		select {
		case prev = <-s.prev:
		default:
			return
		}
	}
	if prev == nil {
		s.Cancelled = true
		s.track.settled = true // nothing more to wait for
		return
	}
	s.Refused = s.c.takeOver(s, prev)
	s.track.settled = true
	s.c.track = nil
}

// Seam is the checker's state before a step, for the next segment to take
// over from.
type Seam struct {
	Step    int
	certain []string
	derived []derivedSeam
	ordered []int64 // each ordered index's since
	tables  []tableSeam
	opens   []*openSeam // per predicate: its open interval, or nil
	forest  []string
	// failures are the evaluation failures reported so far: a refusal
	// names the one behind a difference.
	failures []EvalFailure
}

// openSeam is an open interval: where it began, whether it was raised,
// and its stability measures as of the last step (recomputed at the next
// one unless it closes there).
type openSeam struct {
	v                      Violation
	auxFailed, alarmFailed bool
}

func (o *openSeam) same(b *openSeam) bool {
	x, y := o.v, b.v
	return x.Step == y.Step && x.Lamport == y.Lamport && x.Node == y.Node && x.Event == y.Event &&
		x.Time == y.Time && x.Witness == y.Witness && x.opened == y.opened
}

type derivedSeam struct {
	since int64
	hist  []starlark.Value
}

type tableSeam struct {
	changed int64
	rows    map[rowKey]*rowHistory // copies
	present map[rowKey]bool
}

// Seam takes the segment's state after its last observed step, and cuts
// its part of the report there.
func (s *Segment) Seam() *Seam {
	s.cut()
	return s.c.seam()
}

// cut records the segment's contribution so far.
func (s *Segment) cut() {
	c := s.c
	s.part.violations = slices.Clone(c.report.Violations[s.vMark:])
	s.part.errors = slices.Clone(c.report.Errors[s.eMark:])
	s.part.steps = c.report.Steps - s.sMark
	s.part.evals = make([]int, len(c.preds))
	s.part.openEnd = make([]*Violation, len(c.preds))
	s.part.names = make([]string, len(c.preds))
	s.part.tables, s.part.reached = c.sightings(), maps.Clone(c.reached())
	for i, p := range c.preds {
		s.part.names[i] = p.Name
		s.part.evals[i] = p.Evals - s.evMark[i]
		s.part.openEnd[i] = p.open
	}
}

// Quiesce evaluates the script once more after the last step with the
// time advanced by d, as Run does at the end of a quiet run
// (RunOptions.Quiet).
func (s *Segment) Quiesce(d time.Duration) error {
	c := s.c
	if d <= 0 || c.step < 0 || c.opts.To >= 0 && c.step >= c.opts.To {
		return nil
	}
	return c.quiesce(d)
}

// Finish ends the check at the segment's last observed step (atEnd: the
// end of the checked range) and returns its part, the last of the report.
func (s *Segment) Finish(atEnd bool) Part {
	rep := s.c.finish(atEnd)
	s.cut()
	s.part.final = rep
	return s.part
}

// Stops reports whether a run with StopAtFirst stops within the part:
// an evaluation error, or a finding that counts (counts nil: Finding)
// judged in it.
func (p Part) Stops(counts func(*Violation) bool) bool {
	if counts == nil {
		counts = (*Violation).Finding
	}
	var scan stopScan
	return len(p.errors) > 0 || scan.counted(p.violations, counts)
}

// Part is the segment's contribution as of its last Seam.
func (s *Segment) Part() Part { return s.part }

// ShouldStop reports whether a run with --stop-at-first stops after the
// last observed step: an evaluation error, or a finding that counts,
// since the segment's mark.
func (s *Segment) ShouldStop(counts func(*Violation) bool) bool {
	c := s.c
	if counts == nil {
		counts = (*Violation).Finding
	}
	if len(c.report.Errors) > s.eMark {
		return true
	}
	return s.scan.counted(c.report.Violations, counts)
}

// Stitch joins the parts of consecutive segments, the last one finished,
// into the report of a sequential check.
func Stitch(parts []Part) *Report {
	last := parts[len(parts)-1].final
	out := &Report{Predicates: map[string]*PredicateStats{}, Complete: last.Complete, TraceIncomplete: last.TraceIncomplete, LastStep: last.LastStep}
	evals := map[string]int{}
	where := map[int]int{} // predicate -> index in out of its open interval
	for k, p := range parts {
		if k > 0 {
			for i, v := range p.openStart {
				if v != nil {
					out.Violations[where[i]] = v // the same interval, carried on here
				}
			}
		}
		base := len(out.Violations)
		out.Violations = append(out.Violations, p.violations...)
		out.Errors = append(out.Errors, p.errors...)
		out.Steps += p.steps
		for i, v := range p.openEnd {
			if v == nil || v == p.openStart[i] {
				continue
			}
			where[i] = base + slices.Index(p.violations, v)
		}
		for i, n := range p.evals {
			evals[p.names[i]] += n
		}
	}
	for name, st := range last.Predicates {
		out.Predicates[name] = &PredicateStats{Kind: st.Kind, Evals: evals[name], judged: st.judged}
	}
	// A table had rows if it had them in any segment; the types reached
	// are all the segments'.
	tables := slices.Clone(parts[len(parts)-1].tables)
	reached := map[string]reflect.Type{}
	for _, p := range parts {
		for i, t := range p.tables {
			tables[i].rows = tables[i].rows || t.rows
		}
		maps.Copy(reached, p.reached)
	}
	out.setUnmatched(unmatchedTables(tables, reached))
	out.tally()
	return out
}

// takeOver compares the segment's state at its mark with the sequential
// run's (prev) and, if it can go on from there, patches the history-like
// state its warm-up could not know. It returns why not, otherwise nil.
func (c *Checker) takeOver(s *Segment, prev *Seam) error {
	at := s.at
	if prev.Step != at.Step {
		return fmt.Errorf("the seams differ: #%d and #%d", prev.Step, at.Step)
	}
	for i := range max(len(prev.certain), len(at.certain)) {
		if i >= len(prev.certain) || i >= len(at.certain) || prev.certain[i] != at.certain[i] {
			a, b := "", ""
			if i < len(prev.certain) {
				a = prev.certain[i]
			}
			if i < len(at.certain) {
				b = at.certain[i]
			}
			why := ""
			for _, f := range slices.Concat(prev.failures, at.failures) {
				if strings.Contains(a+" ", " "+f.Name+" ") || strings.Contains(b+" ", " "+f.Name+" ") {
					why = "; " + clip(f.String())
					break
				}
			}
			a, b = clipPair(a, b)
			return fmt.Errorf("at #%d the sequential run has %s where the warm-up has %s%s", at.Step, a, b, why)
		}
	}
	t := s.track
	var patches []func()
	// An interval the warm-up opened at its first evaluated step may
	// have opened earlier in the sequential run: it is the same interval
	// (false throughout the warm-up in both), begun where the sequential
	// run says. Where it closes and whether it is raised depend on later
	// steps only.
	for i, p := range c.preds {
		a, b := prev.opens[i], at.opens[i]
		if a == nil || b == nil {
			continue // presence was compared with the certain state
		}
		v := s.part.openStart[i] // the interval open at the mark
		// Raised by the sequential run (before the warm-up could, with
		// what it could not know): once raised, the alarm is not asked
		// again and its measures are kept, so it is raised here as it
		// was there; unless asking it here since the mark failed.
		switch {
		case a.v.Alarm && (!b.v.Alarm || b.v.AlarmStep != a.v.AlarmStep || b.v.AlarmWitness != a.v.AlarmWitness || valueString(a.v.Aux) != valueString(b.v.Aux)):
			if p.alarmFailed && !b.alarmFailed {
				return fmt.Errorf("%s: the sequential run raised its interval at #%d; here its alarm failed after the seam", p.Name, a.v.AlarmStep)
			}
			patches = append(patches, func() {
				v.Alarm, v.AlarmStep, v.AlarmWitness, v.Aux = true, a.v.AlarmStep, a.v.AlarmWitness, a.v.Aux
			})
		case !a.v.Alarm && b.v.Alarm:
			return fmt.Errorf("%s: the warm-up raised its interval at #%d, the sequential run had not", p.Name, b.v.AlarmStep)
		}
		// The stability measures are recomputed at every step the
		// interval stays open; they were not if it closed at the seam
		// (or its aux failed since), and then they are the sequential
		// run's.
		auxDiffers := valueString(a.v.auxNow) != valueString(b.v.auxNow) || !a.v.Alarm && valueString(a.v.Aux) != valueString(b.v.Aux)
		if auxDiffers && v.auxSet == b.v.auxSet {
			if p.auxFailed && !b.auxFailed {
				return fmt.Errorf("%s: its stability measures differ at the seam and failed after it", p.Name)
			}
			patches = append(patches, func() {
				v.auxNow = a.v.auxNow
				if !a.v.Alarm {
					v.Aux = a.v.Aux
				}
			})
		}
		if a.same(b) {
			continue
		}
		if b.v.Step != c.opts.From || a.v.Step > b.v.Step {
			return fmt.Errorf("%s: the sequential run's interval began at #%d, the warm-up's at #%d", p.Name, a.v.Step, b.v.Step)
		}
		patches = append(patches, func() {
			// It may have closed since, its duration measured from the
			// warm-up's start.
			if v.EndStep >= 0 {
				v.Duration += v.opened - a.v.opened
			}
			v.Step, v.Lamport, v.Node, v.Event, v.Time, v.Witness, v.opened = a.v.Step, a.v.Lamport, a.v.Node, a.v.Event, a.v.Time, a.v.Witness, a.v.opened
		})
	}
	// The memos of every evaluation (results, what they read) must be
	// the sequential run's: equal memos re-evaluate at the same steps, so
	// the report counts the same evaluations, and a history-like item
	// that the warm-up read made no difference to what they hold.
	fa, fb := prev.forest, at.forest
	for i := range max(len(fa), len(fb)) {
		if i >= len(fa) || i >= len(fb) || fa[i] != fb[i] {
			a, b := "", ""
			if i < len(fa) {
				a = fa[i]
			}
			if i < len(fb) {
				b = fb[i]
			}
			a, b = clipPair(a, b)
			return fmt.Errorf("the memos differ: the sequential run has %s, the warm-up %s", a, b)
		}
	}
	// History-like state: what differs is patched, and re-evaluations
	// read the patched value.
	warmRead := func(it item, what string) error {
		if t.guessed[it] {
			return fmt.Errorf("%s was read after the seam with the warm-up's value, which differs from the sequential run's", what)
		}
		return nil
	}
	for i, d := range c.derived {
		a, b := prev.derived[i], at.derived[i]
		if a.since != b.since {
			it := item{kind: itemDerivedSince, id: i}
			if err := warmRead(it, fmt.Sprintf("since_change(%s)", d.name)); err != nil {
				return err
			}
			if t.writes[it] == 0 {
				patches = append(patches, func() { d.since = a.since })
			}
		}
		if !sameValueStrings(a.hist, b.hist) {
			it := item{kind: itemDerivedHist, id: i}
			if err := warmRead(it, d.name+".history()"); err != nil {
				return err
			}
			if w := t.writes[it]; w < max(1, d.keep) {
				patches = append(patches, func() {
					h := append(slices.Clone(a.hist), d.hist[len(d.hist)-w:]...)
					if len(h) > d.keep {
						h = h[len(h)-d.keep:]
					}
					d.hist = h
				})
			}
		}
	}
	for i, o := range c.ordered {
		if a, b := prev.ordered[i], at.ordered[i]; a != b {
			it := item{kind: itemOrderedSince, id: o.id}
			if err := warmRead(it, fmt.Sprintf("since_change(%s)", o.name)); err != nil {
				return err
			}
			if t.writes[it] == 0 {
				patches = append(patches, func() { o.since = a })
			}
		}
	}
	for ti, tb := range c.tables {
		a, b := prev.tables[ti], at.tables[ti]
		if a.changed != b.changed {
			it := item{kind: itemTableChanged, id: tb.id}
			if err := warmRead(it, fmt.Sprintf("since_change(%s)", tb.name)); err != nil {
				return err
			}
			if t.writes[it] == 0 {
				patches = append(patches, func() { tb.changed = a.changed })
			}
		}
		keys := map[rowKey]bool{}
		for k := range a.rows {
			keys[k] = true
		}
		for k := range b.rows {
			keys[k] = true
		}
		for key := range keys {
			ha, hb := a.rows[key], b.rows[key]
			fix, err := c.rowPatch(warmRead, t, tb, key, ha, hb, a.present[key])
			if err != nil {
				return err
			}
			patches = append(patches, fix...)
		}
	}
	for _, p := range patches {
		p()
	}
	return nil
}

// rowPatch compares one row's history in the sequential run (a) and the
// warm-up (b).
func (c *Checker) rowPatch(warmRead func(item, string) error, t *seamTrack, tb *Table, key rowKey, a, b *rowHistory, present bool) ([]func(), error) {
	what := func(it item, s string) error {
		return warmRead(it, fmt.Sprintf("%s of row %s %q in %s", s, key.node, key.path, tb.name))
	}
	if !present {
		if sameHistory(a, b) {
			return nil, nil
		}
		it := item{kind: itemRowHist, id: tb.id, key: key}
		if err := what(it, "the history"); err != nil {
			return nil, err
		}
		if t.writes[it] > 0 {
			return nil, nil // rewritten (it came back after being settled)
		}
		return []func(){func() {
			if a == nil {
				delete(tb.history, key)
				return
			}
			h := copyHistory(a)
			if cur := tb.history[key]; cur != nil {
				*cur = *h
			} else {
				tb.history[key] = h
			}
		}}, nil
	}
	cur := tb.history[key]
	var fix []func()
	if a.changed != b.changed {
		it := item{kind: itemRowChanged, id: tb.id, key: key}
		if err := what(it, "the last change"); err != nil {
			return nil, err
		}
		if t.writes[it] == 0 {
			fix = append(fix, func() { cur.changed = a.changed })
		}
	}
	for i := range max(len(a.fieldTime), len(b.fieldTime)) {
		if i < len(a.fieldTime) && i < len(b.fieldTime) && a.fieldTime[i] == b.fieldTime[i] {
			continue
		}
		if len(a.fieldTime) != len(b.fieldTime) {
			return nil, fmt.Errorf("row %s %q in %s has %d columns in the sequential run, %d in the warm-up", key.node, key.path, tb.name, len(a.fieldTime), len(b.fieldTime))
		}
		it := item{kind: itemRowField, id: tb.id, key: key, col: i}
		if err := what(it, "a column's last change"); err != nil {
			return nil, err
		}
		if t.writes[it] == 0 {
			fix = append(fix, func() { cur.fieldTime[i] = a.fieldTime[i] })
		}
	}
	if !sameVersions(a.versions, b.versions) {
		it := item{kind: itemRowVersions, id: tb.id, key: key}
		if err := what(it, "the kept versions"); err != nil {
			return nil, err
		}
		if w := t.writes[it]; w < max(1, tb.keep) {
			fix = append(fix, func() {
				v := append(slices.Clone(a.versions), cur.versions[len(cur.versions)-min(w, len(cur.versions)):]...)
				if len(v) > max(1, tb.keep) {
					v = v[len(v)-max(1, tb.keep):]
				}
				cur.versions = v
			})
		}
	}
	return fix, nil
}

// clipPair clips two descriptions that differ around where they first
// differ: clipped at their ends, long ones read the same.
func clipPair(a, b string) (string, string) {
	if len(a) <= clipLen && len(b) <= clipLen {
		return clip(a), clip(b)
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-clipLen/3)
	// What the entry is ("derived value committed (#2) = "): a window
	// far into a long value cut it away, which left a refusal that did
	// not say which value differed (a new user's).
	label := entryLabel(a[:i])
	if from <= len(label) {
		label = ""
	}
	window := func(s string) string {
		if s == "" {
			return "nothing"
		}
		start := min(from, len(s))
		for start > 0 && start < len(s) && !utf8.RuneStart(s[start]) {
			start-- // not inside a character
		}
		out := printable.Cut(s[start:], from+clipLen-start)
		if from > 0 {
			out = label + "..." + out
		}
		if from+clipLen < len(s) {
			out += "..."
		}
		return out
	}
	return window(a), window(b)
}

// entryLabel is what a seam entry that begins with prefix describes: the
// words before its " = ", or its first three words (a row's table, node
// and path), at most labelLen bytes; "" when prefix holds neither.
func entryLabel(prefix string) string {
	if j := strings.Index(prefix, " = "); j >= 0 {
		if j+3 <= labelLen {
			return prefix[:j+3]
		}
		return printable.Cut(prefix, labelLen) + "... = " // a long name, shortened
	}
	words := 0
	for j, r := range prefix {
		if j >= labelLen {
			break
		}
		if r == ' ' {
			if words++; words == 4 {
				return prefix[:j+1]
			}
		}
	}
	return printable.Cut(prefix, labelLen) + " "
}

// labelLen bounds the label a clipped refusal keeps.
const labelLen = 120

// clipLen is how much of a description a refusal quotes.
const clipLen = 200

func clip(s string) string {
	if len(s) > clipLen {
		return printable.Cut(s, clipLen) + "..."
	}
	if s == "" {
		return "nothing"
	}
	return s
}

func copyHistory(h *rowHistory) *rowHistory {
	return &rowHistory{versions: slices.Clone(h.versions), fields: slices.Clone(h.fields), changed: h.changed, fieldTime: slices.Clone(h.fieldTime)}
}

func sameHistory(a, b *rowHistory) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.changed == b.changed && slices.Equal(a.fields, b.fields) && slices.Equal(a.fieldTime, b.fieldTime) && sameVersions(a.versions, b.versions)
}

// sameVersions compares kept versions by content (the step a version was
// recorded at is not observable).
func sameVersions(a, b []version) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if dictString(a[i].fields) != dictString(b[i].fields) {
			return false
		}
	}
	return true
}

func dictString(d starlark.StringDict) string {
	if d == nil {
		return ""
	}
	var b strings.Builder
	for _, k := range d.Keys() {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(d[k].String())
		b.WriteByte(';')
	}
	return b.String()
}

func valueString(v starlark.Value) string {
	if v == nil {
		return "<none>"
	}
	s := v.Type() + ":" + v.String()
	if f := callableIn(v, 0); f != nil {
		// A function prints the same whatever it captured: two values
		// holding one are equal only if they hold the same function.
		s += fmt.Sprintf(" (function %p)", f)
	}
	return s
}

// callableIn finds a function held by v, or nil.
func callableIn(v starlark.Value, depth int) starlark.Value {
	if depth > maxDepth {
		return nil
	}
	if _, ok := v.(starlark.Callable); ok {
		return v
	}
	elems, _ := elements(v)
	for _, e := range elems {
		if f := callableIn(e, depth+1); f != nil {
			return f
		}
	}
	return nil
}

func sameValueStrings(a, b []starlark.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if valueString(a[i]) != valueString(b[i]) {
			return false
		}
	}
	return true
}

// predicateState says, in words, what of a predicate a seam compares.
func predicateState(p *Predicate) string {
	// Once disabled a predicate never runs again: whether it held last
	// matters no more.
	out := "disabled by an evaluation error"
	if !p.disabled {
		// "holding" alone read like a finding in a refused seam's line:
		// it is only the value the predicate last had.
		out = "last evaluated true"
		if !p.holding {
			out = "last evaluated false"
		}
	}
	if p.auxFailed {
		out += ", its stability measure failed"
	}
	if p.alarmFailed {
		out += ", its alarm function failed"
	}
	return out
}

// seam captures the checker's state after its last observed step.
func (c *Checker) seam() *Seam {
	s := &Seam{Step: c.r.Pos() + 1, forest: c.forest(), failures: slices.Clone(c.report.Errors)}
	add := func(format string, args ...any) { s.certain = append(s.certain, fmt.Sprintf(format, args...)) }
	add("now %d", c.now)
	for _, id := range c.r.Trace().Nodes {
		add("node %s now %d unknown %v", id, c.nodeNow[id], c.unknown[id])
	}
	if c.usesMsgs {
		add("msgs span %d entries %v", c.msgs.span, c.msgs.entries)
	}
	for i, d := range c.derived {
		// Read in a refused seam's message: a user's words, not the
		// checker's fields (the index keeps two of one name apart).
		if d.err {
			add("derived value %s (#%d) failed", d.name, i)
		} else {
			add("derived value %s (#%d) = %s", d.name, i, valueString(d.value))
		}
		s.derived = append(s.derived, derivedSeam{since: d.since, hist: slices.Clone(d.hist)})
	}
	for _, p := range c.preds {
		add("predicate %s %s", p.Name, predicateState(p))
		var breaks []string
		for k := range p.breaks {
			breaks = append(breaks, fmt.Sprintf("%d %s %q", k.table, k.row.node, k.row.path))
		}
		slices.Sort(breaks)
		add("breaks %s", strings.Join(breaks, ", "))
		var o *openSeam
		if v := p.open; v != nil {
			add("open end %d %d %d", v.EndStep, v.EndTime, v.Duration)
			o = &openSeam{v: *v, auxFailed: p.auxFailed, alarmFailed: p.alarmFailed}
		}
		s.opens = append(s.opens, o)
	}
	for _, h := range c.histories {
		add("history %s failed %v %d ops %d changes %d", h.name, h.failed, h.failedStep, len(h.ops), len(h.changes))
		for _, op := range h.ops {
			add("op %s %s %s %s %d %d %d %d %v", valueString(op.id), op.client, valueString(op.input), valueString(op.output),
				op.call, op.ret, op.callStep, op.retStep, op.pending)
		}
	}
	for _, o := range c.ordered {
		s.ordered = append(s.ordered, o.since)
	}
	for _, tb := range c.tables {
		ts := tableSeam{changed: tb.changed, rows: map[rowKey]*rowHistory{}, present: map[rowKey]bool{}}
		for _, rs := range tb.sortedRows() {
			add("row %s %s %q %x %s", tb.name, rs.key.node, rs.key.path, rs.hash, strconv.Quote(fmt.Sprint(rs.hist.fields)))
			ts.present[rs.key] = true
		}
		for k, h := range tb.history {
			ts.rows[k] = copyHistory(h)
		}
		s.tables = append(s.tables, ts)
	}
	return s
}

// forest describes every memoised evaluation (derived values,
// predicates, quantifier bodies per row): its result, whether it is
// dirty, and what it read, with rows named by table, node and path
// rather than by this checker's ids. Equal forests re-evaluate at the
// same steps and answer alike.
func (c *Checker) forest() []string {
	rows := map[int]string{}
	for _, tb := range c.tables {
		for _, rs := range tb.sortedRows() {
			rows[rs.id] = fmt.Sprintf("%d %s %q", tb.id, rs.key.node, rs.key.path)
		}
	}
	var out []string
	var walk func(name string, f *frame)
	walk = func(name string, f *frame) {
		deps := make([]string, 0, len(f.deps))
		rowName := func(id int) string {
			r, ok := rows[id]
			if !ok {
				r = "gone" // a removed row's id is never reused: it cannot fire
			}
			return r
		}
		for _, d := range f.deps {
			switch d.kind {
			case depRow:
				deps = append(deps, "row "+rowName(d.id))
				continue
			case depCol:
				deps = append(deps, fmt.Sprintf("col %d of row %s", d.sub, rowName(d.id)))
				continue
			case depElems:
				deps = append(deps, fmt.Sprintf("elems %d of row %s", d.sub, rowName(d.id)))
				continue
			case depGapBefore, depGapAfter:
				at := "end"
				if d.sub != 0 {
					at = rowName(d.sub)
				}
				deps = append(deps, fmt.Sprintf("gap %d of ordered %d at %s", d.kind, d.id, at))
				continue
			}
			deps = append(deps, fmt.Sprintf("%v", d))
		}
		slices.Sort(deps)
		w := ""
		if f.witness != nil {
			w = fmt.Sprintf("%s %d", f.witness.kind, f.witness.table.id)
		}
		out = append(out, fmt.Sprintf("%s dirty %v stale %v result %v witness %s deps %s", name, f.dirty, f.stale, f.result, w, strings.Join(deps, "; ")))
		for _, k := range f.quants {
			q := c.quants[k]
			if q == nil {
				continue
			}
			qn := fmt.Sprintf("%s/%s %s table %d", name, q.kind, k.body, k.table)
			var deciding []string
			for rs := range q.deciding {
				deciding = append(deciding, rows[rs.id])
			}
			slices.Sort(deciding)
			free := make([]string, len(q.free))
			for i, v := range q.free {
				free[i] = valueString(v)
			}
			out = append(out, fmt.Sprintf("%s synced %v started %v true %d free %s deciding %s", qn, q.epoch == q.table.epoch, q.started, q.nTrue,
				strings.Join(free, ", "), strings.Join(deciding, "; ")))
			inst := make([]*rowState, 0, len(q.inst))
			for rs := range q.inst {
				inst = append(inst, rs)
			}
			slices.SortFunc(inst, func(a, b *rowState) int { return strings.Compare(rows[a.id], rows[b.id]) })
			for _, rs := range inst {
				walk(qn+" ["+rows[rs.id]+"]", q.inst[rs])
			}
		}
	}
	for _, o := range c.ordered {
		order := make([]string, len(o.rows))
		for i, rs := range o.rows {
			order[i] = rows[rs.id] + " = " + valueString(o.keys[i])
		}
		out = append(out, fmt.Sprintf("ordered %s ready %v err %v rows %s", o.name, o.ready, o.err, strings.Join(order, "; ")))
		inst := make([]*rowState, 0, len(o.inst))
		for rs := range o.inst {
			inst = append(inst, rs)
		}
		slices.SortFunc(inst, func(a, b *rowState) int { return strings.Compare(rows[a.id], rows[b.id]) })
		for _, rs := range inst {
			walk("ordered "+o.name+" key ["+rows[rs.id]+"]", o.inst[rs])
		}
	}
	for _, d := range c.derived {
		walk("derived "+d.name, d.frame)
	}
	for _, p := range c.preds {
		walk("predicate "+p.Name, p.frame)
	}
	return out
}
