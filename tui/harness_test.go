package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/scripts"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/statedb"
	"github.com/replaycheck/replaycheck/system"
)

var registry = system.NewRegistry(paxos.System)

// demoFiles writes the paxos demo run (`replay demo`: latest-response,
// seed 21; GlobalConsistency breaks at step #269) and its script into a
// temporary directory.
func demoFiles(t testing.TB) (trace, script string) {
	t.Helper()
	dir := t.TempDir()
	trace = simulate(t, filepath.Join(dir, "replay-demo.lz4"), "latest-response", 21, 0)
	src, err := scripts.FS.ReadFile("paxos.star")
	if err != nil {
		t.Fatal(err)
	}
	script = filepath.Join(dir, "replay-demo.star")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return trace, script
}

// simulate records a paxos run (virtual time d, or the default if 0).
func simulate(t testing.TB, path, bug string, seed uint64, d time.Duration) string {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug = seed, bug
	cfg = cfg.WithDefaults(paxos.System)
	if d > 0 {
		cfg.Time = d
	}
	return simtest.Record(t, paxos.System, cfg, path)
}

// openDemo opens a model on the demo run at step at.
func openDemo(t testing.TB, at int) (*Model, string) {
	t.Helper()
	trace, script := demoFiles(t)
	db, _, err := statedb.Ensure([]string{trace}, "", statedb.Options{Registry: registry, Preds: script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	m, err := New(Config{DB: db, Traces: []string{trace}, Registry: registry, Preds: script, At: at})
	if err != nil {
		t.Fatal(err)
	}
	return m, script
}

// ui runs a View on a simulation screen.
type ui struct {
	t      *testing.T
	screen tcell.SimulationScreen
	view   *View
	done   chan error
}

func startUI(t *testing.T, m *Model) *ui {
	t.Helper()
	s := tcell.NewSimulationScreen("UTF-8")
	v := NewView(m, s)
	s.SetSize(180, 50)
	u := &ui{t: t, screen: s, view: v, done: make(chan error, 1)}
	stopped := make(chan struct{})
	go func() {
		err := v.Run()
		close(stopped)
		u.done <- err
	}()
	u.waitFor("Timeline")
	t.Cleanup(func() {
		v.app.Stop()
		<-stopped
	})
	return u
}

// press sends one key and waits until the screen was drawn after it.
func (u *ui) press(key tcell.Key, r rune, mod tcell.ModMask) {
	u.t.Helper()
	n := u.view.handled.Load() + 1
	u.screen.InjectKey(key, r, mod)
	deadline := time.Now().Add(10 * time.Second)
	for u.view.drawn.Load() < n {
		if time.Now().After(deadline) {
			u.t.Fatalf("key %v %q was not handled:\n%s", key, r, u.text())
		}
		time.Sleep(time.Millisecond)
	}
}

// keys types runes, then waits for the draw after the last one.
func (u *ui) keys(s string) {
	u.t.Helper()
	for _, r := range s {
		switch r {
		case '\n':
			u.press(tcell.KeyEnter, 0, 0)
		case '\t':
			u.press(tcell.KeyTab, 0, 0)
		default:
			u.press(tcell.KeyRune, r, 0)
		}
	}
}

// contents copies the screen's cells on the UI goroutine (draws write
// them there).
func (u *ui) contents() ([]tcell.SimCell, int, int) {
	var cells []tcell.SimCell
	var w, h int
	// Through queue, which gives up once the session ended (a key that
	// quit it), where QueueUpdate would wait for good.
	if !u.view.queue(func() {
		c, cw, ch := u.screen.GetContents()
		cells, w, h = make([]tcell.SimCell, len(c)), cw, ch
		for i, x := range c {
			cells[i] = tcell.SimCell{Style: x.Style, Runes: append([]rune(nil), x.Runes...)}
		}
	}, false) {
		u.t.Fatal("the debugger ended")
	}
	return cells, w, h
}

// text is the screen's content, one line per row.
func (u *ui) text() string {
	cells, w, h := u.contents()
	var b strings.Builder
	for y := range h {
		for x := range w {
			c := cells[y*w+x]
			if len(c.Runes) == 0 {
				b.WriteByte(' ')
			} else {
				b.WriteString(string(c.Runes))
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// row returns the first screen row containing every s ("" if none).
func (u *ui) row(s ...string) string {
next:
	for _, l := range strings.Split(u.text(), "\n") {
		for _, x := range s {
			if !strings.Contains(l, x) {
				continue next
			}
		}
		return l
	}
	return ""
}

// styleOf is the style of the first cell of the first occurrence of s.
func (u *ui) styleOf(s string) (tcell.Style, bool) {
	cells, w, h := u.contents()
	for y := range h {
		var line []rune
		for x := range w {
			c := cells[y*w+x]
			if len(c.Runes) == 0 {
				line = append(line, ' ')
			} else {
				line = append(line, c.Runes[0])
			}
		}
		if i := strings.Index(string(line), s); i >= 0 {
			x := len([]rune(string(line)[:i]))
			return cells[y*w+x].Style, true
		}
	}
	return tcell.StyleDefault, false
}

// waitFor waits until the screen shows s (tasks run in the background).
func (u *ui) waitFor(s string) {
	u.t.Helper()
	u.waitWithin(s, 20*time.Second)
}

// waitWithin is waitFor for a screen that comes at the end of long
// background work (a whole index build and its compaction), which under
// the race detector on a loaded 2-core machine took over 20 s.
func (u *ui) waitWithin(s string, limit time.Duration) {
	u.t.Helper()
	deadline := time.Now().Add(limit)
	for !strings.Contains(u.text(), s) {
		if time.Now().After(deadline) {
			u.t.Fatalf("the screen never showed %q:\n%s", s, u.text())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// renders is how many panel renders the view has made (read on the UI
// goroutine).
func (u *ui) renders() int {
	var n int
	if !u.view.queue(func() { n = u.view.renders }, false) {
		u.t.Fatal("the debugger ended")
	}
	return n
}
