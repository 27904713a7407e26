package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/replaycheck/replaycheck/examples"
)

// The debugger opens a damaged trace on what loading it warned of: the
// warning was printed on stderr, then covered by the screen at once, so
// the user browsed a cut run without knowing it.
func TestDebugOpensOnTheTracesWarnings(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := filepath.Join(dir, "cut.lz4")
	if code := app.Run([]string{"sim", "paxos", "--seed", "1", "--time", "60s", "-o", trace}); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trace, data[:len(data)*2/5], 0o644); err != nil {
		t.Fatal(err)
	}
	screen := &shotScreen{SimulationScreen: tcell.NewSimulationScreen("UTF-8")}
	app.Screen = screen
	done := make(chan int, 1)
	go func() { done <- app.Run([]string{"debug", trace}) }()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(screen.text(), "warning(s) about this trace") {
		select {
		case code := <-done:
			t.Fatalf("debug exited %d before drawing: %s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the debugger never showed the warnings:\n%s\nstderr: %s", screen.text(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(screen.text(), "warning: ") || !strings.Contains(errb.String(), "warning: ") {
		t.Fatalf("the popup or stderr lacks the warning:\n%s\nstderr: %s", screen.text(), errb.String())
	}
	screen.InjectKey(tcell.KeyEscape, 0, 0)
	screen.InjectKey(tcell.KeyRune, 'q', 0)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("debug exited %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("q did not quit the debugger")
	}
}
