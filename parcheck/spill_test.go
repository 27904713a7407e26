package parcheck_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/examples/chord"
	"github.com/replaycheck/replaycheck/parcheck"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

// TestCheckSpilledIsRun: segments checking at once share a spilled
// trace, each reading its events back through the one chunk cache (go
// test -race sees them), and report what a sequential run over the trace
// held in memory reports.
func TestCheckSpilledIsRun(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps, cfg.Time = 2, 6000, time.Hour
	var buf bytes.Buffer
	if _, err := sim.Run(chord.System, cfg.WithDefaults(chord.System), &buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "chord.lz4")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("../scripts/chord.star")
	if err != nil {
		t.Fatal(err)
	}
	load := func(r *replay.Replayer, from int) (*predicates.Checker, error) {
		return predicates.Load(script, r, predicates.Options{From: from, To: -1})
	}
	mem, err := replay.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(mem, examples.Registry(), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := load(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := c.Run(predicates.RunOptions{})
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
