package explore

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/system"
)

// A Starter begins one run under cfg, whose Chooser is the strategy's,
// and writes its trace to out. The default simulates the system from its
// start; a search from a recorded step would rebuild that world first.
type Starter func(cfg sim.Config, out io.Writer) (*sim.Result, error)

// Options tune an exploration.
type Options struct {
	// Script is the predicates script every run is checked against.
	Script string
	// Check are the checking options (registry, which violations count,
	// script budgets); the driver sets StopAtFirst.
	Check simtest.Options
	// Budget bounds the number of runs and Time the wall-clock time; 0:
	// no bound (an exploration without either ends only when its
	// strategy's space is exhausted, or at a violation).
	Budget int
	Time   time.Duration
	// Jobs runs that many executions at once (default 1). The result
	// does not depend on it.
	Jobs int
	// All keeps going after a violation and reports one finding per
	// distinct violation (predicate and witness; of each run, the first
	// violation of every predicate it broke) or panic.
	All bool
	// Start begins a run; nil: sim.Run of the system.
	Start Starter
	// Progress, if set, is called after every run, in run order.
	Progress func(Progress)
	// Batch is how many runs are handed out before the strategy hears
	// of them (default 32); the first run is always alone, so that
	// strategies learn the length of a run.
	Batch int
	// OnRun, if set, sees every run's check (its Trace included), in run
	// order: for searches that judge runs themselves (a recovering walk,
	// the shortest path to each violation). check is nil when the run
	// ended in a handler panic.
	OnRun func(run int, check *simtest.Result)
	// Shard, if Count > 1, runs only the runs numbered Index mod Count
	// of the exploration, so that Count machines share one: see Shard.
	Shard Shard
}

// Shard is one of Count disjoint slices of an exploration: the runs
// whose number i has i mod Count == Index. Runs keep their numbers (and
// with them their seeds and choosers' draws), so the slices of the
// Count shards partition the unsharded exploration's runs, and Budget
// stays the whole exploration's: a shard runs the runs numbered below
// it that are its own. A sampling strategy's estimate of a run's length
// (where pct, delay-* and --faults place their points) is learnt from
// the shard's own runs; random without faults does not depend on it, so
// its shards run exactly the unsharded runs. Searches that share one
// state space (bfs, dfs, the delaying explorers' exhaustive mode)
// cannot be split by run number: Run refuses them.
type Shard struct {
	Index, Count int
}

// Sharded reports whether the shard splits anything.
func (s Shard) Sharded() bool { return s.Count > 1 }

// runs is how many of the runs numbered below budget are the shard's.
func (s Shard) runs(budget int) int {
	if budget <= s.Index {
		return 0
	}
	return (budget-s.Index-1)/s.Count + 1
}

// Shardable says why a strategy cannot be sharded ("" if it can).
func Shardable(strat Strategy) string {
	switch strat.(type) {
	case *sesStrategy:
		return "the delaying explorers' exhaustive search (--exhaustive) walks one shared tree of placements"
	case *searchStrategy:
		return strat.Name() + " walks one shared space of states, deduplicated across runs"
	}
	return ""
}

// shardStrategy hands out the runs of one shard of inner's sequence:
// it draws every run from inner, in order, so that stratum positions
// and run numbers stay those of the unsharded exploration, and skips
// the others' runs without running them.
type shardStrategy struct {
	Strategy
	shard Shard
	next  int // the inner run number Next draws next
}

// skipper is a strategy that can pass over runs without making their
// choosers: a shard of N passes over N-1 runs for each it makes, which
// cost as much as making them (about a microsecond each: a million-run
// budget split a thousand ways spent as long skipping as running).
type skipper interface {
	// skip passes over the next n runs, leaving the strategy as n calls
	// of Next would.
	skip(n int)
}

func (s *shardStrategy) Next() (sim.Chooser, bool) {
	if sk, ok := s.Strategy.(skipper); ok {
		n := (s.shard.Index - s.next%s.shard.Count + s.shard.Count) % s.shard.Count
		sk.skip(n)
		s.next += n
	}
	for s.next%s.shard.Count != s.shard.Index {
		if _, ok := s.Strategy.Next(); !ok {
			return nil, false
		}
		s.next++
	}
	c, ok := s.Strategy.Next()
	if ok {
		s.next++
	}
	return c, ok
}

// Progress is an exploration so far.
type Progress struct {
	Runs     int
	Events   int64
	States   int // -1: the strategy does not count them
	MaxDepth int // the most decisions a run made
	Elapsed  time.Duration
}

// Finding is a failing run.
type Finding struct {
	Run     int
	Chooser string // the chooser's description, as the trace header has it
	Config  sim.Config
	Trace   []byte
	Steps   int
	// Elapsed is the wall-clock time the run and its check took.
	Elapsed time.Duration
	// Check is the run's check (nil after a panic); Violation its first
	// counted violation (nil after a panic or an evaluation error).
	Check     *simtest.Result
	Violation *predicates.Violation
	// Panic is a handler's panic; the trace ends before the event that
	// panicked, and Schedule (the trace's schedule and that event)
	// reproduces it.
	Panic    *node.PanicError
	Schedule *sim.Schedule
	// Stall is a handler that did not return within the run's handler
	// bound; as after a panic, the trace ends before its event and
	// Schedule reproduces it. The exploration stops at it: the stuck
	// goroutine cannot be ended.
	Stall *sim.StallError
	// EvalErr: a predicate could not be evaluated on the run.
	EvalErr error
	// Runs counts the runs that found it (this one the first): with
	// All, a later run that breaks the same predicate at the same
	// witness counts here instead of being listed.
	Runs int
}

// Key names what a finding found, for telling findings apart.
func (f *Finding) Key() string {
	switch {
	case f.Panic != nil:
		return fmt.Sprintf("panic %s %s: %v", f.Panic.Node, f.Panic.Kind, f.Panic.Value)
	case f.Stall != nil:
		return fmt.Sprintf("stall %s %s", f.Stall.Node, f.Stall.Kind)
	case f.Violation != nil:
		return ViolationKey(f.Violation.Predicate, f.Violation.Witness)
	case f.EvalErr != nil:
		// By what could not be evaluated: a merge of shards keeps one
		// finding per key, and a second predicate's error is another
		// finding.
		if e, ok := errors.AsType[*predicates.EvalError](f.EvalErr); ok && len(e.Failures) > 0 {
			return "error " + e.Failures[0].Name + " (" + e.Failures[0].Kind + ")"
		}
	}
	return "error"
}

// ViolationKey is the key of a finding that is a violation of predicate
// by witness.
func ViolationKey(predicate, witness string) string { return predicate + " " + witness }

// Headline is a finding in a few words.
func (f *Finding) Headline() string {
	switch {
	case f.Panic != nil:
		where := ""
		if w := f.Panic.Where(); w != "" {
			where = " at " + w
		}
		return fmt.Sprintf("node %s panicked in a %s handler%s: %v", f.Panic.Node, f.Panic.Kind, where, f.Panic.Value)
	case f.Stall != nil:
		return fmt.Sprintf("node %s's handler did not return from its %s event within %v", f.Stall.Node, f.Stall.Kind, f.Stall.After)
	case f.Violation != nil:
		return f.Violation.Headline()
	case f.EvalErr != nil:
		// The evaluation's own words: the check's wrapping names the
		// simulated run's seed, which says nothing of an exploration's
		// run (each is its own chooser's).
		if e, ok := errors.AsType[*predicates.EvalError](f.EvalErr); ok {
			return e.Error()
		}
		return f.EvalErr.Error()
	}
	return "failed"
}

// Summary is an exploration's result.
type Summary struct {
	Strategy string
	Progress
	// Stopped says why it ended: "violation", "budget", "time",
	// "exhausted" (the strategy's bounded space holds no more runs),
	// "canceled", "predicate error", "divergence" (a run did not replay
	// as it was simulated; Run's error is its *DivergenceError), "stall"
	// (a handler did not return: the last finding).
	Stopped string
	// Found holds the first failing run; with All, the first of each
	// distinct finding (the first violation of each predicate a run
	// broke), in run order.
	Found []*Finding
	// FailedRuns counts the runs that failed: with All, every one, so
	// that how often a bug is hit compares across strategies and fixes.
	FailedRuns int
	// Unmatched are the script's tables that matched no object in any
	// run checked: most likely misspelt (predicates.UnmatchedTable).
	Unmatched predicates.UnmatchedAcross
}

// RunsPerSecond is the exploration's throughput.
func (s *Summary) RunsPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Runs) / s.Elapsed.Seconds()
}

// Run explores sys under cfg (defaults applied; its Chooser is replaced
// run by run) with strat, checking every run against opts.Script. It
// returns at the first failing run (all of them with All), when the
// budget or time runs out, when the strategy is exhausted, or when ctx is
// done. A predicate that could not be evaluated stops it with an error
// wrapping the *predicates.EvalError (the summary's last finding is that
// run); a script that does not load, with that error.
func Run(ctx context.Context, sys *system.System, cfg sim.Config, strat Strategy, opts Options) (*Summary, error) {
	cfg = cfg.WithDefaults(sys)
	if err := sim.CheckConfig(sys, cfg); err != nil {
		return nil, err
	}
	sh := opts.Shard
	if sh != (Shard{}) && (sh.Index < 0 || sh.Index >= sh.Count) {
		return nil, fmt.Errorf("shard %d/%d: want I/N with 0 <= I < N", sh.Index, sh.Count)
	}
	if sh.Sharded() {
		if why := Shardable(strat); why != "" {
			return nil, fmt.Errorf("%s cannot be sharded by run number: %s (run it on one machine)", strat.Name(), why)
		}
		strat = &shardStrategy{Strategy: strat, shard: sh}
		if opts.Budget > 0 {
			opts.Budget = sh.runs(opts.Budget)
			if opts.Budget == 0 {
				// Fewer runs than shards: this shard has none. Budget 0
				// would mean "no bound".
				return &Summary{Strategy: strat.Describe(), Stopped: "budget", Progress: Progress{States: -1}}, nil
			}
		}
	} else {
		opts.Shard = Shard{Index: 0, Count: 1}
	}
	d := &driver{sys: sys, cfg: cfg, strat: strat, opts: opts, start: time.Now()}
	if d.opts.Jobs < 1 {
		d.opts.Jobs = 1
	}
	if d.opts.Jobs > 1 {
		d.alone = new(sync.RWMutex)
	}
	if d.opts.Batch < 1 {
		d.opts.Batch = 32
	}
	if d.opts.Start == nil {
		d.opts.Start = func(cfg sim.Config, out io.Writer) (*sim.Result, error) { return sim.Run(sys, cfg, out) }
	}
	if d.opts.Check.Registry == nil {
		d.opts.Check.Registry = system.NewRegistry(sys)
	}
	if d.opts.Time > 0 {
		d.deadline = d.start.Add(d.opts.Time)
	}
	sum := &Summary{Strategy: strat.Describe()}
	err := d.loop(ctx, sum)
	sum.Progress = d.progress()
	return sum, err
}

type driver struct {
	sys      *system.System
	cfg      sim.Config
	strat    Strategy
	opts     Options
	start    time.Time
	deadline time.Time
	runs     int
	events   int64
	depth    int
	seen     map[string]*Finding // each distinct finding's first
	// alone, with Jobs above 1: each run holds it shared; a check that
	// ran out of a budget measuring the process runs again holding it
	// alone.
	alone *sync.RWMutex
}

// job is one run of a batch.
type job struct {
	index   int
	chooser sim.Chooser
	skipped string // not run: "time" or "canceled"
	res     *sim.Result
	check   *simtest.Result
	trace   []byte
	panic   *node.PanicError
	stall   *sim.StallError
	evalErr error
	err     error
	elapsed time.Duration
}

func (j *job) failed() bool {
	return j.panic != nil || j.stall != nil || j.evalErr != nil || j.check != nil && len(j.check.Failing) > 0
}

func (d *driver) progress() Progress {
	p := Progress{Runs: d.runs, Events: d.events, States: -1, MaxDepth: d.depth, Elapsed: time.Since(d.start)}
	if sc, ok := d.strat.(StateCounter); ok {
		p.States = sc.States()
	}
	return p
}

func (d *driver) loop(ctx context.Context, sum *Summary) error {
	size := 1
	for {
		switch {
		case d.opts.Budget > 0 && d.runs >= d.opts.Budget:
			sum.Stopped = "budget"
			return nil
		case !d.deadline.IsZero() && !time.Now().Before(d.deadline):
			sum.Stopped = "time"
			return nil
		case ctx.Err() != nil:
			sum.Stopped = "canceled"
			return nil
		}
		var batch []*job
		for len(batch) < size && (d.opts.Budget == 0 || d.runs+len(batch) < d.opts.Budget) {
			ch, ok := d.strat.Next()
			if !ok {
				break
			}
			// Runs keep the unsharded exploration's numbers.
			batch = append(batch, &job{index: d.opts.Shard.Index + (d.runs+len(batch))*d.opts.Shard.Count, chooser: ch})
		}
		if len(batch) == 0 {
			sum.Stopped = "exhausted"
			return nil
		}
		size = d.opts.Batch
		d.execute(ctx, batch)
		skipped := ""
		for _, j := range batch {
			if j.skipped != "" {
				// Runs after it in the batch may have finished (with
				// --jobs, one canceled in its middle while others were
				// done): they count, and their findings are kept.
				skipped = cmp.Or(skipped, j.skipped)
				continue
			}
			if j.err != nil {
				if _, ok := j.err.(*DivergenceError); ok {
					// The run was made; its check is what failed.
					sum.Stopped = "divergence"
					sum.FailedRuns++
					d.count(j)
				}
				return j.err
			}
			d.count(j)
			if c, ok := j.chooser.(interface{ Decisions() int }); ok {
				d.depth = max(d.depth, c.Decisions())
			}
			d.strat.Done(Outcome{Run: j.index, Chooser: j.chooser, Steps: d.steps(j), Failed: j.failed()})
			if d.opts.OnRun != nil {
				d.opts.OnRun(j.index, j.check)
			}
			if j.check != nil {
				sum.Unmatched.Add(j.check.Report)
			}
			if d.opts.Progress != nil {
				d.opts.Progress(d.progress())
			}
			if !j.failed() {
				continue
			}
			sum.FailedRuns++
			f, err := d.finding(j)
			if err != nil {
				return err
			}
			f.Runs = 1
			if j.evalErr != nil {
				sum.Found = append(sum.Found, f)
				sum.Stopped = "predicate error"
				return fmt.Errorf("run %d: %w", j.index, j.evalErr)
			}
			if j.stall != nil {
				// Its goroutine stays behind (spinning, it takes a
				// core): going on would leave one more at every such run.
				sum.Found = append(sum.Found, f)
				sum.Stopped = "stall"
				return nil
			}
			if d.seen == nil {
				d.seen = map[string]*Finding{}
			}
			for _, f := range d.distinct(f) {
				if first := d.seen[f.Key()]; first != nil {
					first.Runs++
					continue
				}
				f.Runs = 1
				d.seen[f.Key()] = f
				sum.Found = append(sum.Found, f)
			}
			if !d.opts.All {
				sum.Stopped = "violation"
				return nil
			}
		}
		if skipped != "" {
			sum.Stopped = skipped
			return nil
		}
	}
}

// count adds a run that was made, and its events, to the totals.
func (d *driver) count(j *job) {
	d.runs++
	d.events += int64(d.steps(j))
}

func (d *driver) steps(j *job) int {
	if j.res == nil {
		return 0
	}
	return j.res.Steps
}

// execute runs a batch on Jobs goroutines. Without All, a run after one
// known to fail is skipped: the result is the first failing run by
// index, whichever finishes first.
func (d *driver) execute(ctx context.Context, batch []*job) {
	var firstFail atomic.Int64
	firstFail.Store(int64(^uint64(0) >> 1))
	work := func(j *job) {
		switch {
		case !d.opts.All && int64(j.index) > firstFail.Load():
			return // never looked at
		case !d.deadline.IsZero() && !time.Now().Before(d.deadline):
			j.skipped = "time"
			return
		case ctx.Err() != nil:
			j.skipped = "canceled"
			return
		}
		// A long run's trace is spilled: one that cannot be read back
		// fails this run's job, on whichever goroutine runs it.
		if d.alone != nil {
			d.alone.RLock()
			defer d.alone.RUnlock()
		}
		if err := replay.CatchReadBack(func() error { d.runOne(ctx, j); return nil }); err != nil {
			j.err = fmt.Errorf("run %d: %w", j.index, err)
		}
		if j.failed() || j.err != nil {
			for {
				cur := firstFail.Load()
				if int64(j.index) >= cur || firstFail.CompareAndSwap(cur, int64(j.index)) {
					break
				}
			}
		}
	}
	if d.opts.Jobs == 1 || len(batch) == 1 {
		for _, j := range batch {
			work(j)
		}
		return
	}
	next := make(chan *job)
	var wg sync.WaitGroup
	for range min(d.opts.Jobs, len(batch)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				work(j)
			}
		}()
	}
	for _, j := range batch {
		next <- j
	}
	close(next)
	wg.Wait()
}

// canceledCheck tells a run's check that cancelation stopped early, with
// nothing found: its report judges nothing, and the run is discarded. A
// check that finished, or found a failure or an evaluation error, before
// it saw the cancelation is kept.
func canceledCheck(canceled, err error, cr *simtest.Result) bool {
	return canceled != nil && err == nil && cr != nil && len(cr.Failing) == 0 && !cr.Report.Complete
}

// runOne simulates and checks one run. Canceling ctx ends the run under
// way (a run of thousands of nodes takes minutes): it is then skipped,
// as a run not yet started is, and not counted.
func (d *driver) runOne(ctx context.Context, j *job) {
	start := time.Now()
	defer func() { j.elapsed = time.Since(start) }()
	cfg := d.cfg
	cfg.Chooser = j.chooser
	cfg.Stop = func() bool { return ctx.Err() != nil }
	var buf bytes.Buffer
	res, err := d.opts.Start(cfg, &buf)
	j.res = res
	if errors.Is(err, sim.ErrInterrupted) {
		j.res, j.skipped = nil, "canceled"
		return
	}
	if err != nil {
		var pe *node.PanicError
		if errors.As(err, &pe) && res != nil {
			j.panic, j.trace = pe, buf.Bytes()
			return
		}
		var se *sim.StallError
		if errors.As(err, &se) && res != nil { // not interrupted: that is ErrInterrupted
			j.stall, j.trace = se, buf.Bytes()
			return
		}
		j.err = fmt.Errorf("run %d (%s): %w", j.index, j.chooser.Describe(), err)
		return
	}
	opts := d.opts.Check
	opts.StopAtFirst = !d.opts.All
	stop := opts.Stop
	opts.Stop = func() bool { return ctx.Err() != nil || stop != nil && stop() }
	if t, ok := j.chooser.(interface{ Truncated() string }); ok && t.Truncated() != "" {
		// A run the strategy cut short has no end at which to judge
		// liveness: only safety counts.
		counts := opts.Counts
		opts.Counts = func(v *predicates.Violation) bool {
			return v.Kind == "safety" && (counts == nil || counts(v))
		}
	}
	cr, err := simtest.CheckTrace(d.sys, cfg, res, buf.Bytes(), d.opts.Script, opts)
	var evalErr *predicates.EvalError
	if d.alone != nil && errors.As(err, &evalErr) && evalErr.Process() {
		// The memory and time budgets measure the process, so the runs
		// beside this one count against it: check the trace again with
		// nothing else running, as --jobs 1 would have, so that the
		// result does not depend on --jobs.
		d.alone.RUnlock()
		func() {
			// Held shared again however the check ends: work's deferred
			// RUnlock follows even a read-back panic out of it.
			d.alone.Lock()
			defer d.alone.RLock()
			defer d.alone.Unlock()
			cr, err = simtest.CheckTrace(d.sys, cfg, res, buf.Bytes(), d.opts.Script, opts)
		}()
	}
	if canceledCheck(ctx.Err(), err, cr) {
		j.res, j.skipped = nil, "canceled"
		return
	}
	switch {
	case err != nil && errors.As(err, &evalErr) && cr != nil:
		j.check, j.evalErr = cr, err
	case err != nil:
		var d *replay.Divergence
		if errors.As(err, &d) {
			j.err = &DivergenceError{Run: j.index, Trace: buf.Bytes(), Err: err}
			return
		}
		j.err = fmt.Errorf("run %d: %w", j.index, err)
		return
	default:
		j.check = cr
	}
	if j.failed() {
		j.trace = buf.Bytes()
	}
}

// DivergenceError ends an exploration whose run did not replay as it
// was simulated: a nondeterministic handler, which no strategy can
// explore. Trace is that run's trace, for replay verify to explain.
type DivergenceError struct {
	Run   int
	Trace []byte
	Err   error // wraps the *replay.Divergence
}

func (e *DivergenceError) Error() string {
	return fmt.Sprintf("run %d: %v", e.Run, e.Err)
}

func (e *DivergenceError) Unwrap() error { return e.Err }

// finding describes a failing run.
func (d *driver) finding(j *job) (*Finding, error) {
	cfg := d.cfg
	cfg.Chooser = j.chooser
	f := &Finding{Run: j.index, Chooser: j.chooser.Describe(), Config: cfg, Trace: j.trace, Steps: d.steps(j), Elapsed: j.elapsed,
		Check: j.check, Panic: j.panic, Stall: j.stall, EvalErr: j.evalErr}
	if j.check != nil && len(j.check.Failing) > 0 && j.evalErr == nil {
		f.Violation = j.check.Failing[0]
	}
	if j.panic != nil || j.stall != nil {
		sc, err := panicSchedule(j)
		if err != nil {
			return nil, fmt.Errorf("run %d: the schedule of the failed handler call: %w", j.index, err)
		}
		f.Schedule = sc
	}
	return f, nil
}

// distinct is a failing run's findings: with All, the first violation of
// each predicate the run's check counted, in the order they were decided
// (the check ran to the run's end); else its first. Keeping only the
// first hid a second predicate that every run broke later than the first
// (a new user's G-counter). Other witnesses of a predicate the run broke
// are left to the runs where they come first, as before: a predicate
// broken at every node would otherwise be one finding per node per run.
func (d *driver) distinct(f *Finding) []*Finding {
	if !d.opts.All || f.Violation == nil || len(f.Check.Failing) < 2 {
		return []*Finding{f}
	}
	var out []*Finding
	seen := map[string]bool{}
	for _, v := range f.Check.Failing {
		if seen[v.Predicate] {
			continue
		}
		seen[v.Predicate] = true
		g := *f
		g.Violation = v
		out = append(out, &g)
	}
	return out
}

// panicSchedule is the schedule of a run that ended in a handler panic
// or stall: its trace's, and the event whose handler failed, which the
// trace lacks.
func panicSchedule(j *job) (*sim.Schedule, error) {
	tf, err := record.Read(bytes.NewReader(j.trace), fmt.Sprintf("run %d", j.index), int64(len(j.trace)))
	if err != nil {
		return nil, err
	}
	sc, err := sim.ScheduleOf(tf)
	if err != nil {
		return nil, err
	}
	if c, ok := j.chooser.(interface {
		LastEvent() (sim.ScheduledEvent, bool)
	}); ok {
		if e, ok := c.LastEvent(); ok {
			sc.Events = append(sc.Events, e)
		}
	}
	return sc, nil
}
