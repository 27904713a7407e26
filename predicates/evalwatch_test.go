package predicates_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/scripts"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/stall"
	"github.com/replaycheck/replaycheck/system"
)

// A checker bound to a watched replay shows the watch each load and
// evaluation while it runs, and nothing between them: one evaluation
// left begun would have the watch give up on a healthy check once its
// bound passed. Every bundled script, on its system (which uses derived
// values, ordered indexes, histories, aux and alarm functions,
// quantifiers that settle), and a watcher's expressions.
func TestEvaluationsAreWatchedOnlyWhileTheyRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, scripts.FS); err != nil {
		t.Fatal(err)
	}
	bySystem := map[string][]string{"raftkv": {"raft.star", "raftkv-linearizable.star"}}
	for _, sys := range examples.All() {
		names := bySystem[sys.Name]
		if names == nil {
			names = []string{sys.Name + ".star"}
		}
		for _, name := range names {
			if _, err := fs.Stat(scripts.FS, name); err != nil {
				t.Fatalf("%s: no bundled script %s", sys.Name, name)
			}
			t.Run(name, func(t *testing.T) {
				w := stall.NewWatch()
				r := watchedReplay(t, sys, w)
				c, err := predicates.Load(filepath.Join(dir, name), r, predicates.Options{To: -1})
				if err != nil {
					t.Fatal(err)
				}
				idle := func(when string) {
					if st, ok := w.Running(time.Now()); ok {
						t.Fatalf("%s: the watch still sees a call running: %+v", when, st)
					}
				}
				idle("after the load")
				for r.Pos()+1 < r.Len() {
					if err := r.Next(); err != nil {
						t.Fatal(err)
					}
					if err := c.Observe(); err != nil {
						t.Fatal(err)
					}
					idle("after step #" + strconv.Itoa(r.Pos()))
				}
				if rep := c.Finish(); rep.Err() != nil {
					t.Fatalf("the script did not evaluate cleanly: %v", rep.Err())
				}
				wr := watchedReplay(t, sys, w)
				watcher, err := predicates.NewWatcher(wr, filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				for wr.Pos()+1 < wr.Len() && wr.Pos() < 200 {
					if err := wr.Next(); err != nil {
						t.Fatal(err)
					}
				}
				watcher.Sync()
				for _, d := range c.DerivedValues() {
					watcher.Eval(d.Name()) // an accumulator fails: what matters is that it ends
					idle("after the watch " + d.Name())
				}
				if _, err := watcher.Eval("len([n for n in nodes()])"); err != nil {
					t.Fatal(err)
				}
				idle("after the watches")
			})
		}
	}
}

// watchedReplay simulates sys with its defaults and returns a replayer of
// the run whose handler calls w watches (nil: none).
func watchedReplay(t *testing.T, sys *system.System, w *stall.Watch) *replay.Replayer {
	t.Helper()
	var buf bytes.Buffer
	cfg := sim.DefaultConfig()
	if _, err := sim.Run(sys, cfg.WithDefaults(sys), &buf); err != nil {
		t.Fatal(err)
	}
	tr, err := replay.FromBytes(buf.Bytes(), sys.Name+".lz4")
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(tr, system.NewRegistry(sys), replay.Options{Watch: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}
