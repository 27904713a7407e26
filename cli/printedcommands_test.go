package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
)

// Every command the tool prints for pasting quotes the trace's path: a
// file named with shell syntax in it ran that syntax when a user pasted
// the "next:" or "debug the first violation:" line (a hostile pass).
func TestPrintedCommandsQuoteTracePaths(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "a b;$(touch PWNED).lz4")
	run := func(args ...string) string {
		var out, errb bytes.Buffer
		app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
		app.Run(args)
		return out.String()
	}
	quoted := "'" + trace + "'"
	sim := run("sim", "paxos", "--bug", "spec", "--seed", "8", "-o", trace)
	check := run("check", trace, "builtin:paxos")
	index := run("index", trace, "--preds", "builtin:paxos")
	for name, out := range map[string]string{"sim": sim, "check": check, "index": index} {
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "replay ") && strings.Contains(line, "PWNED") && !strings.Contains(line, quoted) {
				t.Errorf("%s prints an unquoted path: %s", name, line)
			}
		}
	}
	if !strings.Contains(check, "replay debug "+quoted) {
		t.Fatalf("check prints no debug command for the trace:\n%s", check)
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Fatal("something ran the file name")
	}
}

// smallPaxos records 50 paxos events in a temporary folder and returns
// an App on the bundled systems, its stderr, and the trace.
func smallPaxos(t *testing.T) (*App, *bytes.Buffer, string) {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "p.lz4")
	errb := &bytes.Buffer{}
	app := &App{Registry: examples.Registry(), Stdout: &bytes.Buffer{}, Stderr: errb}
	if code := app.Run([]string{"sim", "paxos", "--seed", "1", "--steps", "50", "-o", trace}); code != ExitOK {
		t.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	return app, errb, trace
}

// A bad number names its own flag only: "--depth 100 --budget 0 --jobs 1
// --faults 0: want positive numbers" named three flags the user never
// gave (a hostile pass).
func TestABadNumberNamesItsFlagOnly(t *testing.T) {
	app, errb, trace := smallPaxos(t)
	for _, args := range [][]string{
		{"predict", trace, "builtin:paxos", "--at", "10", "--budget", "0"},
		{"critical", trace, "builtin:paxos", "--predicate", "X", "--walk-steps", "0"},
	} {
		errb.Reset()
		code := app.Run(args)
		flag := args[len(args)-2]
		if code != ExitBadInput || !strings.Contains(errb.String(), flag+" 0: want a positive number") || strings.Count(errb.String(), "--") != 1 {
			t.Errorf("%v: exit %d: %q", args, code, errb.String())
		}
	}
}

// A flag given an empty value is refused: --results "" and --nodes ""
// fell back to the default silently (a hostile pass), which a shell
// variable that was not set would do unseen.
func TestEmptyFlagValuesAreRefused(t *testing.T) {
	app, errb, trace := smallPaxos(t)
	for _, args := range [][]string{
		{"verify", trace, "--nodes", ""},
		{"index", trace, "--db", ""},
		{"sim", "paxos", "--seeds", "1-2", "--check", "builtin:paxos", "--results", ""},
	} {
		errb.Reset()
		code := app.Run(args)
		if code != ExitBadInput || !strings.Contains(errb.String(), "'': give it a value") {
			t.Errorf("%v: exit %d: %q", args, code, errb.String())
		}
	}
}

// --results writes over its own earlier result file, not over notes: it
// replaced any file that was not a trace (a hostile pass).
func TestResultsDoNotReplaceOtherFiles(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("my notes\n"), 0o644)
	hunt := []string{"sim", "paxos", "--seeds", "1-2", "--check", "builtin:paxos", "--shard", "0/2", "--results"}
	if code := app.Run(append(hunt, notes)); code != ExitBadInput || !strings.Contains(errb.String(), "is not a result file") {
		t.Fatalf("--results over notes: exit %d: %s", code, errb.String())
	}
	if b, _ := os.ReadFile(notes); string(b) != "my notes\n" {
		t.Fatalf("the notes were replaced: %q", b)
	}
	results := filepath.Join(dir, "paxos-results.json")
	for range 2 { // a shard run again over its own result file
		errb.Reset()
		if code := app.Run(append(hunt, results)); code != ExitOK {
			t.Fatalf("--results over a result file: exit %d: %s", code, errb.String())
		}
	}
}

// predict's -o is a prefix: a folder or a device is refused, not written
// beside (-o dir/ wrote dir/-1.lz4, -o /dev/full wrote /dev/full-1.lz4:
// a hostile pass).
func TestPredictPrefixIsAPrefix(t *testing.T) {
	app, errb, trace := smallPaxos(t)
	dir := filepath.Dir(trace)
	for _, o := range []string{dir + "/", dir, os.DevNull} {
		errb.Reset()
		if code := app.Run([]string{"predict", trace, "builtin:paxos", "--at", "10", "-o", o}); code != ExitBadInput || !strings.Contains(errb.String(), "give a prefix") {
			t.Errorf("-o %s: exit %d: %s", o, code, errb.String())
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*-1.lz4")); len(m) > 0 {
		t.Fatalf("wrote %v", m)
	}
}
