package bench

import (
	"bytes"
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

// CheckJobs checks an n-event chord trace with scripts/chord.star (at
// script, a file) sequentially and with 2 jobs (replay check --jobs 2),
// and gives the speed-up of the check (the trace is loaded once, before
// either). The reports must be equal. Target on 2 idle cores: >= 1.6x.
func CheckJobs(script string, n int) (Result, error) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps, cfg.Time = 1, n, 1_000_000*time.Second
	var buf bytes.Buffer
	if _, err := sim.Run(chord.System, cfg.WithDefaults(chord.System), &buf); err != nil {
		return Result{}, err
	}
	tr, err := replay.FromBytes(buf.Bytes(), "chord.lz4")
	if err != nil {
		return Result{}, err
	}
	reg := system.NewRegistry(chord.System)
	load := func(r *replay.Replayer, from int) (*predicates.Checker, error) {
		return predicates.Load(script, r, predicates.Options{From: from, To: -1})
	}
	runtime.GC()
	t0 := time.Now()
	r, err := replay.New(tr, reg, replay.Options{})
	if err != nil {
		return Result{}, err
	}
	c, err := load(r, 0)
	if err != nil {
		return Result{}, err
	}
	seq, err := c.Run(predicates.RunOptions{})
	if err != nil {
		return Result{}, err
	}
	seqT := time.Since(t0)
	runtime.GC()
	t1 := time.Now()
	par, stats, err := parcheck.Check(tr, reg, parcheck.Options{Jobs: 2, Load: load, To: -1})
	if err != nil {
		return Result{}, err
	}
	parT := time.Since(t1)
	if len(par.Violations) != len(seq.Violations) || par.Steps != seq.Steps {
		return Result{}, fmt.Errorf("check --jobs 2 found %d violations in %d steps, --jobs 1 %d in %d", len(par.Violations), par.Steps, len(seq.Violations), seq.Steps)
	}
	ratio := seqT.Seconds() / parT.Seconds()
	return Result{Name: fmt.Sprintf("check --jobs 2, chord %d events (%d seams, %d refused)", tr.Len(), stats.Seams, len(stats.Refused)),
		Value: float64(tr.Len()) / parT.Seconds(), Unit: "steps/s",
		Baseline: fmt.Sprintf("%.0f steps/s with --jobs 1", float64(tr.Len())/seqT.Seconds()),
		Ratio:    ratio, Target: ">= 1.6x faster on 2 idle cores", Met: met(ratio >= 1.6)}, nil
}
