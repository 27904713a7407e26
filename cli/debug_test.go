package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/replaycheck/replaycheck/examples"
)

// shotScreen keeps the text of the last frame shown, taken on the UI
// goroutine, so a test can read it while (and after) the debugger runs.
type shotScreen struct {
	tcell.SimulationScreen
	mu   sync.Mutex
	shot string
}

func (s *shotScreen) Show() {
	s.SimulationScreen.Show()
	cells, w, h := s.GetContents()
	var b strings.Builder
	for y := range h {
		for x := range w {
			if r := cells[y*w+x].Runes; len(r) > 0 {
				b.WriteString(string(r))
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	s.mu.Lock()
	s.shot = b.String()
	s.mu.Unlock()
}

func (s *shotScreen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shot
}

// debugUntil runs the debugger on args with a simulated screen until the
// screen shows want (within limit); done gets its exit code.
func debugUntil(t *testing.T, app *App, stderr fmt.Stringer, args []string, want string, limit time.Duration) (screen *shotScreen, done chan int) {
	t.Helper()
	screen = &shotScreen{SimulationScreen: tcell.NewSimulationScreen("UTF-8")}
	app.Screen = screen
	done = make(chan int, 1)
	go func() { done <- app.Run(append([]string{"debug"}, args...)) }()
	deadline := time.Now().Add(limit)
	for !strings.Contains(screen.text(), want) {
		select {
		case code := <-done:
			t.Fatalf("debug exited %d before showing %q: %s", code, want, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the debugger never showed %q:\n%s\nstderr: %s", want, screen.text(), stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return screen, done
}

// quitDebugger presses q and waits for the debugger to end with exit 0.
func quitDebugger(t *testing.T, screen *shotScreen, done chan int, stderr fmt.Stringer) {
	t.Helper()
	screen.InjectKey(tcell.KeyRune, 'q', 0)
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("debug exited %d: %s", code, stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("q did not end the session")
	}
}

func TestDebugVerbOpensAtTheViolation(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := filepath.Join(dir, "replay-demo.lz4")
	if code := app.Run([]string{"demo", "-o", trace}); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errb.String())
	}
	script := filepath.Join(dir, "replay-demo.star")

	screen, done := debugUntil(t, app, &errb, []string{trace, "--preds", script, "--at", "269"}, "▶!#269 ", 30*time.Second)
	for _, want := range []string{"GlobalConsistency", "State of n7 at #269", "Message flow"} {
		if !strings.Contains(screen.text(), want) {
			t.Fatalf("the debugger lacks %q:\n%s", want, screen.text())
		}
	}
	quitDebugger(t, screen, done, &errb)
	// The database stays beside the trace for the next session.
	if _, err := os.Stat(trace + ".db"); err != nil {
		t.Fatal(err)
	}
	// --at outside the trace is bad input.
	if code := app.Run([]string{"debug", trace, "--at", "99999"}); code != ExitBadInput || !strings.Contains(errb.String(), "--at 99999") {
		t.Fatalf("--at 99999: exit %d: %s", code, errb.String())
	}
}
