package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// replayLooper's n2 spins in its third timer when replayed, though the
// simulated run returned.
type replayLooper struct {
	Ticks int
	loop  *atomic.Bool `replay:"-"`
	quit  *atomic.Bool `replay:"-"`
}

func (r *replayLooper) Init(env node.Env)                       { env.After(time.Millisecond, "tick") }
func (r *replayLooper) Receive(node.Env, node.ID, node.Message) {}
func (r *replayLooper) Timer(env node.Env, _ node.Timer) {
	r.Ticks++
	for env.Self() == "n2" && r.Ticks == 3 && r.loop.Load() && !r.quit.Load() {
	}
	env.After(time.Millisecond, "tick")
}

// The debugger's background index stuck in a handler that does not
// return when replayed says so on the status line, and q ends the
// session: q blanked the screen and the process spun on, deaf to
// SIGINT, SIGTERM and SIGHUP (a new user's Dynamo store), since closing
// waited for the build.
func TestDebugQuitsWhileIndexingIsStuckInAHandler(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 10 s stall warning")
	}
	loop, quit := new(atomic.Bool), new(atomic.Bool)
	t.Cleanup(func() { quit.Store(true) }) // lets the left-behind handler go
	sys := &system.System{Name: "looper", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &replayLooper{loop: loop, quit: quit} },
		Sim: system.SimDefaults{Nodes: 2, Time: 50 * time.Millisecond}}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: system.NewRegistry(sys), Stdout: &out, Stderr: &errb}
	trace := filepath.Join(dir, "t.lz4")
	if code := app.Run([]string{"sim", "looper", "--seed", "1", "-o", trace}); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	loop.Store(true)
	screen, done := debugUntil(t, app, &errb, []string{trace}, "indexing stuck at step #", 40*time.Second)
	if !strings.Contains(screen.text(), "node n2's handler, in its timer event") {
		t.Fatalf("the status line does not name the handler:\n%s", screen.text())
	}
	quitDebugger(t, screen, done, &errb)
	// Nothing half-built is kept, and the next session can build.
	if _, err := os.Stat(trace + ".db"); err == nil {
		t.Fatal("a database was kept")
	}
}

// A predicates script whose load is stuck in one Starlark step left
// `replay debug` of a trace without a database on a blank terminal for
// good, deaf to Ctrl-C (a hostile pass): the load runs before the screen
// is up, and is given up on at the stuck bound with one line, exit 2.
func TestDebugGivesUpOnAStuckLoadBeforeTheScreen(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 20 s stuck bound")
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := filepath.Join(dir, "t.lz4")
	if code := app.Run([]string{"sim", "paxos", "--seed", "1", "-o", trace}); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	// About 30 s in one set() call: past the bound, and over soon after.
	script := filepath.Join(dir, "stuck.star")
	if err := os.WriteFile(script, []byte("S = len(set([i << 32 for i in range(40000)]))\nsafety(\"P\", lambda: True)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	screen := &shotScreen{SimulationScreen: tcell.NewSimulationScreen("UTF-8")}
	app.Screen = screen
	done := make(chan int, 1)
	go func() { done <- app.Run([]string{"debug", trace, "--preds", script}) }()
	select {
	case code := <-done:
		if code != ExitBadInput || !strings.Contains(errb.String(), "stuck.star did not return") || !strings.Contains(errb.String(), "the debugger did not open") {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("debug still loading its script after 2 minutes")
	}
}
