package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
)

// TestExportAndReportGuardTheirInputs: -o naming the trace or the script
// is refused (it overwrote them), and a check behind a report or an
// export that could not evaluate a predicate ends with exit 4 after
// writing the file (it exited 0).
func TestExportAndReportGuardTheirInputs(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	run := func(args ...string) int {
		out.Reset()
		errb.Reset()
		return app.Run(args)
	}
	trace := filepath.Join(dir, "p.lz4")
	if code := run("sim", "paxos", "--seed", "1", "-o", trace); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	script := filepath.Join(dir, "bad.star")
	if err := os.WriteFile(script, []byte("Agent = table(\"paxos.Agent\")\nsafety(\"Boom\", lambda: forall(Agent, lambda a: 1 // 0 == 0))\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(trace)
	for _, args := range [][]string{
		{"export", trace, "--format", "jsonl", "-o", trace},
		{"export", trace, "--format", "jsonl", "--preds", script, "-o", script},
		{"report", trace, script, "-o", trace},
		{"report", trace, script, "-o", script},
		{"schedule", trace, "-o", trace},
	} {
		if code := run(args...); code != ExitBadInput || !strings.Contains(errb.String(), "is also an input") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
	if after, _ := os.ReadFile(trace); !bytes.Equal(before, after) {
		t.Fatal("the trace was overwritten")
	}
	for _, args := range [][]string{
		{"report", trace, script, "-o", filepath.Join(dir, "r.html")},
		{"export", trace, "--format", "jsonl", "--preds", script, "-o", filepath.Join(dir, "e.jsonl")},
	} {
		code := run(args...)
		if code != ExitPredicateError || !strings.Contains(errb.String(), "could not be evaluated (Boom)") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
		if _, err := os.Stat(args[len(args)-1]); err != nil {
			t.Errorf("%v: the file was not written: %v", args, err)
		}
	}
	if code := run("report", trace, script, "--before", "30000", "-o", filepath.Join(dir, "big.html")); code != ExitBadInput {
		t.Errorf("a 30,000-step window: exit %d", code)
	}
}

// TestOutputsThatAreNoInput: the output check compares files, not words.
// An output named like an argument that is no file (the system's name)
// is written, as is predict's -o, a prefix of numbered branch files, even
// when it names the trace.
func TestOutputsThatAreNoInput(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	// Twice: the second time a file of the system's name is there (the
	// first trace), which is still no input of sim, and a trace to write
	// over.
	for range 2 {
		if code := app.Run([]string{"sim", "paxos", "--seed", "1", "-o", "paxos"}); code != 0 {
			t.Fatalf("sim paxos -o paxos: exit %d: %s", code, errb.String())
		}
	}
	if code := app.Run([]string{"predict", "paxos", "builtin:paxos", "--at", "100", "--budget", "2", "-o", "paxos"}); code != 0 && code != ExitViolations {
		t.Fatalf("predict -o naming its trace (a prefix): exit %d: %s", code, errb.String())
	}
}
