package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
)

// TestSpecialFilesAreRefusedNotRead: a named pipe blocks an open until a
// writer comes and a device never ends; wherever a verb reads a file (a
// trace to index or shrink, a schedule, a result file, a database's own
// files), such a path is refused at once, or a database file of the kind
// counts as absent. A link at the build lock is refused, and the file it
// points to is left alone.
func TestSpecialFilesAreRefusedNotRead(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	fifo := filepath.Join(dir, "ff.lz4")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	run := func(args ...string) (int, string) {
		t.Helper()
		var out, errb bytes.Buffer
		app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
		done := make(chan int, 1)
		go func() { done <- app.Run(args) }()
		select {
		case code := <-done:
			return code, errb.String()
		case <-time.After(60 * time.Second):
			t.Fatalf("%v did not return", args)
			return 0, ""
		}
	}
	if code, errs := run("sim", "paxos", "--time", "1s", "-o", "p.lz4"); code != 0 {
		t.Fatal(errs)
	}
	for _, args := range [][]string{
		{"index", "ff.lz4"},
		{"shrink", "ff.lz4", "builtin:paxos", "-o", "s.lz4"},
		{"sim", "paxos", "--schedule", "ff.lz4", "-o", "y.lz4"},
		{"results", "merge", "ff.lz4"},
		{"results", "merge", "/dev/zero"},
	} {
		code, errs := run(args...)
		if code != ExitBadInput || !strings.Contains(errs, "not a") {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}

	// The database's own small files: a pipe or a device is as if absent.
	if code, errs := run("index", "p.lz4"); code != 0 {
		t.Fatal(errs)
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "p.lz4.db", "part-*"))
	if len(parts) == 0 {
		t.Fatal("no part in the database")
	}
	verified := filepath.Join(parts[0], "VERIFIED")
	os.Remove(verified)
	if err := syscall.Mkfifo(verified, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, errs := run("state", "p.lz4", "--at", "5", "--node", "n1"); code != 0 {
		t.Errorf("state with a pipe for VERIFIED: exit %d, %q", code, errs)
	}

	// A link at the build lock: refused, the linked file intact.
	keep := filepath.Join(dir, "keep.txt")
	os.WriteFile(keep, []byte("precious"), 0o644)
	if err := os.Symlink(keep, filepath.Join(dir, ".p.lz4.db.lock")); err != nil {
		t.Fatal(err)
	}
	if code, errs := run("index", "p.lz4", "--force"); code == 0 || !strings.Contains(errs, "not a regular file") {
		t.Errorf("index with a link at its lock: exit %d, %q", code, errs)
	}
	if b, _ := os.ReadFile(keep); string(b) != "precious" {
		t.Fatalf("the lock's link target now holds %q", b)
	}
}
