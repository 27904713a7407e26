package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeScript writes a predicates script into dir and returns its name.
func writeScript(t *testing.T, dir, name, src string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// predicateError asserts exit 4 with the predicate's failure on stderr
// (not on stdout) and no panic.
func predicateError(t *testing.T, r result, wants ...string) {
	t.Helper()
	if r.code != 4 {
		t.Fatalf("exit %d, want 4 (a predicate could not be evaluated)\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	for _, w := range wants {
		if !strings.Contains(r.stderr, w) {
			t.Fatalf("stderr does not mention %q:\n%s", w, r.stderr)
		}
	}
	if strings.Contains(r.stdout, "error:") {
		t.Fatalf("the error went to stdout:\n%s", r.stdout)
	}
	if strings.Contains(r.stderr+r.stdout, "goroutine ") {
		t.Fatalf("panic output: %s", r.stderr)
	}
}

// TestPredicateErrorIsNotAPass: a predicate that raised, returned a
// non-bool or ran out of steps leaves the run unchecked: exit 4, the error
// on stderr, and in --json. It outranks violations.
func TestPredicateErrorIsNotAPass(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "ok.lz4"))

	raises := writeScript(t, dir, "raises.star", `
safety("Raises", lambda: event.step < 45 or fail("boom"))
safety("Holds", lambda: True)
`)
	r := replay(t, dir, "check", "ok.lz4", raises)
	predicateError(t, r, "Raises", "#45", "boom")

	r = replay(t, dir, "check", "--json", "ok.lz4", raises)
	predicateError(t, r)
	var rep struct {
		Errors []struct {
			Predicate string `json:"predicate"`
			Step      int    `json:"step"`
			Message   string `json:"message"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if len(rep.Errors) != 1 || rep.Errors[0].Predicate != "Raises" || rep.Errors[0].Step != 45 || !strings.Contains(rep.Errors[0].Message, "boom") {
		t.Fatalf("--json errors: %+v", rep.Errors)
	}

	notBool := writeScript(t, dir, "notbool.star", `safety("NotBool", lambda: 1)`+"\n")
	predicateError(t, replay(t, dir, "check", "ok.lz4", notBool), "NotBool", "want True or False")

	spins := writeScript(t, dir, "spins.star", `
def spin():
    n = 0
    while True:
        n += 1
    return True
safety("Spins", spin)
`)
	predicateError(t, replay(t, dir, "check", "--max-steps", "1000", "ok.lz4", spins), "Spins", "too many steps")

	// A violation and an error: the error decides the exit code.
	both := writeScript(t, dir, "both.star", `
safety("Breaks", lambda: event.step < 10)
safety("Raises", lambda: event.step < 45 or fail("boom"))
`)
	r = replay(t, dir, "check", "ok.lz4", both)
	predicateError(t, r, "Raises")
	if !strings.Contains(r.stdout, "Breaks (safety) violated at step #10") {
		t.Fatalf("the violation is missing from the report:\n%s", r.stdout)
	}

	// A hunt across seeds does not call a seed clean when its check failed.
	r = replay(t, dir, "sim", "paxos", "--seeds", "1-3", "--check", raises, "-o", "hunt.lz4")
	predicateError(t, r, "seed 1", "Raises", "boom")
}

// TestCheckFromBeyondTheTrace: --from past the last step checks nothing;
// that is bad input, not a clean run.
func TestCheckFromBeyondTheTrace(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "ok.lz4"))
	badInput(t, replay(t, dir, "check", "--from", "999999", "ok.lz4", paxosScript(t)), "--from 999999", "steps")
}
