package statedb

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestOpenNeverMixesTwoDatabases: a build that finishes renames its
// database into place while readers open the folder. Open reads the
// description and then each part by path, so a swap in between paired
// one database's description with another's parts, and reads failed
// ("Key not found") or, worse, read the other database. Here two
// databases of one trace, one of a single part and one of many, are
// swapped back and forth as a finishing build swaps (swapIn) as fast as
// it goes: every Open either fails or gives a database whose every step
// and state reads.
func TestOpenNeverMixesTwoDatabases(t *testing.T) {
	trace, _ := demo(t)
	dir := t.TempDir()
	one, many := filepath.Join(dir, "one.db"), filepath.Join(dir, "many.db")
	buildAt(t, trace, one, 0).Close()
	buildAt(t, trace, many, 64<<10).Close()
	if err := exchangeDirs(one, many); errors.Is(err, errNoExchange) {
		t.Skip("this system cannot exchange two directories' names at once; swapIn renames twice")
	} else if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "t.db")
	if err := os.Rename(one, target); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	swapping := make(chan struct{})
	go func() {
		defer close(swapping)
		for !stop.Load() {
			if err := exchangeDirs(target, many); err != nil {
				t.Errorf("swap: %v", err)
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	defer func() { stop.Store(true); <-swapping }()
	opened := 0
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		db, err := Open(target)
		if err != nil {
			continue
		}
		opened++
		for s := 0; s < db.Len(); s += 97 {
			if _, err := db.Step(s); err != nil {
				t.Fatalf("an Open that succeeded (%d parts) cannot read step #%d: %v", len(db.parts.list), s, err)
			}
			if _, err := db.State("n1", s); err != nil && !errors.Is(err, ErrClosed) {
				t.Fatalf("an Open that succeeded (%d parts) cannot read the state at #%d: %v", len(db.parts.list), s, err)
			}
		}
		db.Close()
	}
	if opened == 0 {
		t.Fatal("no Open succeeded while the databases were swapped")
	}
	t.Logf("%d opens", opened)
}
