package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
)

// openSpills counts the files of spilled traces under dir that this
// process holds open (they have no names: /proc shows them deleted).
func openSpills(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to count open files: %v", err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)+"replay-") {
			n++
		}
	}
	return n
}

// TestDebugSearchesCloseTheirTraces: p and c in the debugger load the
// trace afresh for each search; spilled, each load holds a temporary file
// as large as the trace, so a search gives it back when it ends rather
// than when the garbage collector gets to it (a few presses of p could
// fill $TMPDIR).
func TestDebugSearchesCloseTheirTraces(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := staleSynTrace(t, app, dir)
	script := writeScript(t, dir, "transport.star")
	t.Setenv("REPLAY_IN_MEMORY", "-1")
	t.Setenv("TMPDIR", tmp)
	predict, critical := app.debugSearches(debugFlags{budget: 2, walks: 1, walkSteps: 50})
	if _, err := predict(context.Background(), []string{trace}, script, 3000, func(string) {}); err != nil {
		t.Fatal(err)
	}
	if n := openSpills(t, tmp); n != 0 {
		t.Fatalf("predict left %d spilled files open", n)
	}
	if _, err := critical(context.Background(), []string{trace}, script, "AllAcknowledged", func(string) {}); err != nil {
		t.Fatal(err)
	}
	if n := openSpills(t, tmp); n != 0 {
		t.Fatalf("critical left %d spilled files open", n)
	}
}
