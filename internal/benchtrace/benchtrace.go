// Package benchtrace provides the large traces benchmarks need, built once
// and kept between runs: a 1M-event paxos run and its trace database.
package benchtrace

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/statedb"
	"github.com/replaycheck/replaycheck/system"
)

// Registry knows the systems of the benchmark traces.
var Registry = system.NewRegistry(paxos.System)

// Dir holds the benchmark traces: $REPLAYCHECK_BENCH_DIR, or
// replaycheck-bench in the system's temporary directory.
func Dir(tb testing.TB) string {
	dir := os.Getenv("REPLAYCHECK_BENCH_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "replaycheck-bench")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// Paxos returns the path of a paxos trace of steps events (default
// scenario, seed 1, no time limit), simulating it if it is not there yet.
func Paxos(tb testing.TB, steps int) string {
	path := filepath.Join(Dir(tb), fmt.Sprintf("paxos-%d.lz4", steps))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	tb.Logf("simulating %d paxos events into %s", steps, path)
	cfg := sim.DefaultConfig()
	cfg.Seed = 1
	cfg = cfg.WithDefaults(paxos.System)
	cfg.Steps, cfg.Time = steps, 1000*time.Hour
	tmp := path + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := sim.Run(paxos.System, cfg, f); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
	return path
}

// PaxosDB opens the trace database of Paxos(steps), building it if needed
// (the database is rebuilt only when the trace changed).
func PaxosDB(tb testing.TB, steps int) (*statedb.DB, string) {
	trace := Paxos(tb, steps)
	start := time.Now()
	db, res, err := statedb.Ensure([]string{trace}, "", statedb.Options{Registry: Registry})
	if err != nil {
		tb.Fatal(err)
	}
	if res.Built {
		tb.Logf("indexed %s in %v", trace, time.Since(start))
	}
	return db, trace
}
