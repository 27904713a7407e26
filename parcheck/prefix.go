package parcheck

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/system"
)

// Prefix is the check of the first steps of a trace, done once for the
// many traces that begin with them: the futures of one step that
// replay predict (and any fork of a recorded world) checks. Checking a
// future then costs a warm-up window and the future itself, not the
// whole recording before it: its checker starts from a checkpoint of
// the world a warm-up before the shared step and takes over from the
// prefix's checker there, as a segment of replay check --jobs takes over
// from its predecessor (predicates.Segment). Where the seam is refused,
// the caller checks the future from #0; the report is the sequential
// check's either way.
//
// A refused seam is refused for every fork alike: the warm-up and the
// check of the recording see the same steps. After a refusal the
// warm-up is made four times longer (a memo the recording's check made
// long before a short warm-up is often made by a longer one), while it
// stays within half the recording; then Check stops trying.
//
// A Prefix is safe for concurrent use. The reports Check returns share
// the prefix's closed violations (*predicates.Violation): no one writes
// to a report's violations.
type Prefix struct {
	at   int // the last shared step
	seam *predicates.Seam
	part predicates.Part
	load func(r *replay.Replayer, from int) (*predicates.Checker, error)
	tr   *replay.Trace
	reg  *system.Registry
	opts replay.Options // of base

	mu       sync.Mutex
	base     *replay.Replayer // at the warm-up's start, never stepped on
	warmup   int              // the steps from base to at
	gaveUp   bool             // refused at the longest warm-up
	firstWhy string           // why the first refused seam was refused
	cannot   string           // why no warm-up can take over (then gaveUp from the start)

	checks, resumed atomic.Int64
}

// PrefixOptions configure NewPrefix.
type PrefixOptions struct {
	// Warmup is how many steps before the prefix's end a fork's check
	// starts (0: DefaultWarmup).
	Warmup int
	// Replay configures the replays of the recording.
	Replay replay.Options
	// Stop, if set, is polled at every step of the check of the
	// recording: when it returns true, NewPrefix returns ErrStopped.
	Stop func() bool
	// Progress, if set, hears every 1024th step of that check.
	Progress func(step int)
}

// ErrStopped is NewPrefix's error when PrefixOptions.Stop said to stop.
var ErrStopped = errors.New("stopped")

// NewPrefix checks the steps of tr up to and including at, with the
// checker load binds (evaluating from step from on; as Options.Load),
// and keeps a replay of tr where a fork's warm-up begins. It returns nil
// and no error when there is nothing to share: at is within the warm-up
// of #0.
func NewPrefix(tr *replay.Trace, reg *system.Registry, at int, o PrefixOptions,
	load func(r *replay.Replayer, from int) (*predicates.Checker, error)) (*Prefix, error) {
	if o.Warmup <= 0 {
		o.Warmup = DefaultWarmup
	}
	if at < 0 || at >= tr.Len() {
		return nil, fmt.Errorf("check the prefix up to #%d: the trace's steps are #0..#%d", at, tr.Len()-1)
	}
	start := at - o.Warmup // the checkpoint's step: the warm-up evaluates the steps after it
	if start < 0 {
		return nil, nil
	}
	// The trace's lazily built indexes must exist before goroutines
	// share it.
	for _, id := range tr.Nodes {
		tr.NodeSteps(id)
	}
	p := &Prefix{at: at, load: load, tr: tr, reg: reg, warmup: o.Warmup,
		opts: replay.Options{Nodes: o.Replay.Nodes, Watch: o.Replay.Watch, SkipStateHashes: true}}
	err := replay.CatchReadBack(func() error {
		r, err := replay.New(tr, reg, o.Replay)
		if err != nil {
			return err
		}
		defer r.Close()
		c, err := load(r, 0)
		if err != nil {
			return err
		}
		seg := predicates.NewFirstSegment(c)
		var cp *replay.Checkpoint
		for seg.Pos() < at {
			if seg.Pos() == start {
				cp = r.TakeCheckpoint() // where the forks' warm-up begins
			}
			if err := seg.Step(); err != nil {
				return fmt.Errorf("check the recording up to #%d: %w", at, err)
			}
			if o.Stop != nil && o.Stop() {
				return ErrStopped
			}
			if o.Progress != nil && seg.Pos()%1024 == 0 {
				o.Progress(seg.Pos())
			}
		}
		p.seam, p.part = seg.Seam(), seg.Part()
		if name, step, ok := c.EarliestOperation(); ok && step <= at-longestWarmup(o.Warmup, at) {
			// Every warm-up would be refused, each costing a fork its
			// warm-up before its check from #0.
			p.gaveUp = true
			p.cannot = fmt.Sprintf("history %s holds an operation called at #%d, before the longest warm-up (%d steps) begins, and no warm-up short of #0 rebuilds a history", name, step, longestWarmup(o.Warmup, at))
			return nil
		}
		if p.base, err = replay.New(tr, reg, p.opts); err != nil {
			return err
		}
		if err := p.base.StartAt(cp); err != nil {
			p.Close()
			return fmt.Errorf("start a replay of the recording at #%d: %w", start, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// longerWarmup is the warm-up a refusal after warmup steps before at
// leads to: four times longer, while it stays within half of at (ok).
func longerWarmup(warmup, at int) (longer int, ok bool) {
	longer = warmup * 4
	return longer, longer <= at/2
}

// longestWarmup is the longest warm-up refusals lead to from warmup.
func longestWarmup(warmup, at int) int {
	for {
		longer, ok := longerWarmup(warmup, at)
		if !ok {
			return warmup
		}
		warmup = longer
	}
}

// Cannot says why no fork's check can take over from the prefix ("": one
// may): then every fork is checked from #0 without trying.
func (p *Prefix) Cannot() string { return p.cannot }

// Close ends the prefix's replay (its nodes' task goroutines).
func (p *Prefix) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.base != nil {
		p.base.Close()
		p.base = nil
	}
}

// At is the last step the prefix covers.
func (p *Prefix) At() int { return p.at }

// Warmup is how many steps before At a fork's check starts now (it
// grows after a refusal).
func (p *Prefix) Warmup() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.warmup
}

// Stats are how many traces Check was asked to check and how many of
// them it checked from the prefix on (the others were checked from #0).
func (p *Prefix) Stats() (checks, resumed int) { return int(p.checks.Load()), int(p.resumed.Load()) }

// Refusal says why the first refused seam was refused ("": none was).
func (p *Prefix) Refusal() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firstWhy
}

// checkpoint copies the world where a fork's warm-up begins, and says
// how long that warm-up is (nil: Check no longer tries).
func (p *Prefix) checkpoint() (*replay.Checkpoint, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gaveUp || p.base == nil {
		return nil, 0
	}
	return p.base.TakeCheckpoint(), p.warmup
}

// refused records a seam refused after a warm-up of warmup steps and
// lengthens the warm-up (once per length, whichever fork was refused
// first), or gives up.
func (p *Prefix) refused(why error, warmup int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.firstWhy == "" {
		p.firstWhy = why.Error()
	}
	if warmup != p.warmup || p.gaveUp {
		return // another fork already acted on this length
	}
	longer, ok := longerWarmup(warmup, p.at)
	if !ok || p.base == nil {
		// A warm-up of half the recording or more saves at most half of
		// each fork's check, and some state no warm-up short of #0
		// rebuilds (a break still open since early on, read through
		// prev()): stop paying warm-ups for it.
		p.gaveUp = true
		return
	}
	base, err := replay.New(p.tr, p.reg, p.opts)
	if err == nil {
		err = replay.CatchReadBack(func() error { return base.RunTo(p.at-longer, nil) })
	}
	if err != nil {
		if base != nil {
			base.Close()
		}
		p.gaveUp = true
		return
	}
	p.base.Close()
	p.base, p.warmup = base, longer
}

// Check checks tr, a trace whose steps up to At are the prefix's, with
// the report a check from #0 would give. ok is false when it could not
// take over from the prefix (the seam refused, or the future's replay
// failed in the warm-up or after it): the caller then checks tr from #0,
// which reports whatever went wrong as a sequential check does. The run
// options are Run's (Progress aside).
func (p *Prefix) Check(tr *replay.Trace, reg *system.Registry, ropts replay.Options, run predicates.RunOptions) (rep *predicates.Report, ok bool, err error) {
	p.checks.Add(1)
	switch {
	case tr.Len() <= p.at:
		return nil, false, nil
	case run.StopAtFirst && p.part.Stops(run.Counts):
		// A check from #0 stops within the prefix: it says where.
		return nil, false, nil
	}
	cp, warmup := p.checkpoint()
	if cp == nil {
		return nil, false, nil
	}
	r, err := replay.New(tr, reg, ropts)
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	if err := r.StartAt(cp); err != nil {
		return nil, false, nil
	}
	c, err := p.load(r, r.Pos()+1)
	if err != nil {
		return nil, false, err
	}
	prev := make(chan *predicates.Seam, 1)
	prev <- p.seam
	s := predicates.ResumeSegment(c, prev)
	for s.Pos() < p.at {
		if err := s.Step(); err != nil {
			return nil, false, nil
		}
		if run.Stop != nil && run.Stop() {
			return nil, false, nil // the check from #0 stops at its first step
		}
	}
	s.Mark()
	s.Wait()
	if s.Rejected() {
		if s.Refused != nil {
			p.refused(s.Refused, warmup)
		}
		return nil, false, nil
	}
	atEnd := false
	for {
		err := s.Step()
		if errors.Is(err, io.EOF) {
			if s.Quiesce(run.Quiet) != nil {
				return nil, false, nil // as below
			}
			atEnd = true
			break
		}
		if err != nil {
			// A divergence or a failure of the replay: the check from
			// #0 reports it with the report of the steps before it.
			return nil, false, nil
		}
		if run.Stop != nil && run.Stop() && s.Pos() < tr.Len()-1 {
			break
		}
		if run.StopAtFirst && s.ShouldStop(run.Counts) {
			break
		}
	}
	p.resumed.Add(1)
	return predicates.Stitch([]predicates.Part{p.part, s.Finish(atEnd)}), true, nil
}
