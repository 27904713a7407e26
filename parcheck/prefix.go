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
// A Prefix is safe for concurrent use.
type Prefix struct {
	at   int // the last shared step
	seam *predicates.Seam
	part predicates.Part
	load func(r *replay.Replayer, from int) (*predicates.Checker, error)

	mu       sync.Mutex
	base     *replay.Replayer // at the warm-up's start, never stepped again
	firstWhy string           // why the first refused seam was refused

	checks, resumed, refused atomic.Int64
}

// refusalsToGiveUp is how many refused seams, with none taken over,
// make Check stop trying: the forks of one step share the warm-up, and
// a seam refused for the memos of the prefix (not for what a fork did
// after it) is refused for every fork, each paying its warm-up for
// nothing.
const refusalsToGiveUp = 4

// NewPrefix checks the steps of tr up to and including at, with the
// checker load binds (evaluating from step from on; as Options.Load),
// and keeps a replay of tr where a warm-up of warmup steps (0:
// DefaultWarmup) before at begins. It returns nil and no error when
// there is nothing to share: at is within the warm-up of #0.
func NewPrefix(tr *replay.Trace, reg *system.Registry, at, warmup int, ropts replay.Options,
	load func(r *replay.Replayer, from int) (*predicates.Checker, error)) (*Prefix, error) {
	if warmup <= 0 {
		warmup = DefaultWarmup
	}
	if at < 0 || at >= tr.Len() {
		return nil, fmt.Errorf("check the prefix up to #%d: the trace's steps are #0..#%d", at, tr.Len()-1)
	}
	start := at - warmup // the checkpoint's step: the warm-up evaluates the steps after it
	if start < 0 {
		return nil, nil
	}
	// The trace's lazily built indexes must exist before goroutines
	// share it.
	for _, id := range tr.Nodes {
		tr.NodeSteps(id)
	}
	p := &Prefix{at: at, load: load}
	err := replay.CatchReadBack(func() error {
		r, err := replay.New(tr, reg, ropts)
		if err != nil {
			return err
		}
		defer r.Close()
		c, err := load(r, 0)
		if err != nil {
			return err
		}
		seg := predicates.NewFirstSegment(c)
		for seg.Pos() < at {
			if err := seg.Step(); err != nil {
				return fmt.Errorf("check the recording up to #%d: %w", at, err)
			}
		}
		p.seam, p.part = seg.Seam(), seg.Part()
		if p.base, err = replay.New(tr, reg, replay.Options{Nodes: ropts.Nodes, Watch: ropts.Watch, SkipStateHashes: true}); err != nil {
			return err
		}
		if err := p.base.RunTo(start, nil); err != nil {
			p.Close()
			return fmt.Errorf("replay the recording up to #%d: %w", start, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Close ends the prefix's replay (its nodes' task goroutines).
func (p *Prefix) Close() {
	if p != nil && p.base != nil {
		p.base.Close()
	}
}

// At is the last step the prefix covers.
func (p *Prefix) At() int { return p.at }

// Stats are how many traces Check was asked to check and how many of
// them it checked from the prefix on (the others were checked from #0).
func (p *Prefix) Stats() (checks, resumed int) { return int(p.checks.Load()), int(p.resumed.Load()) }

// Refusal says why the first refused seam was refused ("": none was).
func (p *Prefix) Refusal() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firstWhy
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
	case tr.Len() <= p.at, p.refused.Load() >= refusalsToGiveUp && p.resumed.Load() == 0:
		return nil, false, nil
	case run.StopAtFirst && p.part.Stops(run.Counts):
		// A check from #0 stops within the prefix: it says where.
		return nil, false, nil
	}
	r, err := replay.New(tr, reg, ropts)
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	p.mu.Lock()
	cp := p.base.TakeCheckpoint()
	p.mu.Unlock()
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
	}
	s.Mark()
	s.Wait()
	if s.Rejected() {
		p.mu.Lock()
		if p.firstWhy == "" && s.Refused != nil {
			p.firstWhy = s.Refused.Error()
		}
		p.mu.Unlock()
		p.refused.Add(1)
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
