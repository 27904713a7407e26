package tui

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples/lockserver"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/statedb"
	"github.com/replaycheck/replaycheck/system"
)

// openDeadlock opens the lock service's deadlocked run (seed 1) at step
// at, indexed.
func openDeadlock(t *testing.T, at int) *Model {
	t.Helper()
	reg := system.NewRegistry(lockserver.System)
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug = 1, "deadlock"
	cfg = cfg.WithDefaults(lockserver.System)
	trace := simtest.Record(t, lockserver.System, cfg, filepath.Join(t.TempDir(), "ls.lz4"))
	db, _, err := statedb.Ensure([]string{trace}, "", statedb.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	m, err := New(Config{DB: db, Traces: []string{trace}, Registry: reg, At: at})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTasksInStatePanelAndFlow: on a task-heavy trace (the lock service
// deadlocked), the State panel lists each live task of the node and what
// it waits for, and the flow marks task resumes K with what woke them.
func TestTasksInStatePanelAndFlow(t *testing.T) {
	m := openDeadlock(t, 100)
	for m.Node() != node.ID("c1") {
		m.SelectNode(+1)
	}
	u := startUI(t, m)
	text := u.text()
	for _, want := range []string{"@tasks", "worker2: blocked on call server lockserver.Acquire"} {
		if !strings.Contains(text, want) {
			t.Errorf("screen lacks %q:\n%s", want, text)
		}
	}
	// A flow row of a resume: K in its node's column, then the step's line.
	resumeRow := regexp.MustCompile(`K\s+(│\s+)*#\d+ L=\d+ \S+ c\d task worker\d \(task \d\) woken by `)
	if !resumeRow.MatchString(text) {
		t.Errorf("no message-flow row marks a task resume with K:\n%s", text)
	}
}

// When a step changed a task's bookkeeping (@tasks) and a field of the
// node, the State panel selects the field: Tab then h showed the history
// of a task's status, not of what the step did to the node (a new
// user's lost update). Stepping through every step: a row selected for
// an earlier step's change is no choice of the user's and moves on.
func TestRevealedChangePrefersTheNodesFields(t *testing.T) {
	m := openDeadlock(t, 0)
	tried := 0
	for step := 0; step < m.db.Len(); step++ {
		if err := m.Seek(step); err != nil {
			t.Fatal(err)
		}
		m.stateTop = 0
		m.State(100, 400) // selects a changed row, as stepping with → does
		var meta, field, selChanged bool
		for _, r := range m.stateRows() {
			if r.changed {
				meta = meta || strings.HasPrefix(r.key, "@")
				field = field || (r.leaf && !strings.HasPrefix(r.key, "@"))
				selChanged = selChanged || r.key == m.stateSel
			}
		}
		if !meta || !field {
			continue
		}
		tried++
		if !selChanged || strings.HasPrefix(m.stateSel, "@") {
			t.Fatalf("#%d %s: selected %q, where a field of the node changed", step, m.Node(), m.stateSel)
		}
	}
	if tried == 0 {
		t.Fatal("no step changed both a task's row and a field: the test checks nothing")
	}
}
