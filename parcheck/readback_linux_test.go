package parcheck_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/examples/chord"
	"github.com/replaycheck/replaycheck/internal/spillfault"
	"github.com/replaycheck/replaycheck/parcheck"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

// A spilled trace that cannot be read back under check --jobs ends the
// check with that error from whichever goroutine meets it: the segments
// and the pass panicked with a stack, ending the process, where a
// sequential check says one line.
func TestCheckSpilledThatCannotBeReadBackFails(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps, cfg.Time = 2, 6000, time.Hour
	path := filepath.Join(t.TempDir(), "chord.lz4")
	if err := os.WriteFile(path, simulate(t, chord.System, cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, marks := range [][]int{nil, {1500, 3000, 4500}} {
		dir := t.TempDir()
		tr, err := replay.LoadWith(replay.LoadOptions{InMemory: -1, TempDir: dir}, path)
		if err != nil {
			t.Fatal(err)
		}
		spillfault.Truncate(t, dir)
		rep, st, err := parcheck.Check(tr, examples.Registry(), parcheck.Options{Jobs: 4, Warmup: 100,
			Marks: marks, Load: loader(t, "chord.star"), To: -1})
		tr.Close()
		var rb *replay.ReadBackError
		if !errors.As(err, &rb) {
			t.Fatalf("marks %v: got %v, want a ReadBackError (%s, %+v)", marks, err, st, rep)
		}
	}
}
