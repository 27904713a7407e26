// Package parcheck checks one trace on several cores with the report of a
// sequential check (replay check --jobs N).
//
// The first segment checks from #0 at once. Meanwhile a pass replays the
// trace without predicates (as cheap as replay verify) and, when the
// running segment has about its share of the remaining steps ahead of
// it, takes a checkpoint of the world: the next segment starts there,
// evaluates a warm-up window without reporting, and owns the steps from
// its mark on. When the running segment reaches that mark it hands its
// checker state over (predicates.Seam); the next segment takes over only
// if its own state there is the sequential run's (predicates.Segment
// says how that is decided), and otherwise the running segment goes on
// past the mark, as a sequential check would. The report is stitched
// from the parts each owner checked, so it is the sequential one whatever
// the timing; only the time taken depends on how many seams hold.
package parcheck

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/system"
)

// DefaultWarmup is the default number of steps a segment evaluates before
// the first step it owns.
const DefaultWarmup = 5000

// Options configure a parallel check.
type Options struct {
	// Jobs is how many segments may check at once (0: GOMAXPROCS).
	Jobs int
	// Warmup is how many steps a segment evaluates before its mark
	// (0: DefaultWarmup).
	Warmup int
	// Replay configures every replay (the pass's and the segments').
	Replay replay.Options
	// Load binds the predicates to a replay, evaluating from step from
	// on (and up to To).
	Load func(r *replay.Replayer, from int) (*predicates.Checker, error)
	// From and To are the checked range, as predicates.Options has them.
	From, To int
	// Run: StopAtFirst, Counts and Progress as for a sequential run.
	Run predicates.RunOptions
	// Marks, if set, are the segments' first owned steps (increasing,
	// after From, at most To), instead of borders chosen as the work
	// goes: for tests and for reproducing a split.
	Marks []int
}

// Stats say how the work was split.
type Stats struct {
	Jobs     int
	Segments int // segments started (the first included)
	Seams    int // hand-overs attempted
	// At are the steps the hand-overs were at, in order.
	At []int
	// Refused lists why seams were refused (each cost the time of the
	// refused segment's range checked again by its predecessor).
	Refused []string
	// Waited is how long segments that took over had waited for their
	// predecessor's state before they could go on.
	Waited time.Duration
	// Fewer says why fewer segments ran than jobs were given ("" when
	// as many ran, or marks fixed them).
	Fewer string
	// MostAtOnce is the most segments that ran at once (warming up or
	// checking), at most Jobs.
	MostAtOnce int
}

// String is the stats in one line, for stderr.
func (s Stats) String() string {
	line := fmt.Sprintf("checked in %d segment(s) on %d jobs: %d seam(s), %d refused", s.Segments, s.Jobs, s.Seams, len(s.Refused))
	if len(s.At) > 0 {
		at := make([]string, len(s.At))
		for i, step := range s.At {
			at[i] = fmt.Sprintf("#%d", step)
		}
		line += " (seams at " + strings.Join(at, ", ") + ")"
	}
	if s.Waited > 0 {
		line += fmt.Sprintf(", %v waiting for a predecessor's state", s.Waited.Round(time.Millisecond))
	}
	if len(s.Refused) > 0 {
		// A refusal is the split's business, not a finding: say so, and
		// that the report does not change.
		line += fmt.Sprintf(" (a refused seam's steps were checked on by the segment before it, so the report is the sequential one; the first refusal, at %s)", s.Refused[0])
	}
	if s.Fewer != "" {
		line += "; " + s.Fewer
	}
	return line
}

type driver struct {
	tr     *replay.Trace
	reg    *system.Registry
	o      Options
	limit  int // the last step of the checked range
	warmup int

	mu       sync.Mutex
	segs     []*seg
	parts    []predicates.Part
	err      error // the chain's end: a divergence or failure, or nil
	stats    Stats
	done     chan struct{}
	finished bool
	wg       sync.WaitGroup
	running  int // segments warming up or checking, under mu
}

// enter and leave count a segment running, for Stats.MostAtOnce.
func (d *driver) enter() {
	d.mu.Lock()
	d.running++
	d.stats.MostAtOnce = max(d.stats.MostAtOnce, d.running)
	d.mu.Unlock()
}

func (d *driver) leave() {
	d.mu.Lock()
	d.running--
	d.mu.Unlock()
}

// seg is one segment's goroutine state.
type seg struct {
	idx  int
	d    *driver
	s    *predicates.Segment
	mark int // first owned step

	mu   sync.Mutex
	end  int // first step of the next segment; 0: not decided (yet); -1: refused, not split again
	next *seg
	pos  atomic.Int64

	prev    chan *predicates.Seam // the sequential run's state at mark
	verdict chan bool             // to the predecessor: taken over or not
	// idle says, once, that the segment no longer runs (Stats.MostAtOnce)
	// and gives back its place among the jobs (fixed marks): when it
	// returns, or when it has checked its range and waits for its
	// successor to take over, which may need that place to run.
	idle func()
	// from is the segment that handed over (set before the seam is
	// sent); handed is its part, which the taker adds to the report, so
	// that parts are added in order.
	from   *seg
	handed predicates.Part
}

// Check checks tr on up to o.Jobs cores. The report is what a sequential
// predicates.Checker.Run would return, and the error too (a divergence).
func Check(tr *replay.Trace, reg *system.Registry, o Options) (*predicates.Report, Stats, error) {
	if o.Jobs <= 0 {
		o.Jobs = runtime.GOMAXPROCS(0)
	}
	if o.Warmup <= 0 {
		o.Warmup = DefaultWarmup
	}
	d := &driver{tr: tr, reg: reg, o: o, limit: tr.Len() - 1, warmup: o.Warmup, done: make(chan struct{})}
	if o.To >= 0 && o.To < d.limit {
		d.limit = o.To
	}
	d.stats.Jobs = o.Jobs
	// The trace's lazily built indexes must exist before goroutines
	// share it.
	for _, id := range tr.Nodes {
		tr.NodeSteps(id)
	}
	r, err := replay.New(tr, reg, o.Replay)
	if err != nil {
		return nil, d.stats, err
	}
	c, err := o.Load(r, o.From)
	if err != nil {
		return nil, d.stats, err
	}
	first := &seg{idx: 0, d: d, s: predicates.NewFirstSegment(c), prev: make(chan *predicates.Seam, 1), verdict: make(chan bool, 1)}
	first.pos.Store(-1)
	d.segs = append(d.segs, first)
	d.stats.Segments = 1
	for i, m := range o.Marks {
		if m <= max(o.From, 0) || m > d.limit || (i > 0 && m <= o.Marks[i-1]) {
			return nil, d.stats, fmt.Errorf("marks %v: want increasing steps after --from, at most the last checked step #%d", o.Marks, d.limit)
		}
		last := d.segs[len(d.segs)-1]
		g := &seg{idx: len(d.segs), d: d, mark: m, prev: make(chan *predicates.Seam, 1), verdict: make(chan bool, 1)}
		g.pos.Store(-1)
		last.end, last.next = m, g
		d.segs = append(d.segs, g)
		d.stats.Segments++
	}
	d.wg.Add(1)
	d.enter()
	first.idle = sync.OnceFunc(d.leave)
	go func() {
		defer d.wg.Done()
		defer first.idle()
		first.runCatching()
	}()
	if len(o.Marks) > 0 {
		// Two at least: the segment that checked its range waits for the
		// next one's verdict (Jobs 1 would be a chain run in turn).
		d.stats.Jobs = min(max(o.Jobs, 2), len(d.segs))
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			// A pass that cannot read the trace starts no more
			// segments; the first finds the failure itself.
			replay.CatchReadBack(func() error { d.fixedPass(); return nil })
		}()
	} else if o.Jobs > 1 {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			replay.CatchReadBack(func() error { d.pass(); return nil })
		}()
	}
	d.wait()
	d.wg.Wait()
	if len(o.Marks) == 0 && d.stats.Segments < d.stats.Jobs {
		d.stats.Fewer = d.fewer()
	}
	if len(d.parts) == 0 {
		return nil, d.stats, d.err
	}
	return predicates.Stitch(d.parts), d.stats, d.err
}

// wait waits for the chain to end, reporting progress.
func (d *driver) wait() {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-d.done:
			return
		case <-tick.C:
			if d.o.Run.Progress != nil {
				d.o.Run.Progress(d.progress(), d.tr.Len())
			}
		}
	}
}

// progress is how many steps the segments have got through.
func (d *driver) progress() int {
	d.mu.Lock()
	segs := d.segs
	d.mu.Unlock()
	n := 0
	for i, g := range segs {
		p := int(g.pos.Load()) + 1
		if i > 0 {
			p -= g.mark
		}
		g.mu.Lock()
		if g.end > 0 && p > g.end-g.mark {
			p = g.end - g.mark
		}
		g.mu.Unlock()
		n += max(0, p)
	}
	return min(n, d.tr.Len())
}

// passReplay is the pass's replay. It skips state hashes: every step is
// replayed again, hashes compared, by the segment that owns it, which
// stops at a divergence before any seam past it.
func (d *driver) passReplay() (*replay.Replayer, error) {
	o := d.o.Replay
	o.SkipStateHashes = true
	return replay.New(d.tr, d.reg, o)
}

// fewer says why the pass started fewer segments than jobs: too few
// steps for a segment after its warm-up, or the segments got to the end
// before the pass got to where the next would start.
func (d *driver) fewer() string {
	from := max(d.o.From, 0)
	steps := d.limit + 1 - from
	// The pass starts a segment at mark M when M-warmup steps are behind
	// it and the last segment has at least its share left.
	if steps <= 2*d.warmup {
		return fmt.Sprintf("%d checked steps are too few to split: a segment first evaluates the --warmup %d steps before its own", steps, d.warmup)
	}
	return "the segments reached the end before the pass, which replays without predicates, got to where another would start"
}

// pass replays the trace without predicates and starts the segments.
func (d *driver) pass() {
	r, err := d.passReplay()
	if err != nil {
		return
	}
	for {
		select {
		case <-d.done:
			return
		default:
		}
		d.mu.Lock()
		created := len(d.segs)
		last := d.segs[created-1]
		d.mu.Unlock()
		if created >= d.o.Jobs {
			return
		}
		p := r.Pos()
		at := p + 1 + d.warmup // the new segment's mark
		if p+1 >= d.o.From && at <= d.limit {
			base := max(int(last.pos.Load())+1, last.mark)
			m := d.o.Jobs - created + 1 // the last segment's share and the new ones'
			target := base + (d.limit+1-base+(m-1)*d.warmup)/m
			if at >= target && d.split(last, at, r) {
				continue
			}
		}
		if err := r.Next(); err != nil {
			return // the end, or a divergence the segments will find too
		}
	}
}

// fixedPass starts the segments of fixed marks.
func (d *driver) fixedPass() {
	segs := d.segs[1:]
	started := 0
	defer func() {
		// Segments the pass could not start (it diverged, or the chain
		// ended) still answer their predecessor's hand-over.
		for _, g := range segs[started:] {
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				g.refuse(errors.New("the pass did not reach its checkpoint"))
			}()
		}
	}()
	r, err := d.passReplay()
	if err != nil {
		return
	}
	// At most Jobs segments run at once, the first among them: every
	// mark's segment ran at once, however many (a machine of 2 cores
	// given 40 marks held 40 replays). They start in order, and one that
	// has checked its range gives its place back before it waits for its
	// successor to take over: the successor may need that place.
	slots := make(chan struct{}, max(1, d.stats.Jobs-1))
	for i, g := range segs {
		at := max(g.mark-d.warmup, d.o.From) - 1 // the checkpoint
		for r.Pos() < at {
			select {
			case <-d.done:
				return
			default:
			}
			if err := r.Next(); err != nil {
				return
			}
		}
		select {
		case slots <- struct{}{}:
		case <-d.done:
			return
		}
		g.pos.Store(int64(r.Pos()))
		d.wg.Add(1)
		started++
		from := d.from(r, i == len(segs)-1)
		g.idle = sync.OnceFunc(func() { d.leave(); <-slots })
		go g.start(from)
	}
}

// split ends last's range at mark (if it is not there yet) and starts a
// segment from a checkpoint of r.
func (d *driver) split(last *seg, mark int, r *replay.Replayer) bool {
	last.mu.Lock()
	defer last.mu.Unlock()
	if last.end != 0 || int(last.pos.Load())+1 >= mark || mark <= last.mark {
		return false
	}
	d.mu.Lock()
	if d.finished {
		d.mu.Unlock()
		return false
	}
	g := &seg{idx: len(d.segs), d: d, mark: mark, prev: make(chan *predicates.Seam, 1), verdict: make(chan bool, 1)}
	g.pos.Store(int64(r.Pos()))
	d.segs = append(d.segs, g)
	d.stats.Segments++
	d.mu.Unlock()
	last.end, last.next = mark, g
	d.wg.Add(1)
	go g.start(d.from(r, len(d.segs) == d.o.Jobs))
	return true
}

// from is where a new segment's replay comes from, at the pass's
// position: a checkpoint of the pass, or, when the pass makes no more
// segments (last), the pass's replayer itself, which then must not be
// used again. Handing it over saves copying every node, and rebuilding
// the ones a copy cannot reproduce by re-executing them from #0, which
// for a system like raftkv (etcd raft's RawNode) is most of the replay.
func (d *driver) from(r *replay.Replayer, last bool) func() (*replay.Replayer, error) {
	if last {
		return func() (*replay.Replayer, error) {
			r.Rebind() // its nodes now run on this segment's goroutine
			r.CompareStateHashes(!d.o.Replay.SkipStateHashes)
			return r, nil
		}
	}
	cp := r.TakeCheckpoint()
	return func() (*replay.Replayer, error) {
		r, err := replay.New(d.tr, d.reg, d.o.Replay)
		if err != nil {
			return nil, err
		}
		return r, r.StartAt(cp)
	}
}

// start replays from where the pass left it through the warm-up to the
// mark.
func (g *seg) start(replayer func() (*replay.Replayer, error)) {
	defer g.d.wg.Done()
	if g.idle == nil {
		g.idle = sync.OnceFunc(g.d.leave)
	}
	g.d.enter()
	defer g.idle()
	if err := replay.CatchReadBack(func() error { return g.warm(replayer) }); err != nil {
		// It cannot take over; its predecessor will go on.
		g.refuse(err)
		return
	}
	g.runCatching()
}

// runCatching runs the segment; a spilled trace that cannot be read back
// ends the check with that error, as it ends a sequential one.
func (g *seg) runCatching() {
	if err := replay.CatchReadBack(func() error { g.run(); return nil }); err != nil {
		g.d.end(nil, err)
	}
}

func (g *seg) warm(replayer func() (*replay.Replayer, error)) error {
	d := g.d
	r, err := replayer()
	if err != nil {
		return err
	}
	c, err := d.o.Load(r, r.Pos()+1)
	if err != nil {
		return err
	}
	g.s = predicates.ResumeSegment(c, g.prev)
	for g.s.Pos()+1 < g.mark {
		select {
		case <-d.done:
			return errors.New("cancelled")
		default:
		}
		if err := g.s.Step(); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		g.pos.Store(int64(g.s.Pos()))
	}
	g.s.Mark()
	return nil
}

// refuse answers the predecessor's hand-over with a refusal, once it
// comes (or the chain ends).
func (g *seg) refuse(why error) {
	select {
	case st := <-g.prev:
		if st != nil {
			g.d.refused(g, why)
			g.verdict <- false
		}
	case <-g.d.done:
	}
}

func (d *driver) refused(g *seg, why error) {
	d.mu.Lock()
	d.stats.Refused = append(d.stats.Refused, fmt.Sprintf("#%d: %v", g.mark, why))
	d.mu.Unlock()
}

// run checks the segment's range and on, as long as it owns it.
func (g *seg) run() {
	d := g.d
	s := g.s
	answered := g.idx == 0
	answer := func() bool {
		// Tell the predecessor, once settled, whether this took over.
		if answered || !s.Settled() {
			return !s.Rejected()
		}
		answered = true
		if s.Rejected() {
			if s.Refused != nil {
				d.refused(g, s.Refused)
				g.verdict <- false
			}
			return false
		}
		d.addPart(g.from.handed)
		d.mu.Lock()
		d.stats.Waited += s.Waited
		d.mu.Unlock()
		g.verdict <- true
		return true
	}
	for {
		if g.idx > 0 {
			s.Poll()
			if !answer() {
				return
			}
		}
		g.mu.Lock()
		end, next := g.end, g.next
		g.mu.Unlock()
		if end > 0 && s.Pos()+1 == end {
			s.Wait()
			if !answer() {
				return
			}
			d.mu.Lock()
			d.stats.Seams++
			d.stats.At = append(d.stats.At, end)
			d.mu.Unlock()
			st := s.Seam()
			g.handed, next.from = s.Part(), g
			g.idle()
			select {
			case next.prev <- st:
			case <-d.done: // the chain ended (end filled the buffer)
				return
			}
			var took bool
			select {
			case took = <-next.verdict:
			case <-d.done: // it failed (runCatching)
				return
			}
			if took {
				return
			}
			// Refused: go on to the next one's end, as a sequential
			// check would.
			next.mu.Lock()
			g.mu.Lock()
			g.end, g.next = next.end, next.next
			g.mu.Unlock()
			next.end = -1 // the pass splits it no more
			next.mu.Unlock()
			continue
		}
		// A step that cannot be read back ends the run there, as a
		// divergence would.
		err := replay.CatchReadBack(s.Step)
		g.pos.Store(int64(s.Pos()))
		atEnd, stop := false, false
		var rb *replay.ReadBackError
		switch {
		case errors.As(err, &rb):
			stop = true // not the end of the trace, though it wraps io.EOF
		case errors.Is(err, io.EOF):
			err, atEnd, stop = nil, true, true
		case err != nil:
			stop = true
		case d.o.To >= 0 && s.Pos() >= d.o.To:
			atEnd, stop = s.Pos() >= d.tr.Len()-1, true
		case d.o.Run.StopAtFirst && s.ShouldStop(d.o.Run.Counts):
			stop = true
		case d.o.Run.Stop != nil && (g.idx == 0 || answered) && d.o.Run.Stop():
			// Interrupted: the segment that owns the run so far ends
			// it where it is, as a sequential check would; the ones
			// after it, not yet taken over, are cancelled.
			stop = true
		}
		if !stop {
			continue
		}
		s.Wait()
		if !answer() {
			return
		}
		d.finish(s.Finish(atEnd), err)
		return
	}
}

func (d *driver) addPart(p predicates.Part) {
	d.mu.Lock()
	d.parts = append(d.parts, p)
	d.mu.Unlock()
}

// finish ends the chain with its last part.
func (d *driver) finish(p predicates.Part, err error) { d.end(&p, err) }

// end ends the chain, with its last part if p is set; only its first end
// counts.
func (d *driver) end(p *predicates.Part, err error) {
	d.mu.Lock()
	if d.finished {
		d.mu.Unlock()
		return
	}
	if p != nil {
		d.parts = append(d.parts, *p)
	}
	d.err = err
	d.finished = true
	segs := d.segs
	d.mu.Unlock()
	close(d.done)
	// Segments that would have taken over later wait for a seam that
	// will not come.
	for _, g := range segs {
		select {
		case g.prev <- nil:
		default:
		}
	}
}
