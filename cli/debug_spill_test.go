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
	predict, critical := app.debugSearches(debugFlags{budget: 2, walks: 1, walkSteps: 50}, nil)
	if _, err := predict(context.Background(), []string{trace}, script, 3000, func(string) {}); err != nil {
		t.Fatal(err)
	}
	if n := openSpills(t, tmp); n != 0 {
		t.Fatalf("predict left %d spilled files open", n)
	}
	if _, err := critical(context.Background(), []string{trace}, script, "AllAcknowledged", -1, func(string) {}); err != nil {
		t.Fatal(err)
	}
	if n := openSpills(t, tmp); n != 0 {
		t.Fatalf("critical left %d spilled files open", n)
	}
}

// TestDebugSearchesKeepTheUsersFiles: c and p in the debugger write their
// traces beside the trace under names replay critical and replay predict
// also use; a recovering walk the user kept (written by replay critical
// with another seed) was replaced without a word. A file the debugger
// did not write stays, and the search writes beside it; pressing c again
// reuses its own file.
func TestDebugSearchesKeepTheUsersFiles(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := staleSynTrace(t, app, dir)
	script := writeScript(t, dir, "transport.star")
	theirs := strings.TrimSuffix(trace, ".lz4") + "-recovering.lz4"
	kept, err := os.ReadFile(trace) // any trace that is not the walk
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(theirs, kept, 0o644); err != nil {
		t.Fatal(err)
	}
	_, critical := app.debugSearches(debugFlags{budget: 2, walks: 1, walkSteps: 50}, nil)
	tr, err := critical(context.Background(), []string{trace}, script, "AllAcknowledged", -1, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Recovering == "" {
		t.Fatal("critical wrote no recovering walk: the test proves nothing")
	}
	if now, _ := os.ReadFile(theirs); !bytes.Equal(now, kept) {
		t.Fatalf("the user's %s was replaced", filepath.Base(theirs))
	}
	if tr.Recovering == theirs {
		t.Fatalf("the walk is said to be at the user's file %s", theirs)
	}
	if _, err := os.Stat(tr.Recovering); err != nil {
		t.Fatalf("the walk's file: %v", err)
	}
	again, err := critical(context.Background(), []string{trace}, script, "AllAcknowledged", -1, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if again.Recovering != tr.Recovering {
		t.Fatalf("c again wrote %s, not its own %s", again.Recovering, tr.Recovering)
	}
}

// p and c search the trace the debugger opened: a run copied over its
// file since is refused, not searched (p predicted from another run).
func TestDebugSearchesRefuseATraceReplacedSinceOpened(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := staleSynTrace(t, app, dir)
	script := writeScript(t, dir, "transport.star")
	opened := statTraces([]string{trace})
	predict, critical := app.debugSearches(debugFlags{budget: 2, walks: 1, walkSteps: 50}, opened)
	other := filepath.Join(dir, "other.lz4")
	if code := app.Run([]string{"sim", "transport", "--seed", "7", "-o", other}); code != 0 {
		t.Fatalf("sim: %s", errb.String())
	}
	b, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trace, b, 0o644); err != nil { // cp other.lz4 trace
		t.Fatal(err)
	}
	if _, err := predict(context.Background(), []string{trace}, script, 30, func(string) {}); err == nil || !strings.Contains(err.Error(), "changed on disk since the debugger opened it") {
		t.Fatalf("predict on a replaced trace: %v", err)
	}
	if _, err := critical(context.Background(), []string{trace}, script, "AllAcknowledged", -1, func(string) {}); err == nil || !strings.Contains(err.Error(), "changed on disk") {
		t.Fatalf("critical on a replaced trace: %v", err)
	}
}
