package predicates_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/predicates/internal/raftkv"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// TestWatchShowsDerivedValues: a watch on a derived value of the script
// (raft.star's leaders, as a new user watched it: leaders() and leaders)
// shows the value the checker has at that step, wherever the cursor
// seeks, forward or back. It showed None: the watcher never computed
// derived values.
func TestWatchShowsDerivedValues(t *testing.T) {
	tr := raftRun(t, "n1 term 1", "n1 role leader", "n2 term 1", "n3 term 1",
		"n1 role follower", "n2 term 2", "n2 role candidate", "n2 role leader", "n1 term 2",
		"n3 term 3", "n3 role leader", "n2 role follower")
	reg := system.NewRegistry(raftkv.System)
	r1, _ := replay.New(tr, reg, replay.Options{})
	c, err := predicates.Load("../scripts/raft.star", r1, predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int]string{"leaders": {}, "leadership": {}}
	for r1.Next() == nil {
		if err := c.Observe(); err != nil {
			t.Fatal(err)
		}
		for _, d := range c.DerivedValues() {
			want[d.Name()][r1.Pos()] = d.Value().String()
		}
	}
	r2, _ := replay.New(tr, reg, replay.Options{})
	cur, _ := replay.NewCursor(r2, 4)
	w, err := predicates.NewWatcher(r2, "../scripts/raft.star")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	last := tr.Len() - 1
	for _, step := range []int{last, 0, 5, 4, 6, last - 1, 2, last, 3} {
		if err := cur.Seek(step); err != nil {
			t.Fatal(err)
		}
		w.Sync()
		for _, name := range []string{"leaders", "leadership"} {
			for _, expr := range []string{name + "()", name, name + " "} {
				got, err := w.Eval(expr)
				if err != nil {
					t.Fatalf("at #%d %s: %v", step, expr, err)
				}
				if got != want[name][step] {
					t.Errorf("at #%d the watch %q says %s, the checker %s", step, expr, got, want[name][step])
				}
				seen[got] = true
			}
		}
	}
	if len(seen) < 3 {
		t.Errorf("the watched values took %d distinct values: the run shows no change of leaders", len(seen))
	}
	if !w.Derived("leaders") || !w.Derived(" leaders ") || w.Derived("leaders()") || w.Derived("Node") || w.Derived("nope") {
		t.Error("Watcher.Derived does not tell a derived value's name alone")
	}
}

// TestWatchDerivedValueEdges: in a watch, a derived value that reads
// another is computed at the cursor too; it keeps no history (the current
// value alone, as rows) and since_change is 0; only a watch that is the
// derived value itself shows its value; one whose function fails, or
// reads itself, is an error that names it, and the next watch is not
// affected.
func TestWatchDerivedValueEdges(t *testing.T) {
	tr := paxosTrace(t, 21, "latest-response")
	dir := t.TempDir()
	script := filepath.Join(dir, "edges.star")
	src := `Agent = table("paxos.Agent")
count = derived("count", lambda: len(Agent))
double = derived("double", lambda: count() * 2, keep = 5)
def fails():
    return {}["missing"]
broken = derived("broken", fails)
selfish = derived("selfish", lambda: selfish())
safety("ok", lambda: True)
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r, _ := replay.New(tr, system.NewRegistry(paxos.System), replay.Options{})
	cur, _ := replay.NewCursor(r, 100)
	w, err := predicates.NewWatcher(r, script)
	if err != nil {
		t.Fatal(err)
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := w.Eval(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v
	}
	for _, step := range []int{300, 2} {
		if err := cur.Seek(step); err != nil {
			t.Fatal(err)
		}
		w.Sync()
		n := eval("len(Agent)")
		if got, want := eval("double()"), eval("2 * len(Agent)"); got != want {
			t.Errorf("at #%d double() = %s, want %s (len(Agent) = %s)", step, got, want, n)
		}
		if got, want := eval("double.history()"), "["+eval("double()")+"]"; got != want {
			t.Errorf("at #%d double.history() = %s, want %s", step, got, want)
		}
		if got := eval("since_change(double)"); got != "0" {
			t.Errorf("at #%d since_change(double) = %s, want 0", step, got)
		}
		if got := eval("[count, double.name]"); got != `[derived("count"), "double"]` {
			t.Errorf("inside a value a derived value is itself: %s", got)
		}
		for expr, want := range map[string]string{
			"broken()": `derived("broken") at this step: ` + script + `:5:`,
			"broken":   `derived("broken") at this step: ` + script + `:5:`,
			"selfish":  `derived("selfish") reads itself`,
		} {
			if _, err := w.Eval(expr); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("at #%d %s: error %v, want one saying %q", step, expr, err, want)
			}
		}
		if got := eval("count()"); got != n {
			t.Errorf("after failed watches count() = %s, want %s", got, n)
		}
	}
}

// TestWatchOfDownNodesFollowsTheCursor: down_nodes() in a watch is the
// value at the cursor wherever it seeks, as the checker has it there (the
// value kept between steps must not outlive a seek).
func TestWatchOfDownNodesFollowsTheCursor(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Churn, cfg.Steps, cfg.Time = 5, 0.5, 3000, time.Hour
	tr := paxosTraceOf(t, cfg)
	reg := system.NewRegistry(paxos.System)
	r1, _ := replay.New(tr, reg, replay.Options{})
	c, err := predicates.LoadSource("d.star", []byte("d = derived(\"d\", lambda: (down_nodes(), [crashes(n) for n in nodes()]))\nsafety(\"P\", lambda: True)\n"), r1, predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{}
	for r1.Next() == nil {
		if err := c.Observe(); err != nil {
			t.Fatal(err)
		}
		want[r1.Pos()] = c.DerivedValues()[0].Value().String()
	}
	r2, _ := replay.New(tr, reg, replay.Options{})
	cur, _ := replay.NewCursor(r2, 4)
	w, err := predicates.NewWatcher(r2, "")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range 40 {
		step := (i * 7919) % tr.Len()
		if err := cur.Seek(step); err != nil {
			t.Fatal(err)
		}
		w.Sync()
		got, err := w.Eval("(down_nodes(), [crashes(n) for n in nodes()])")
		if err != nil {
			t.Fatal(err)
		}
		if got != want[step] {
			t.Fatalf("at #%d the watch says %s, the checker %s", step, got, want[step])
		}
		seen[got] = true
	}
	if len(seen) < 5 {
		t.Fatalf("%d distinct values at 40 steps: the run shows too few crashes", len(seen))
	}
}
