package statedb

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/replaycheck/replaycheck/internal/spillfault"
	"github.com/replaycheck/replaycheck/replay"
)

// A build whose spilled trace cannot be read back fails with that error:
// the writer's goroutine, which renders each step, panicked with a
// stack, ending the process (the debugger's too, its terminal raw).
func TestBuildOfATraceThatCannotBeReadBackFails(t *testing.T) {
	trace := simulate(t, t.TempDir(), "p.lz4", "", 1, nil)
	dir := t.TempDir()
	tr, err := replay.LoadWith(replay.LoadOptions{InMemory: -1, TempDir: dir}, trace)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	spillfault.Truncate(t, dir)
	db, err := Build(filepath.Join(t.TempDir(), "t.db"), tr, "fp", Options{Registry: registry})
	if db != nil {
		db.Close()
	}
	var rb *replay.ReadBackError
	if !errors.As(err, &rb) {
		t.Fatalf("build: %v, want a ReadBackError", err)
	}
}
