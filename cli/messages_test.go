package cli

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
)

type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestOutputThatCannotBeWrittenFails: a verb whose standard output fails
// exits 2 saying so (it exited 0 with the output lost); error lines show
// control characters from the input escaped and are cut to a bounded
// length.
func TestOutputThatCannotBeWrittenFails(t *testing.T) {
	dir := t.TempDir()
	var errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &bytes.Buffer{}, Stderr: &errb}
	trace := filepath.Join(dir, "p.lz4")
	if code := app.Run([]string{"sim", "paxos", "--seed", "1", "--steps", "50", "-o", trace}); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	app.Stdout = fullWriter{}
	if code := app.Run([]string{"events", trace}); code != ExitBadInput || !strings.Contains(errb.String(), "write standard output: no space left") {
		t.Fatalf("events to a full device: exit %d, stderr %q", code, errb.String())
	}
	// A verb whose own error is the lost write says it once (export and
	// schedule said it twice: a hostile pass).
	for _, args := range [][]string{{"export", trace, "--format", "jsonl", "-o", "-"}, {"schedule", trace}} {
		errb.Reset()
		if code := app.Run(args); code != ExitBadInput || strings.Count(errb.String(), "no space left") != 1 {
			t.Fatalf("%v to a full device: exit %d, stderr %q", args, code, errb.String())
		}
	}
	// A verb that exits 1 for a finding still says its report was lost
	// (check of a violating run exited 1 with nothing on stderr).
	bad := filepath.Join(dir, "bad.lz4")
	app.Stdout = &bytes.Buffer{}
	errb.Reset()
	if code := app.Run([]string{"sim", "paxos", "--bug", "no-persist", "--seed", "1", "-o", bad}); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	app.Stdout = fullWriter{}
	if code := app.Run([]string{"check", bad, "../scripts/paxos.star"}); code != ExitViolations || !strings.Contains(errb.String(), "replay check: write standard output: no space left") {
		t.Fatalf("check of a violation to a full device: exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	app.Stdout = &bytes.Buffer{}
	field := "\x1b[31mRED" + strings.Repeat("x", 10000)
	if code := app.Run([]string{"why", trace, "--at", "5", "--node", "n1", "--field", field}); code != ExitBadInput {
		t.Fatalf("why: exit %d", code)
	}
	line := errb.String()
	if strings.Contains(line, "\x1b") || !strings.Contains(line, `\x1b[31mRED`) || len(line) > maxMessage+100 || strings.Count(line, "\n") != 1 {
		t.Fatalf("error line not made safe (%d bytes): %q", len(line), line[:min(len(line), 200)])
	}
}
