package statedb

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/sim"
)

// A build whose folder goes away under it (a cleanup, a full disk, no
// file descriptors left) fails and lets go: Badger retries a failed
// memtable flush for good, and closing its store waited for that, so the
// build never returned and held the build lock of every other index of
// the trace.
func TestABuildWhoseFolderVanishesLetsGo(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes 150,000 steps (over two minutes under the race detector)")
	}
	dir := t.TempDir()
	trace := simulate(t, dir, "big.lz4", "none", 4, func(c *sim.Config) { c.Steps, c.Time = 150_000, 1000*time.Hour })
	bg, err := StartBuild([]string{trace}, "", Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- bg.Run(nil) }()
	// Once the build has written a memtable or two, take its folder away.
	tmp := bg.DB.dir
	deadline := time.Now().Add(60 * time.Second)
	for {
		mems, _ := filepath.Glob(filepath.Join(tmp, "part-*", "*.mem"))
		if len(mems) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.RemoveAll(tmp); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		<-ran
		bg.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(90 * time.Second):
		t.Fatal("the build did not let go of its vanished folder within 90s")
	}
	// Its lock is free: another build of the trace goes ahead.
	db, _, err := Ensure([]string{trace}, "", Options{Registry: registry})
	if err != nil {
		t.Fatalf("a build after it: %v", err)
	}
	db.Close()
}
