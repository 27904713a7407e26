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
	screen, done := debugUntil(t, app, &errb, []string{trace}, "warning(s) about this trace", 60*time.Second)
	if !strings.Contains(screen.text(), "warning: ") || !strings.Contains(errb.String(), "warning: ") {
		t.Fatalf("the popup or stderr lacks the warning:\n%s\nstderr: %s", screen.text(), errb.String())
	}
	screen.InjectKey(tcell.KeyEscape, 0, 0)
	quitDebugger(t, screen, done, &errb)
}
