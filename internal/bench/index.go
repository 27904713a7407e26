package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/examples/raftkv"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/statedb"
	"github.com/replaycheck/replaycheck/system"
)

// IndexVsVerify measures, on one paxos trace of about n events written
// under dir, building its trace database (replay index) against a
// verifying replay (replay verify), both from the file (target: within
// 3x). The 10⁶ and 10⁷ runs, with memory, are in docs/performance.md.
func IndexVsVerify(dir string, n int) (Result, error) {
	data, err := PaxosTrace(n, true)
	if err != nil {
		return Result{}, err
	}
	return indexVsVerify(dir, "paxos", data, paxos.System)
}

// IndexGrowingLog is IndexVsVerify on a raftkv trace of about n events
// whose replicated log grows all along (its nodes' state grows with the
// run): what indexing costs where flattening a node's state costs more
// at every step.
func IndexGrowingLog(dir string, n int) (Result, error) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps, cfg.Time = 1, n, 1000*time.Hour
	var buf bytes.Buffer
	if _, err := sim.Run(raftkv.System, cfg.WithDefaults(raftkv.System), &buf); err != nil {
		return Result{}, fmt.Errorf("simulate raftkv: %w", err)
	}
	r, err := indexVsVerify(dir, "raftkv", buf.Bytes(), raftkv.System)
	r.Name += " (a growing log)"
	return r, err
}

func indexVsVerify(dir, name string, data []byte, sys *system.System) (Result, error) {
	trace := filepath.Join(dir, "index-"+name+".lz4")
	if err := os.WriteFile(trace, data, 0o644); err != nil {
		return Result{}, err
	}
	reg := system.NewRegistry(sys)
	t0 := time.Now()
	tr, err := replay.Load(trace)
	if err != nil {
		return Result{}, err
	}
	r, err := replay.New(tr, reg, replay.Options{})
	if err != nil {
		return Result{}, err
	}
	if err := r.RunTo(tr.Len()-1, nil); err != nil {
		return Result{}, err
	}
	verify := time.Since(t0)
	t1 := time.Now()
	db, _, err := statedb.Ensure([]string{trace}, trace+".db", statedb.Options{Registry: reg, Force: true})
	if err != nil {
		return Result{}, err
	}
	index := time.Since(t1)
	steps := db.Len()
	db.Close()
	ratio := float64(index) / float64(verify)
	return Result{Name: fmt.Sprintf("index a %d-event %s trace", steps, name), Value: float64(steps) / index.Seconds(), Unit: "steps/s",
		Baseline: fmt.Sprintf("verify: %.0f steps/s", float64(steps)/verify.Seconds()), Ratio: ratio,
		Target: "<= 3x", Met: met(ratio <= 3)}, nil
}
