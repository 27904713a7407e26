package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
