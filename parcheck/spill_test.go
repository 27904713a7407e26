package parcheck_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/examples/chord"
	"github.com/replaycheck/replaycheck/parcheck"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

// TestCheckSpilledIsRun: segments checking at once share a spilled
// trace, each reading its events back through the one chunk cache (go
// test -race sees them), and report what a sequential run over the trace
// held in memory reports.
func TestCheckSpilledIsRun(t *testing.T) {
	path := chordFile(t)
	load := loader(t, "chord.star")
	mem, err := replay.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := sequential(t, mem, load)
	if err != nil {
		t.Fatal(err)
	}
	want := report(t, seq)
	spilled, err := replay.LoadWith(replay.LoadOptions{InMemory: -1, TempDir: t.TempDir()}, path)
	if err != nil {
		t.Fatal(err)
	}
	defer spilled.Close()
	n := spilled.Len()
	rep, stats, err := parcheck.Check(spilled, examples.Registry(), parcheck.Options{Jobs: 4, Warmup: 100,
		Marks: []int{n / 4, n / 2, 3 * n / 4}, Load: load, To: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := report(t, rep); got != want {
		t.Fatalf("%s: the report differs from Run's in memory\nRun:\n%s\nspilled, parallel:\n%s", stats, want, got)
	}
}

// chordFile records 6,000 steps of chord (seed 2) to a file, long enough
// to spill with LoadOptions.InMemory -1.
func chordFile(t *testing.T) string {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps, cfg.Time = 2, 6000, time.Hour
	path := filepath.Join(t.TempDir(), "chord.lz4")
	if err := os.WriteFile(path, simulate(t, chord.System, cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
