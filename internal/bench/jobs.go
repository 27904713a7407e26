package bench

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/replaycheck/replaycheck/examples/chord"
	"github.com/replaycheck/replaycheck/parcheck"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// jobsRounds is how many rounds CheckJobs measures; each figure is the
// best of them, so that a burst of other load on a shared machine falls
// on one round rather than on one side of a ratio.
const jobsRounds = 3

// CheckJobs checks an n-event chord trace with scripts/chord.star (at
// script, a file) sequentially and with 2 jobs (replay check --jobs 2),
// and gives the speed-up of the check (the trace is loaded once, before
// either). The reports must be equal. Target on 2 idle cores: >= 1.6x.
//
// Its second result is the ceiling two cores give that check on this
// machine: the same sequential check run twice at once, on two
// goroutines, against once alone. No split of one check can beat it: it
// pays what the cores share (memory bandwidth, caches, a hypervisor's
// scheduling, the collector) and none of the pass, warm-up and seams
// that --jobs adds. The ratio of the two is how much of the machine's
// parallelism --jobs 2 turns into speed.
func CheckJobs(script string, n int) ([]Result, error) {
	tr, reg, err := defaultChordTrace(n)
	if err != nil {
		return nil, err
	}
	load := func(r *replay.Replayer, from int) (*predicates.Checker, error) {
		return predicates.Load(script, r, predicates.Options{From: from, To: -1})
	}
	sequential := func() (*predicates.Report, error) {
		r, err := replay.New(tr, reg, replay.Options{})
		if err != nil {
			return nil, err
		}
		c, err := load(r, 0)
		if err != nil {
			return nil, err
		}
		return c.Run(predicates.RunOptions{})
	}
	timed := func(fn func() error) (time.Duration, error) {
		runtime.GC()
		t0 := time.Now()
		err := fn()
		return time.Since(t0), err
	}
	var seqT, parT, twoT time.Duration
	var stats parcheck.Stats
	for round := range jobsRounds {
		var seq, par *predicates.Report
		s, err := timed(func() (err error) { seq, err = sequential(); return err })
		if err != nil {
			return nil, err
		}
		p, err := timed(func() (err error) {
			par, stats, err = parcheck.Check(tr, reg, parcheck.Options{Jobs: 2, Load: load, To: -1})
			return err
		})
		if err != nil {
			return nil, err
		}
		if len(par.Violations) != len(seq.Violations) || par.Steps != seq.Steps {
			return nil, fmt.Errorf("check --jobs 2 found %d violations in %d steps, --jobs 1 %d in %d", len(par.Violations), par.Steps, len(seq.Violations), seq.Steps)
		}
		two, err := timed(func() error {
			errs := make(chan error, 2)
			for range 2 {
				go func() {
					_, err := sequential()
					errs <- err
				}()
			}
			return errors.Join(<-errs, <-errs)
		})
		if err != nil {
			return nil, err
		}
		if round == 0 || s < seqT {
			seqT = s
		}
		if round == 0 || p < parT {
			parT = p
		}
		if round == 0 || two < twoT {
			twoT = two
		}
	}
	steps := float64(tr.Len())
	ratio := seqT.Seconds() / parT.Seconds()
	ceiling := 2 * seqT.Seconds() / twoT.Seconds()
	return []Result{
		{Name: fmt.Sprintf("check --jobs 2, chord %d events (%d seams, %d refused)", tr.Len(), stats.Seams, len(stats.Refused)),
			Value: steps / parT.Seconds(), Unit: "steps/s",
			Baseline: fmt.Sprintf("%.0f steps/s with --jobs 1; %.0f%% of the ceiling below", steps/seqT.Seconds(), 100*ratio/ceiling),
			Ratio:    ratio, Target: ">= 1.6x faster on 2 idle cores", Met: met(ratio >= 1.6)},
		{Name: "two whole checks at once (the ceiling of --jobs 2 here)",
			Value: 2 * steps / twoT.Seconds(), Unit: "steps/s",
			Baseline: fmt.Sprintf("%.0f steps/s for one alone", steps/seqT.Seconds()),
			Ratio:    ceiling},
	}, nil
}

// defaultChordTrace simulates chord (seed 1, default scenario) for about
// n events and loads it.
func defaultChordTrace(n int) (*replay.Trace, *system.Registry, error) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps, cfg.Time = 1, n, 1_000_000*time.Second
	var buf bytes.Buffer
	if _, err := sim.Run(chord.System, cfg.WithDefaults(chord.System), &buf); err != nil {
		return nil, nil, err
	}
	tr, err := replay.FromBytes(buf.Bytes(), "chord.lz4")
	if err != nil {
		return nil, nil, err
	}
	return tr, system.NewRegistry(chord.System), nil
}
