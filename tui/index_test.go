package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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
	// Indexing pauses the first time it publishes, until the test has
	// browsed what is indexed.
	trace, bg, release := pausedBuild(t)
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
	// A field's history ends where indexing got to, and says so: it
	// read as the field's whole history.
	u.keys("g100\n")
	u.waitFor(fmt.Sprintf("#100/%d", total-1))
	u.view.queue(func() {
		for _, r := range m.stateRows() {
			if r.leaf {
				m.stateSel, m.focus = r.key, PanelState
				m.History()
				return
			}
		}
	}, true)
	u.waitFor("of #0..#255 indexed so far")
	u.press(tcell.KeyEscape, 0, 0)

	close(release)
	u.waitWithin(fmt.Sprintf("indexed %d steps in", total), 3*time.Minute)
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

// While the predicates given with --preds are checked with the index,
// the Violations panel says so: it said "no predicates checked (start
// with --preds FILE)", as if --preds had not been given (a new user).
func TestViolationsPanelWhileIndexingWithPreds(t *testing.T) {
	script, err := filepath.Abs("../scripts/paxos.star")
	if err != nil {
		t.Fatal(err)
	}
	trace, bg, release := pausedBuildOf(t, script)
	m, err := New(Config{Building: bg, Traces: []string{trace}, Registry: registry, Preds: script, At: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	var once sync.Once
	resume := func() { once.Do(func() { close(release) }) }
	t.Cleanup(resume) // before Close, which waits for the build
	var text []string
	for _, l := range m.Violations(200, 10) {
		text = append(text, l.String())
	}
	if got := strings.Join(text, "\n"); !strings.Contains(got, "paxos.star: checked while indexing, the results come when it ends") {
		t.Fatalf("the Violations panel while indexing with --preds:\n%s", got)
	}
}

// Indexing that ends early (a replay that diverges, or here a build told
// to stop) leaves the steps it indexed browsable, does not claim the
// others, says where and why it stopped, and keeps nothing on disk.
func TestIndexingThatStopsLeavesWhatItIndexed(t *testing.T) {
	dir := t.TempDir()
	trace := simulate(t, filepath.Join(dir, "t.lz4"), "", 3, 40*time.Second)
	var published atomic.Int64
	bg, err := statedb.StartBuild([]string{trace}, "", statedb.Options{Registry: registry, PublishEvery: time.Nanosecond,
		Progress: func(_ string, done, _ int) { published.Store(int64(done)) },
		// The replay polls this every 64 steps.
		Stop: func() bool { return published.Load() >= 2048 }})
	if err != nil {
		t.Fatal(err)
	}
	total := bg.DB.Meta().Steps
	if total < 8192 {
		t.Fatalf("the trace is too short for the test: %d steps", total)
	}
	m, err := New(Config{Building: bg, Traces: []string{trace}, Registry: registry, At: -1})
	if err != nil {
		t.Fatal(err)
	}
	u := startUI(t, m)
	u.waitFor("indexing stopped at #")
	stopped := bg.DB.Len()
	if stopped < 2048 || stopped >= total || stopped%64 != 1 {
		// The replay stops right after the step it polled at (#2304 for
		// instance), and the writer had written every step before it.
		t.Fatalf("indexing stopped with %d of %d steps readable", stopped, total)
	}
	u.waitFor(fmt.Sprintf("indexing stopped at #%d of %d: stopped before the end", stopped, total))
	u.press(tcell.KeyEnd, 0, 0)
	u.waitFor(fmt.Sprintf("#%d/%d", stopped-1, total-1))
	u.keys(fmt.Sprintf("g%d\n", stopped))
	u.waitFor(fmt.Sprintf("step #%d is not indexed yet", stopped))
	m.Close()
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("indexing that stopped left files beside the trace: %v", names)
	}
}

// Quitting while the database is built stops the build and returns: the
// build's progress report to the screen, made after the screen had
// stopped, waited forever for the event loop, and the build (and the
// debugger's exit) waited for it.
func TestQuittingWhileIndexingReturns(t *testing.T) {
	// Indexing pauses at its first report until the screen is gone.
	trace, bg, release := pausedBuild(t)
	m, err := New(Config{Building: bg, Traces: []string{trace}, Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	u := startUI(t, m)
	u.waitFor("[indexing 256 of ")
	u.screen.InjectKey(tcell.KeyRune, 'q', 0)
	select {
	case <-u.done:
	case <-time.After(30 * time.Second):
		t.Fatal("q did not end the debugger")
	}
	// The screen takes a report at most every 100 ms: the next one is
	// taken, by a screen that is gone.
	time.Sleep(200 * time.Millisecond)
	close(release)
	closed := make(chan struct{})
	go func() { m.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(60 * time.Second):
		t.Fatal("closing the debugger after q waits forever for the build")
	}
	if _, err := os.Stat(statedb.PathFor([]string{trace})); !os.IsNotExist(err) {
		t.Fatalf("a build stopped by quitting left a database: %v", err)
	}
}

// pausedBuild starts indexing a paxos run of 20 s in the background; the
// build pauses the first time it publishes until release is closed.
func pausedBuild(t *testing.T) (trace string, bg *statedb.Building, release chan struct{}) {
	return pausedBuildOf(t, "")
}

// pausedBuildOf is pausedBuild checking script with the index.
func pausedBuildOf(t *testing.T, script string) (trace string, bg *statedb.Building, release chan struct{}) {
	t.Helper()
	trace = simulate(t, filepath.Join(t.TempDir(), "long.lz4"), "", 3, 20*time.Second)
	release = make(chan struct{})
	var once sync.Once
	bg, err := statedb.StartBuild([]string{trace}, "", statedb.Options{Registry: registry, Preds: script, PublishEvery: time.Nanosecond,
		Progress: func(_ string, done, total int) {
			if done < total {
				once.Do(func() { <-release })
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	return trace, bg, release
}

// v while the predicates are checked with the index goes to the
// violations found so far: a new user waited 75 s for v on a trace whose
// first alarm a check found in a second. The full list still comes at
// the end.
func TestNextViolationWhileIndexingGoesToThoseFoundSoFar(t *testing.T) {
	script, err := filepath.Abs("../scripts/paxos.star")
	if err != nil {
		t.Fatal(err)
	}
	// GlobalConsistency breaks at #269 (the demo run, longer).
	trace := simulate(t, filepath.Join(t.TempDir(), "demo.lz4"), "latest-response", 21, 20*time.Second)
	release := make(chan struct{})
	var once sync.Once
	bg, err := statedb.StartBuild([]string{trace}, "", statedb.Options{Registry: registry, Preds: script, PublishEvery: time.Nanosecond,
		Progress: func(_ string, done, total int) {
			if done >= 1024 && done < total {
				once.Do(func() { <-release })
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Building: bg, Traces: []string{trace}, Registry: registry, Preds: script, At: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	var resumed sync.Once
	resume := func() { resumed.Do(func() { close(release) }) }
	t.Cleanup(resume) // before Close, which waits for the build
	u := startUI(t, m)
	for deadline := time.Now().Add(20 * time.Second); bg.DB.Len() < 1024; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("indexing did not reach #1024: %d steps", bg.DB.Len())
		}
	}
	u.press(tcell.KeyRune, 'v', 0)
	u.waitFor("GlobalConsistency (safety) violated at #269")
	u.waitFor("found so far")
	if m.pos != 269 {
		t.Fatalf("v went to #%d, want #269", m.pos)
	}
	resume()
	u.waitFor("indexed ")
}
