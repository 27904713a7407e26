package replay_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

// TestLoadNamesTheFirstBadFileInOrder: files are decoded concurrently, but
// a load fails as reading them one after the other would, on the first
// bad file in the order given, and leaves nothing running behind it.
func TestLoadNamesTheFirstBadFileInOrder(t *testing.T) {
	dir := t.TempDir()
	chord, err := examples.Registry().Lookup("chord")
	if err != nil {
		t.Fatal(err)
	}
	// More events than are decoded ahead of the loader (16,384), so that
	// decoders wait on it when it stops.
	good := simulateToFile(t, chord, sim.Config{Seed: 2, Steps: 20000, Time: time.Hour}, dir)
	junk := filepath.Join(dir, "junk.lz4")
	if err := os.WriteFile(junk, []byte("not a trace at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	absent := filepath.Join(dir, "absent.lz4")
	before := runtime.NumGoroutine()
	for _, tc := range []struct {
		paths []string
		want  string
	}{
		{[]string{good, good, junk, absent}, "junk.lz4"},
		{[]string{good, absent, junk}, "absent.lz4"},
		{[]string{junk, good, good, good}, "junk.lz4"},
	} {
		for _, o := range []replay.LoadOptions{{}, {InMemory: -1, TempDir: dir}} {
			tr, err := replay.LoadWith(o, tc.paths...)
			if err == nil {
				tr.Close()
				t.Fatalf("%v: loaded", tc.paths)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v (in memory %d): %v, want the error of %s", tc.paths, o.InMemory, err, tc.want)
			}
		}
	}
	// The decoders of the files after a bad one stop too.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the failed loads, %d before", n, before)
	}
}
