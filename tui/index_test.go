package tui

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/replaycheck/replaycheck/statedb"
)

// replay debug opens a trace without a database at once and indexes it
// in the background: the status line says how far indexing got, the
// steps indexed are browsable, a step not indexed yet says so, --at is
// reached once indexed, and the complete database is swapped in at the
// end (and kept for the next session).
func TestDebuggerBrowsesWhileIndexing(t *testing.T) {
	trace := simulate(t, filepath.Join(t.TempDir(), "long.lz4"), "", 3, 20*time.Second)
	release := make(chan struct{})
	var once sync.Once
	bg, err := statedb.StartBuild([]string{trace}, "", statedb.Options{Registry: registry, PublishEvery: time.Nanosecond,
		// Indexing pauses the first time it publishes, until the test
		// has browsed what is indexed.
		Progress: func(_ string, done, total int) {
			if done < total {
				once.Do(func() { <-release })
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	total := bg.DB.Meta().Steps
	if total < 2000 {
		t.Fatalf("the trace is too short for the test: %d steps", total)
	}
	m, err := New(Config{Building: bg, Traces: []string{trace}, Registry: registry, At: total - 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	u := startUI(t, m)
	u.waitFor(fmt.Sprintf("[indexing 256 of %d steps", total))

	u.press(tcell.KeyEnd, 0, 0)
	u.waitFor(fmt.Sprintf("#255/%d", total-1))
	u.keys("g1000\n")
	u.waitFor(fmt.Sprintf("step #1000 is not indexed yet (#0..#255 of #%d so far)", total-1))
	u.press(tcell.KeyHome, 0, 0)
	u.waitFor(fmt.Sprintf("#0/%d", total-1))

	close(release)
	u.waitFor(fmt.Sprintf("indexed %d steps in", total))
	// --at was beyond what was indexed at the start: the cursor goes
	// there once it is.
	u.waitFor(fmt.Sprintf("#%d/%d", total-1, total-1))

	db, err := statedb.Open(statedb.PathFor([]string{trace}))
	if err != nil {
		t.Fatalf("the complete database was not kept: %v", err)
	}
	defer db.Close()
	if db.Len() != total {
		t.Fatalf("the kept database has %d steps of %d", db.Len(), total)
	}
}
