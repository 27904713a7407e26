package statedb

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

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

// When Badger cannot create a memtable (its folder removed) it is left
// without one, and any transaction written after that asserts there is
// one and exits the process. A build's writes must learn of the failure
// before they send another: they fail, and the process lives on.
func TestWritesToAVanishedFolderFailWithoutExiting(t *testing.T) {
	if testing.Short() {
		t.Skip("writes about 20 MB twenty times")
	}
	value := make([]byte, 512)
	for round := range 20 {
		dir := filepath.Join(t.TempDir(), "part")
		bdb, err := badger.OpenManaged(buildOptions(dir).WithMemTableSize(1 << 20).WithValueThreshold(64 << 10))
		if err != nil {
			t.Fatal(err)
		}
		wb := newBatch(bdb)
		for i := 0; err == nil && i < 40_000; i++ {
			if i == 1_000 {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
			}
			err = wb.SetEntryAt(badger.NewEntry(fmt.Appendf(nil, "k%08d", i), value), uint64(i+1))
		}
		if err == nil {
			err = wb.Flush()
		}
		if err == nil {
			t.Fatalf("round %d: 20 MB written to a removed folder, and no write failed", round)
		}
		wb.Cancel()
		// Closing retries the failed flush for good (see closeWithin).
		go bdb.Close()
	}
}
