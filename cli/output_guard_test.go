package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/sim"
)

// TestExportAndReportGuardTheirInputs: -o naming the trace or the script
// is refused (it overwrote them), and a check behind a report or an
// export that could not evaluate a predicate ends with exit 4 after
// writing the file (it exited 0).
func TestExportAndReportGuardTheirInputs(t *testing.T) {
	dir := t.TempDir()
	run, _, errb := guardedApp()
	trace := filepath.Join(dir, "p.lz4")
	mustRun(t, run, errb, "sim", "paxos", "--seed", "1", "-o", trace)
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
	// A script that is no input of schedule is kept as export and
	// report keep one (schedule -o mine.star replaced it), and so is
	// anything else that is not a schedule; a schedule is written again.
	scriptBefore, _ := os.ReadFile(script)
	if code := run("schedule", trace, "-o", script); code != ExitBadInput || !strings.Contains(errb.String(), "exists and is not a schedule") {
		t.Errorf("schedule -o over a script: exit %d, stderr %q", code, errb.String())
	}
	if after, _ := os.ReadFile(script); !bytes.Equal(scriptBefore, after) {
		t.Fatal("the script was overwritten")
	}
	sched := filepath.Join(dir, "p.schedule")
	mustRun(t, run, errb, "schedule", trace, "-o", sched)
	mustRun(t, run, errb, "schedule", trace, "-o", sched)
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

// explore --all numbers its traces after -o (OUT-2.lz4, ...): an input
// of that name was overwritten (a fork of an earlier --all finding, by
// its default name), and a numbered file that is not a trace was
// refused only after the whole search, its summary and result file lost.
// Both are refused before the search now.
func TestExploreNumberedOutputsAreGuarded(t *testing.T) {
	dir := t.TempDir()
	run, out, errb := guardedApp()
	input := filepath.Join(dir, "paxos-spec-explore-2.lz4")
	mustRun(t, run, errb, "sim", "paxos", "--bug", "spec", "--seed", "1", "-o", input)
	before, _ := os.ReadFile(input)
	code := run("explore", "paxos", "--check", "builtin:paxos", "--from", input, "--at", "200", "--strategy", "pct", "--budget", "10", "--all",
		"-o", filepath.Join(dir, "paxos-spec-explore.lz4"))
	if code != ExitBadInput || !strings.Contains(errb.String(), "would number its traces over the input") {
		t.Errorf("explore --from an input named as its second finding: exit %d, stderr %q", code, errb.String())
	}
	if after, _ := os.ReadFile(input); !bytes.Equal(before, after) {
		t.Fatal("the input was overwritten")
	}
	notes := filepath.Join(dir, "nf-2.lz4")
	if err := os.WriteFile(notes, []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code = run("explore", "paxos", "--bug", "spec", "--check", "builtin:paxos", "--budget", "150", "--all", "-o", filepath.Join(dir, "nf.lz4"))
	if code != ExitBadInput || !strings.Contains(errb.String(), "nf-2.lz4 exists and is not a trace") || out.Len() != 0 {
		t.Errorf("explore over a numbered file that is not a trace: exit %d, stdout %d bytes, stderr %q", code, out.Len(), errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "nf.lz4")); err == nil {
		t.Error("the search ran: nf.lz4 was written")
	}
	// The schedule a panicking finding comes with, likewise (a review).
	os.Remove(notes)
	for _, name := range []string{"nf.schedule", "nf-3.schedule"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("notes\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code = run("explore", "paxos", "--bug", "spec", "--check", "builtin:paxos", "--budget", "150", "--all", "-o", filepath.Join(dir, "nf.lz4"))
		if code != ExitBadInput || !strings.Contains(errb.String(), name+" exists and is not a schedule") {
			t.Errorf("explore over %s: exit %d, stderr %q", name, code, errb.String())
		}
		os.Remove(p)
	}
}

// shrink writes a simulated run's schedule beside its -o (OUT.schedule):
// it replaced whatever file had that name, the input among them (a trace
// named in.schedule, shrunk to -o in.lz4). Both are refused, and so is
// -o naming the input itself.
func TestShrinkScheduleIsGuarded(t *testing.T) {
	dir := t.TempDir()
	run, _, errb := guardedApp()
	q := filepath.Join(dir, "q.lz4")
	mustRun(t, run, errb, "sim", "randtree", "--bug", "no-recovery-timer", "--seed", "1", "-o", q)
	notes := filepath.Join(dir, "q-s.schedule")
	if err := os.WriteFile(notes, []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run("shrink", q, "builtin:randtree", "-o", filepath.Join(dir, "q-s.lz4")); code != ExitBadInput || !strings.Contains(errb.String(), "q-s.schedule exists and is not a schedule") {
		t.Errorf("shrink over notes named as its schedule: exit %d, stderr %q", code, errb.String())
	}
	if b, _ := os.ReadFile(notes); string(b) != "notes\n" {
		t.Error("the notes were replaced")
	}
	in := filepath.Join(dir, "in.schedule")
	b, _ := os.ReadFile(q)
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run("shrink", in, "builtin:randtree", "-o", filepath.Join(dir, "in.lz4")); code != ExitBadInput || !strings.Contains(errb.String(), "over the input") {
		t.Errorf("shrink whose schedule is its input: exit %d, stderr %q", code, errb.String())
	}
	if code := run("shrink", q, "builtin:randtree", "-o", q); code != ExitBadInput || !strings.Contains(errb.String(), "is also an input") {
		t.Errorf("shrink -o its input: exit %d, stderr %q", code, errb.String())
	}
	if after, _ := os.ReadFile(in); !bytes.Equal(after, b) {
		t.Error("the input was replaced")
	}
}

// guardedApp runs commands of an App over the bundled systems; its output
// and errors are those of the last command run.
// mustRun runs args and fails t unless they exit 0.
func mustRun(t *testing.T, run func(args ...string) int, errb *bytes.Buffer, args ...string) {
	t.Helper()
	if code := run(args...); code != 0 {
		t.Fatalf("%s: exit %d: %s", args[0], code, errb.String())
	}
}

func guardedApp() (run func(args ...string) int, out, errb *bytes.Buffer) {
	out, errb = new(bytes.Buffer), new(bytes.Buffer)
	app := &App{Registry: examples.Registry(), Stdout: out, Stderr: errb}
	return func(args ...string) int {
		out.Reset()
		errb.Reset()
		return app.Run(args)
	}, out, errb
}

// predict numbers its branch traces PREFIX-1.lz4, ...: an input spelled
// otherwise (./in-1.lz4 with -o in.lz4) was compared as text and replaced
// (a hostile pass). A folder at a numbered name, and critical's -o over a
// file that is not a trace, were refused only after the whole search,
// which was lost. All are refused before any search (so at once, with
// nothing on stdout), and the input is unchanged.
func TestPredictAndCriticalOutputsAreGuardedFirst(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	run, out, errb := guardedApp()
	mustRun(t, run, errb, "sim", "paxos", "--bug", "spec", "--seed", "8", "-o", "in-1.lz4")
	before, _ := os.ReadFile("in-1.lz4")
	abs := filepath.Join(dir, "in-1.lz4")
	for _, args := range [][]string{
		{"predict", "./in-1.lz4", "builtin:paxos", "--at", "1038", "--budget", "20", "-o", "in.lz4"},
		{"predict", "in-1.lz4", "builtin:paxos", "--at", "1038", "--budget", "20", "-o", "./in.lz4"},
		{"predict", abs, "builtin:paxos", "--at", "1038", "--budget", "20", "-o", "in.lz4"},
	} {
		if code := run(args...); code != ExitBadInput || !strings.Contains(errb.String(), "would number its traces over the input") || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q", args, code, out.Len(), errb.String())
		}
	}
	if after, _ := os.ReadFile("in-1.lz4"); !bytes.Equal(before, after) {
		t.Fatal("predict replaced its input")
	}
	if err := os.Mkdir("w-2.lz4", 0o755); err != nil {
		t.Fatal(err)
	}
	if code := run("predict", "in-1.lz4", "builtin:paxos", "--at", "1038", "--budget", "20", "-o", "w.lz4"); code != ExitBadInput ||
		!strings.Contains(errb.String(), "w-2.lz4 is a directory") || out.Len() != 0 {
		t.Errorf("predict over a folder at a numbered name: exit %d, stdout %d bytes, stderr %q", code, out.Len(), errb.String())
	}
	if err := os.WriteFile("notes.txt", []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, run, errb, "sim", "chord", "--bug", "finger-boundary", "--seed", "1", "-o", "fb.lz4")
	if code := run("critical", "fb.lz4", "builtin:chord", "--predicate", "FingersCorrect", "--walks", "2", "-o", "notes.txt"); code != ExitBadInput ||
		!strings.Contains(errb.String(), "notes.txt exists and is not a trace") || out.Len() != 0 {
		t.Errorf("critical -o over a file that is not a trace: exit %d, stdout %d bytes, stderr %q", code, out.Len(), errb.String())
	}
	if b, _ := os.ReadFile("notes.txt"); string(b) != "mine\n" {
		t.Fatal("critical replaced notes.txt")
	}
}

// A trace that cannot be written (here /dev/full; a full disk the same)
// is an output error, exit 2, not a run that failed (exit 1 with "the
// trace holds every event up to it", while a full disk had replaced an
// existing trace with an unreadable file: the partial file is dropped
// now, before it can replace anything).
func TestSimAndForkOnAFullDeviceAreOutputErrors(t *testing.T) {
	dir := t.TempDir()
	run, out, errb := guardedApp()
	trace := filepath.Join(dir, "p.lz4")
	mustRun(t, run, errb, "sim", "paxos", "--seed", "1", "-o", trace)
	for _, args := range [][]string{
		{"sim", "paxos", "--seed", "1", "-o", "/dev/full"},
		{"fork", trace, "--at", "100", "-o", "/dev/full"},
	} {
		code := run(args...)
		if code != ExitBadInput || !strings.Contains(errb.String(), "cannot write /dev/full") || strings.Contains(out.String(), "wrote") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
}

// schedule of a damaged trace said "the schedule holds the 1933 events
// before the damage" and wrote nothing (a hostile pass). It writes them,
// marked DAMAGED in the file's comments, and still exits 2; the file
// reads back as a schedule.
func TestScheduleOfADamagedTraceIsWrittenAndMarked(t *testing.T) {
	dir := t.TempDir()
	run, _, errb := guardedApp()
	trace := filepath.Join(dir, "p.lz4")
	mustRun(t, run, errb, "sim", "paxos", "--seed", "1", "-o", trace)
	f, err := os.OpenFile(trace, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("garbage after the end"))
	f.Close()
	out := filepath.Join(dir, "p.schedule")
	if code := run("schedule", trace, "-o", out); code != ExitBadInput || !strings.Contains(errb.String(), "damaged") {
		t.Fatalf("schedule of a damaged trace: exit %d, stderr %q", code, errb.String())
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), "# DAMAGED TRACE") {
		t.Fatalf("the schedule was not written, or not marked: %v\n%.300s", err, b)
	}
	sf, _ := os.Open(out)
	defer sf.Close()
	if _, err := sim.ParseSchedule(sf, out); err != nil {
		t.Fatalf("the marked schedule does not read back: %v", err)
	}
}

// explore whose finding's trace could not be written (/dev/full; a full
// disk the same) lost its summary and its result file, which a shard
// writes "whatever its exit code" (a hostile pass). Both are written, the
// summary says which trace could not be, and the exit is 2. A folder at a
// numbered finding's name, and --results named as one, are refused
// before the search.
func TestExploreKeepsItsResultsWhenATraceCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	run, out, errb := guardedApp()
	code := run("explore", "paxos", "--bug", "spec", "--check", "builtin:paxos", "--strategy", "pct", "--budget", "30", "--results", "r.json", "-o", "/dev/full")
	if code != ExitBadInput || !strings.Contains(out.String(), "could not write /dev/full") || !strings.Contains(out.String(), "reproduce:") {
		t.Fatalf("explore -o /dev/full: exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}
	rf, err := readResults("r.json", "replay")
	if err != nil || len(rf.Failures) == 0 || rf.Failures[0].Trace != "" {
		t.Fatalf("the result file: %v %+v", err, rf)
	}
	if err := os.Mkdir("f-2.lz4", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"explore", "paxos", "--bug", "spec", "--check", "builtin:paxos", "--budget", "30", "--all", "-o", "f.lz4"},
		{"explore", "paxos", "--bug", "spec", "--check", "builtin:paxos", "--budget", "30", "--all", "--results", "g-2.lz4", "-o", "g.lz4"},
	} {
		if code := run(args...); code != ExitBadInput || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q", args, code, out.Len(), errb.String())
		}
	}
}

// A seed hunt whose failing seed's trace could not be written lost the
// seed (never printed) and the result file (a hostile pass).
func TestHuntKeepsItsResultsWhenATraceCannotBeWritten(t *testing.T) {
	t.Chdir(t.TempDir())
	run, out, errb := guardedApp()
	code := run("sim", "paxos", "--bug", "spec", "--seeds", "8-8", "--check", "builtin:paxos", "--results", "h.json", "-o", "/dev/full")
	if code != ExitBadInput || !strings.Contains(out.String(), "seed 8 fails") || !strings.Contains(out.String(), "could not write /dev/full") {
		t.Fatalf("a hunt -o /dev/full: exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}
	if rf, err := readResults("h.json", "replay"); err != nil || len(rf.Failures) != 1 || rf.Failures[0].Trace != "" {
		t.Fatalf("the result file: %v %+v", err, rf)
	}
}
