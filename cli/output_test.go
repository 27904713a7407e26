package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/statedb"
)

// A killed `replay sim -o` leaves its partial output: the next output to
// the same name removes the partials no live process writes (issue 10,
// item 13), and only those.
func TestStalePartialOutputsAreRemoved(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "run.lz4")
	old := time.Now().Add(-time.Hour)
	// Being written by a live process (it holds the file's lock).
	live, err := statedb.CreatePartial(target)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	os.Chtimes(live.Name(), old, old)
	stale := filepath.Join(dir, ".run.lz4.partial-123456")
	if err := os.WriteFile(stale, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(stale, old, old)
	// Killed half a minute ago, as a user who kills and reruns would.
	recent := filepath.Join(dir, ".run.lz4.partial-777")
	os.WriteFile(recent, nil, 0o644)
	os.Chtimes(recent, time.Now().Add(-30*time.Second), time.Now().Add(-30*time.Second))
	// Not ours: another name, and a name that only looks alike.
	other := filepath.Join(dir, ".other.lz4.partial-1")
	lookalike := filepath.Join(dir, ".run.lz4.partial-notes")
	for _, p := range []string{other, lookalike} {
		os.WriteFile(p, nil, 0o644)
		os.Chtimes(p, old, old)
	}

	f, err := createAtomic(target)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("x"))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{stale, recent} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("the stale partial output %s was not removed", filepath.Base(p))
		}
	}
	for _, p := range []string{live.Name(), other, lookalike, target} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
		}
	}
}
