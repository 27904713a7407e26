package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/replay"
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
	trace := filepath.Join(dir, "index.lz4")
	if err := os.WriteFile(trace, data, 0o644); err != nil {
		return Result{}, err
	}
	reg := system.NewRegistry(paxos.System)
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
	db, _, err := statedb.Ensure([]string{trace}, filepath.Join(dir, "index.lz4.db"), statedb.Options{Registry: reg, Force: true})
	if err != nil {
		return Result{}, err
	}
	index := time.Since(t1)
	steps := db.Len()
	db.Close()
	ratio := float64(index) / float64(verify)
	return Result{Name: fmt.Sprintf("index a %d-event paxos trace", steps), Value: float64(steps) / index.Seconds(), Unit: "steps/s",
		Baseline: fmt.Sprintf("verify: %.0f steps/s", float64(steps)/verify.Seconds()), Ratio: ratio,
		Target: "<= 3x", Met: met(ratio <= 3)}, nil
}
