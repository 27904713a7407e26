// Package critical finds where a run that ends in a liveness violation
// became doomed: its critical transition, as MaceMC defined it. From the
// world rebuilt at a probed step, random walks let the system run on; the
// step is live if some walk recovers (the predicate becomes true and
// stays true), dead if none does. A binary search over the steps of the
// run finds the earliest dead step whose predecessor is live: the event
// at that step is the transition after which no walk recovered.
//
// The search is probabilistic twice over: a dead probe means that none
// of its walks recovered, not that none can, and the binary search
// assumes that once a run is dead it stays dead. The package holds the
// search and the judging of a walk; rebuilding worlds and running walks
// are the caller's (the command line's), given as a Prober.
package critical

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/predicates"
)

// Probe is what the walks from one step found.
type Probe struct {
	Step      int           `json:"step"`
	Walks     int           `json:"walks"`
	Recovered int           `json:"recovered"`
	Elapsed   time.Duration `json:"-"`
}

// Live reports whether some walk from the step recovered.
func (p Probe) Live() bool { return p.Recovered > 0 }

// Rate is the fraction of walks that recovered.
func (p Probe) Rate() float64 {
	if p.Walks == 0 {
		return 0
	}
	return float64(p.Recovered) / float64(p.Walks)
}

// Sparkline draws recovery rates in step order, one glyph per probe:
// taller for more walks recovered, a dot for none.
func Sparkline(probes []Probe) string {
	glyphs := []rune("▁▂▃▄▅▆▇█")
	var b strings.Builder
	for _, p := range probes {
		if p.Recovered == 0 {
			b.WriteRune('·')
			continue
		}
		b.WriteRune(glyphs[min(len(glyphs)-1, int(p.Rate()*float64(len(glyphs)-1)+0.5))])
	}
	return b.String()
}

// A Prober runs the walks from the world after step and counts those
// that recover.
type Prober func(ctx context.Context, step int) (Probe, error)

// Result is a finished (or stopped) search.
type Result struct {
	// Critical is the earliest dead step whose predecessor among the
	// probes is live: after its event no walk recovered. -1: walks from
	// the last step recover, so the run is not doomed where it ends.
	Critical int
	// LastLive is the latest live probe before Critical, or -1 when the
	// first probed step is already dead (the run was doomed from it).
	LastLive int
	// Probes are every probe made, by step.
	Probes []Probe
	// Stopped is "canceled" when ctx was canceled, "time limit" when its
	// deadline passed, before the search finished; Critical and LastLive
	// then bound the transition as far as it got.
	Stopped string
	// CutShort is the probe under way when the search stopped: its walks
	// ran, but too few to judge its step (nil if none was).
	CutShort *Probe
}

// WalksRun counts the walks the search ran, those of a probe cut short
// included.
func (r *Result) WalksRun() int {
	n := 0
	for _, p := range r.Probes {
		n += p.Walks
	}
	if r.CutShort != nil {
		n += r.CutShort.Walks
	}
	return n
}

// Probe returns the probe of step, if the search made one.
func (r *Result) Probe(step int) (Probe, bool) {
	i, ok := slices.BinarySearchFunc(r.Probes, step, func(p Probe, s int) int { return p.Step - s })
	if !ok {
		return Probe{}, false
	}
	return r.Probes[i], true
}

func stopReason(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "time limit"
	}
	return "canceled"
}

// errStopped: the context ended during a probe.
var errStopped = errors.New("stopped")

// Search binary-searches steps first..last (first <= last) for the
// critical transition, probing last first (a run whose end is live has
// none), then first, then midpoints: O(log(last-first)) probes. progress,
// if set, hears of every probe as it completes.
func Search(ctx context.Context, first, last int, probe Prober, progress func(Probe)) (*Result, error) {
	res := &Result{Critical: -1, LastLive: -1}
	run := func(step int) (Probe, error) {
		p, err := probe(ctx, step)
		if err != nil {
			return p, err
		}
		if ctx.Err() != nil {
			// A probe cut short ran fewer walks: "none recovered" would
			// mean nothing, so it is not among the probes.
			res.Stopped = stopReason(ctx)
			if p.Walks > 0 {
				res.CutShort = &p
			}
			return p, errStopped
		}
		i, _ := slices.BinarySearchFunc(res.Probes, step, func(p Probe, s int) int { return p.Step - s })
		res.Probes = slices.Insert(res.Probes, i, p)
		if progress != nil {
			progress(p)
		}
		return p, nil
	}
	canceled := func() bool {
		if ctx.Err() != nil {
			res.Stopped = stopReason(ctx)
			return true
		}
		return false
	}
	end, err := run(last)
	if err == errStopped {
		return res, nil
	}
	if err != nil || end.Live() {
		return res, err
	}
	res.Critical = last
	if first == last || canceled() {
		return res, nil
	}
	start, err := run(first)
	if err == errStopped {
		return res, nil
	}
	if err != nil {
		return res, err
	}
	if !start.Live() {
		res.Critical = first
		return res, nil
	}
	lo, hi := first, last
	res.LastLive = lo
	for hi-lo > 1 {
		if canceled() {
			break
		}
		mid := lo + (hi-lo)/2
		p, err := run(mid)
		if err == errStopped {
			break
		}
		if err != nil {
			return res, err
		}
		if p.Live() {
			lo = mid
		} else {
			hi = mid
		}
		res.Critical, res.LastLive = hi, lo
	}
	return res, nil
}

// Walk is a finished walk, as its check saw it.
type Walk struct {
	// Report is the check of the walk's whole trace (the parent's steps
	// up to the fork, then the walk's).
	Report *predicates.Report
	// Fork is the step the walk continued from; End the virtual time
	// (since the start of the run) where the walk ended; Quiet that it
	// ended because no events were left (the system settled: nothing
	// can change the predicate any more).
	Fork  int
	End   time.Duration
	Quiet bool
}

// Recovered reports whether the walk recovered: predicate holds where the
// walk ended, and has held for at least stable of virtual time by then
// (or since before the walk's system went quiet). A predicate that held
// at the fork and never broke during the walk recovered too: the world
// at the fork was not doomed.
func Recovered(w Walk, predicate string, stable time.Duration) bool {
	var since time.Duration = -1 // when it last became true after the fork
	for _, v := range w.Report.Violations {
		if v.Predicate != predicate || v.Kind != "liveness" {
			continue
		}
		if v.EndStep < 0 {
			return false // still false where the walk ended
		}
		if v.EndStep > w.Fork {
			since = max(since, time.Duration(v.EndTime))
		}
	}
	if since < 0 || w.Quiet {
		return true
	}
	return w.End-since >= stable
}
