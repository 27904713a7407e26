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

// A signal ends a debugger session as q does: the terminal is given
// back, the background build is stopped and removed, and the exit is
// 130. It used to kill the process with the terminal left raw (no echo)
// and a half-built database beside the trace (a hostile pass).
func TestDebugEndsCleanlyOnASignal(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates a trace long enough to be indexing when the signal comes")
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := filepath.Join(dir, "big.lz4")
	if code := app.Run([]string{"sim", "paxos", "--seed", "1", "--steps", "300000", "--time", "1h", "-o", trace}); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	d := startDebug(t, app, &errb, trace)
	d.waitFor(180*time.Second, "indexing")
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-d.done:
		d.done <- code // for the session's cleanup, which waits for it
		if code != ExitInterrupted {
			t.Fatalf("debug exited %d after SIGTERM, want %d: %s", code, ExitInterrupted, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("SIGTERM did not end the debugger")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "partial") || strings.HasSuffix(e.Name(), ".lock") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
