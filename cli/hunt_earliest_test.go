package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
)

// A hunt with --all names the failing seed that breaks earliest when it
// is not the first: the short run is the one to read and shrink.
func TestHuntNamesTheEarliestFailure(t *testing.T) {
	t.Chdir(t.TempDir())
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	code := app.Run([]string{"sim", "paxos", "--bug", "spec", "--seeds", "1-40", "--check", "builtin:paxos", "--all", "--results", "r.json", "-o", "h.lz4"})
	if code != ExitViolations {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	b, err := os.ReadFile("r.json")
	if err != nil {
		t.Fatal(err)
	}
	var rf resultFile
	if err := json.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	if len(rf.Failures) < 2 {
		t.Fatalf("want several failing seeds to compare, got %d", len(rf.Failures))
	}
	early := earliestFailure(rf.Failures)
	line := ""
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "earliest failure:") {
			line = l
		}
	}
	if early == &rf.Failures[0] {
		if line != "" {
			t.Fatalf("the first failure is the earliest, yet: %s", line)
		}
		t.Fatalf("seeds 1-40 no longer have a later seed failing earlier than the first: pick a range that does")
	}
	want := fmt.Sprintf("earliest failure: seed %d at #%d (seed %d fails at #%d)", *early.Seed, early.Step, *rf.Failures[0].Seed, rf.Failures[0].Step)
	if !strings.HasPrefix(line, want) {
		t.Fatalf("want %q, got %q:\n%s", want, line, out.String())
	}
	for _, f := range rf.Failures {
		if f.Step < early.Step {
			t.Fatalf("seed %d fails at #%d, before the earliest named", *f.Seed, f.Step)
		}
	}
}

// --json prints the hunt's result (the result file's document) alone on
// stdout, the report on stderr; without --seeds it is refused.
func TestHuntJSON(t *testing.T) {
	t.Chdir(t.TempDir())
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	code := app.Run([]string{"sim", "paxos", "--bug", "spec", "--seeds", "1-40", "--check", "builtin:paxos", "--all", "--json", "-o", "h.lz4"})
	if code != ExitViolations {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rf resultFile
	if err := json.Unmarshal(out.Bytes(), &rf); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out.String())
	}
	if rf.Format != resultsFormat || rf.Runs != 40 || len(rf.Failures) < 2 || rf.Failures[0].Reproduce == "" || !rf.Complete {
		t.Fatalf("result: %+v", rf)
	}
	if !strings.Contains(errb.String(), fmt.Sprintf("seed %d fails", *rf.Failures[0].Seed)) {
		t.Fatalf("the report is not on stderr:\n%s", errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := app.Run([]string{"sim", "paxos", "--json"}); code != ExitBadInput || !strings.Contains(errb.String(), "--json goes with a hunt") {
		t.Fatalf("--json without --seeds: exit %d: %s", code, errb.String())
	}
}

// A liveness alarm counts where it was raised: a run whose interval began
// early but whose alarm came late is not the shortest to read and shrink
// (a new user's hunt named seed 13 "at #263" for an alarm at #381).
func TestEarliestFailureWeighsAlarmsWhereRaised(t *testing.T) {
	s1, s2 := uint64(1), uint64(2)
	failures := []huntFailure{
		{Seed: &s1, Kind: "violation", Step: 300},
		{Seed: &s2, Kind: "violation", Step: 100, AlarmStep: 900},
	}
	if early := earliestFailure(failures); early != &failures[0] {
		t.Fatalf("earliest: seed %d, want seed 1 (decided at #300, against an alarm at #900)", *early.Seed)
	}
	if got := failures[1].decided(); got != 900 {
		t.Fatalf("decided %d, want the alarm's #900", got)
	}
}
