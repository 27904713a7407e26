package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// merged is the part of replay results merge --json the tests compare.
type merged struct {
	Shards   int   `json:"shards"`
	Missing  []int `json:"missing"`
	Complete bool  `json:"complete"`
	Runs     int   `json:"runs"`
	// FailedRuns and each failure's Runs: an exploration's counts.
	FailedRuns int `json:"failed_runs"`
	Failures   []struct {
		Seed      *uint64 `json:"seed"`
		Run       *int    `json:"run"`
		Runs      int     `json:"runs"`
		Headline  string  `json:"headline"`
		Reproduce string  `json:"reproduce"`
		Debug     string  `json:"debug"`
	} `json:"failures"`
	Exit int `json:"exit"`
}

func mergeJSON(t *testing.T, dir string, files ...string) (merged, result) {
	t.Helper()
	r := replay(t, dir, append([]string{"results", "merge", "--json"}, files...)...)
	var m merged
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("merge --json: %v\nstdout: %s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return m, r
}

// headlines lists a report's failures as "NAME: headline", in order.
func headlines(m merged) []string {
	var out []string
	for _, f := range m.Failures {
		switch {
		case f.Seed != nil:
			out = append(out, "seed "+strconv.FormatUint(*f.Seed, 10)+": "+f.Headline)
		case f.Run != nil:
			out = append(out, "run "+strconv.Itoa(*f.Run)+": "+f.Headline)
		}
	}
	return out
}

// Three processes hunting seeds 1-40 in shards find, merged, exactly
// the failing seeds one process finds over the whole range.
func TestShardSeedHuntMatchesOneProcess(t *testing.T) {
	dir := t.TempDir()
	hunt := []string{"sim", "paxos", "--bug", "spec", "--seeds", "1-40", "--check", "builtin:paxos", "--all"}
	one := replay(t, dir, append(hunt, "--results", "one.json", "-o", "one.lz4")...)
	if one.code != 1 {
		t.Fatalf("unsharded hunt: exit %d, want 1\n%s%s", one.code, one.stdout, one.stderr)
	}
	// The first failing seed's trace is written to -o, and its debug
	// command opens that file (it named the file its reproduce command
	// would write, which did not exist).
	if !regexp.MustCompile(`\n  wrote:     one\.lz4\n  debug:     replay debug one\.lz4 `).MatchString(one.stdout) {
		t.Fatalf("the first failing seed's lines do not debug what was written:\n%s", one.stdout)
	}
	whole, _ := mergeJSON(t, dir, "one.json")
	if len(whole.Failures) < 3 {
		t.Fatalf("the test wants a bug failing on several seeds of 1-40; got %v", headlines(whole))
	}
	var files []string
	for i := range 3 {
		file := "shard-" + strconv.Itoa(i) + ".json"
		r := replay(t, dir, append(hunt, "--shard", strconv.Itoa(i)+"/3", "--results", file)...)
		if r.code != 0 && r.code != 1 {
			t.Fatalf("shard %d/3: exit %d\n%s%s", i, r.code, r.stdout, r.stderr)
		}
		files = append(files, file)
	}
	// Any order of the files: the report is sorted by seed.
	m, r := mergeJSON(t, dir, files[2], files[0], files[1])
	if got, want := headlines(m), headlines(whole); !slices.Equal(got, want) {
		t.Fatalf("merged shards found\n%q\none process found\n%q", got, want)
	}
	if r.code != 1 || m.Exit != 1 || !m.Complete || m.Runs != 40 || m.Shards != 3 {
		t.Fatalf("merge: exit %d, report %+v", r.code, m)
	}
	// The reproduce command re-makes the failing run from nothing.
	f := m.Failures[0]
	re := splitCommand(t, f.Reproduce)
	if rr := replay(t, dir, re[1:]...); rr.code != 0 {
		t.Fatalf("%s: exit %d\n%s", f.Reproduce, rr.code, rr.stderr)
	}
	out := re[len(re)-1]
	if c := replay(t, dir, "check", out, "builtin:paxos"); c.code != 1 {
		t.Fatalf("the reproduced run %s does not fail its check: exit %d\n%s", out, c.code, c.stdout)
	}

	// Without --all each shard stops at its first failure: the merged
	// report's first failure is still the hunt's first failing seed,
	// and the report says the shards did not run their whole slice.
	for i := range 3 {
		replay(t, dir, "sim", "paxos", "--bug", "spec", "--seeds", "1-40", "--check", "builtin:paxos",
			"--shard", strconv.Itoa(i)+"/3", "--results", "first-"+strconv.Itoa(i)+".json")
	}
	first, _ := mergeJSON(t, dir, "first-0.json", "first-1.json", "first-2.json")
	if len(first.Failures) == 0 || *first.Failures[0].Seed != *whole.Failures[0].Seed || first.Complete {
		t.Fatalf("stop-at-first shards merged: %+v; want first seed %d, incomplete", first, *whole.Failures[0].Seed)
	}
}

// Shards of a random exploration make the unsharded exploration's runs
// under the same numbers: merged, they find what one process finds.
func TestShardExploreMatchesOneProcess(t *testing.T) {
	dir := t.TempDir()
	exp := []string{"explore", "paxos", "--bug", "spec", "--check", "builtin:paxos", "--budget", "45", "--all"}
	one := replay(t, dir, append(exp, "--results", "one.json")...)
	if one.code != 1 {
		t.Fatalf("unsharded exploration: exit %d, want 1\n%s%s", one.code, one.stdout, one.stderr)
	}
	whole, _ := mergeJSON(t, dir, "one.json")
	if len(whole.Failures) < 2 {
		t.Fatalf("the test wants several findings in 45 runs; got %v", headlines(whole))
	}
	var files []string
	for i := range 3 {
		// The default result file, as a user who reads the docs writes.
		// A profile of one shard is no part of the hunt: it merges with
		// the others, and no reproduce command writes the profile.
		args := append(slices.Clone(exp), "--shard", strconv.Itoa(i)+"/3")
		if i == 1 {
			args = append(args, "--cpuprofile", "shard1.prof")
		}
		r := replay(t, dir, args...)
		if want := "stopped: this shard's 15 of the --budget 45 runs are done"; !strings.Contains(r.stdout, want) {
			t.Errorf("shard %d/3 does not say %q:\n%s", i, want, r.stdout)
		}
		files = append(files, "paxos-spec-explore-results-"+strconv.Itoa(i)+"-of-3.json")
	}
	m, r := mergeJSON(t, dir, files...)
	if got, want := headlines(m), headlines(whole); !slices.Equal(got, want) {
		t.Fatalf("merged shards found\n%q\none process found\n%q", got, want)
	}
	if r.code != 1 || !m.Complete || m.Runs != 45 {
		t.Fatalf("merge: exit %d, report %+v", r.code, m)
	}
	// The counts --all makes (how many runs failed, how many found each
	// finding) are the unsharded exploration's, in its file and merged.
	failed := regexp.MustCompile(`\((\d+) failed\)`).FindStringSubmatch(one.stdout)
	if failed == nil {
		t.Fatalf("the exploration does not say how many runs failed:\n%s", one.stdout)
	}
	if n, _ := strconv.Atoi(failed[1]); whole.FailedRuns != n || m.FailedRuns != n {
		t.Errorf("failed runs: %d said, %d in its result file, %d merged", n, whole.FailedRuns, m.FailedRuns)
	}
	for i, f := range m.Failures {
		if f.Runs < 1 || f.Runs != whole.Failures[i].Runs {
			t.Errorf("%s: found by %d runs merged, %d in one process", f.Headline, f.Runs, whole.Failures[i].Runs)
		}
	}
	// A shard's finding is re-made by the shard stopped after its run.
	last := m.Failures[len(m.Failures)-1]
	re := splitCommand(t, last.Reproduce)
	rr := replay(t, dir, re[1:]...)
	if rr.code != 1 {
		t.Fatalf("%s: exit %d, want 1\n%s", last.Reproduce, rr.code, rr.stdout)
	}
	if want := "run " + strconv.Itoa(*last.Run) + " fails: " + last.Headline; !strings.Contains(rr.stdout, want) {
		t.Fatalf("%s does not re-find %q:\n%s", last.Reproduce, want, rr.stdout)
	}
	// Re-making a run leaves the hunt's result files as they were: they
	// still merge into the same report (the command used to overwrite
	// its shard's file with a hunt of another budget).
	again, r := mergeJSON(t, dir, files...)
	if r.code != 1 || !slices.Equal(headlines(again), headlines(m)) || again.Runs != m.Runs {
		t.Fatalf("merge after %s: exit %d, report %+v\n%s", last.Reproduce, r.code, again, r.stderr)
	}
}

func TestShardBadInput(t *testing.T) {
	dir := t.TempDir()
	hunt := []string{"sim", "paxos", "--seeds", "1-3", "--check", "builtin:paxos"}
	badInput(t, replay(t, dir, append(hunt, "--shard", "3/3")...), "--shard", "0 <= I < N")
	badInput(t, replay(t, dir, append(hunt, "--shard", "x")...), "--shard", "I/N")
	badInput(t, replay(t, dir, append(hunt, "--shard", "-1/3")...), "--shard")
	badInput(t, replay(t, dir, append(hunt, "--shard", "+1/3")...), "--shard")
	badInput(t, replay(t, dir, "sim", "paxos", "--shard", "0/2"), "--shard", "hunt")
	badInput(t, replay(t, dir, "explore", "paxos", "--check", "builtin:paxos", "--strategy", "bfs", "--shard", "0/2"), "bfs", "cannot be split")
	badInput(t, replay(t, dir, "explore", "paxos", "--check", "builtin:paxos", "--strategy", "delay-rr", "--exhaustive", "--shard", "0/2"), "exhaustive")
	badInput(t, replay(t, dir, "results", "merge"), "FILES")
	// Files within the bound of one, but not of a merge, are refused
	// before any is read (sparse: no disk is used).
	var big []string
	for i := range 5 {
		name := "big" + strconv.Itoa(i) + ".json"
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(250 << 20); err != nil {
			t.Fatal(err)
		}
		f.Close()
		big = append(big, name)
	}
	badInput(t, replay(t, dir, append([]string{"results", "merge"}, big...)...), "the 5 result files hold 1.2 GiB in all")

	// Two shards of one hunt, and shards of other hunts.
	for i := range 2 {
		mustOK(t, replay(t, dir, "sim", "paxos", "--seeds", "1-2", "--check", "builtin:paxos", "--shard", strconv.Itoa(i)+"/2", "--results", "a"+strconv.Itoa(i)+".json"))
	}
	r := replay(t, dir, "sim", "paxos", "--bug", "spec", "--seeds", "1-2", "--check", "builtin:paxos", "--shard", "1/2", "--results", "b1.json")
	if r.code != 0 && r.code != 1 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustOK(t, replay(t, dir, "sim", "paxos", "--seeds", "1-2", "--check", "builtin:paxos", "--shard", "1/3", "--results", "c1.json"))
	mustOK(t, replay(t, dir, "results", "merge", "a0.json", "a1.json"))
	badInput(t, replay(t, dir, "results", "merge", "a0.json", "b1.json"), "different hunts", "bug")
	badInput(t, replay(t, dir, "results", "merge", "a0.json", "c1.json"), "shards")
	badInput(t, replay(t, dir, "results", "merge", "a0.json", "a0.json"), "both shard 0/2")
	badInput(t, replay(t, dir, "results", "merge", "a0.json"), "missing")
	// Merged with --partial, it is not a clean sweep: it exited 0.
	if r := replay(t, dir, "results", "merge", "--partial", "a0.json"); r.code != 130 || !strings.Contains(r.stderr, "shard(s) 1 of 2 are missing") {
		t.Fatalf("merge --partial with a shard missing: exit %d, stderr %q", r.code, r.stderr)
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.json"), []byte(`{"format":"other"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	badInput(t, replay(t, dir, "results", "merge", "junk.json"), "not a result file")

	// An edited shard: an exit its failures do not give (a predicate
	// error without its failure merged to exit 0), a kind no hunt writes,
	// a step count that would overflow the sum.
	orig, err := os.ReadFile(filepath.Join(dir, "a1.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, edit := range []struct{ old, new, want string }{
		{`"exit": 0`, `"exit": 4`, "exited 4 but its failures give 0"},
		{`"failures": []`, `"failures": [{"seed": 2, "kind": "weird"}]`, `kind "weird"`},
		{`"steps": `, `"steps": 4611686018427387904, "x": `, "more than a shard can run"},
		// A reason no hunt writes (an explorer's, in a seed hunt).
		{`"stopped": "done"`, `"stopped": "budget"`, `stopped "budget", which a "sim" hunt does not write`},
		// No hunt at all: it said "(it writes )".
		{`"hunt": {`, `"hunt": null, "x": {`, `hunt is of kind ""; a hunt is of kind sim or explore`},
	} {
		edited := strings.Replace(string(orig), edit.old, edit.new, 1)
		if edited == string(orig) {
			t.Fatalf("a1.json has no %s:\n%s", edit.old, orig)
		}
		os.WriteFile(filepath.Join(dir, "edited.json"), []byte(edited), 0o644)
		badInput(t, replay(t, dir, "results", "merge", "a0.json", "edited.json"), "edited.json", edit.want)
	}

	// A failure whose step is not the one its debug command opens (a
	// hostile pass: step 10^18 beside --at 1050 was merged and printed).
	r = replay(t, dir, "sim", "paxos", "--bug", "spec", "--seeds", "1-30", "--check", "builtin:paxos", "--all", "--shard", "1/3", "--results", "f1.json")
	if r.code != 1 {
		t.Fatalf("the spec hunt's shard 1/3: exit %d\n%s", r.code, r.stderr)
	}
	orig, err = os.ReadFile(filepath.Join(dir, "f1.json"))
	if err != nil {
		t.Fatal(err)
	}
	step := regexp.MustCompile(`"step": (\d+)`).FindStringSubmatch(string(orig))
	if step == nil {
		t.Fatalf("f1.json has no failure:\n%s", orig)
	}
	os.WriteFile(filepath.Join(dir, "edited.json"), []byte(strings.Replace(string(orig), step[0], `"step": 1000000000000000000`, 1)), 0o644)
	badInput(t, replay(t, dir, "results", "merge", "--partial", "edited.json"), "edited.json", "but its debug command opens #"+step[1])
}

// splitCommand splits a printed command into words; the tests'
// commands quote nothing.
func splitCommand(t *testing.T, cmd string) []string {
	t.Helper()
	if strings.ContainsAny(cmd, "'\"") {
		t.Fatalf("quoted word in %q", cmd)
	}
	return strings.Fields(cmd)
}

// TestInterruptedSeedHuntReportsWhatItTried stops a long seed hunt with
// SIGINT and with SIGTERM (what a preempted Kubernetes pod gets): it
// must print how far it got and write its shard's result file marked
// interrupted, not die with nothing (which left merge to call the shard
// missing and lost what it found).
func TestInterruptedSeedHuntReportsWhatItTried(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		dir := t.TempDir()
		// Some seeds in: a million take hours.
		r := replayInterrupted(t, dir, 1500*time.Millisecond, sig,
			"sim", "paxos", "--seeds", "1-1000000", "--check", "builtin:paxos", "--all", "--shard", "0/2")
		// 130, not 0: a Kubernetes index that exited 0 would not run again.
		if r.code != 130 || !strings.Contains(r.stdout, "interrupted after ") || !strings.Contains(r.stderr, "interrupted after ") {
			t.Fatalf("%v: exit %d\nstdout: %s\nstderr: %s", sig, r.code, r.stdout, r.stderr)
		}
		wasInterrupted(t, sig, filepath.Join(dir, "paxos-none-results-0-of-2.json"), r)
	}
}

// A sharded exploration stopped by Ctrl-C or SIGTERM (a preempted pod)
// writes its result file marked interrupted and exits 130: SIGTERM killed
// it with nothing written, and Ctrl-C exited 0, which would have let
// Kubernetes mark the index done.
func TestInterruptedExploreReportsWhatItRan(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		dir := t.TempDir()
		r := replayInterrupted(t, dir, 1500*time.Millisecond, sig,
			"explore", "paxos", "--strategy", "random", "--budget", "1000000", "--check", "builtin:paxos", "--all", "--shard", "1/2", "--results", "r.json")
		if r.code != 130 || !strings.Contains(r.stderr, "interrupted after ") {
			t.Fatalf("%v: exit %d\nstdout: %s\nstderr: %s", sig, r.code, r.stdout, r.stderr)
		}
		wasInterrupted(t, sig, filepath.Join(dir, "r.json"), r)
		// Merged, the sweep is not a clean one either: merge exited 0
		// when no shard had failed.
		m := replay(t, dir, "results", "merge", "--partial", "--json", "r.json")
		var out merged
		if err := json.Unmarshal([]byte(m.stdout), &out); err != nil || m.code != 130 || out.Exit != 130 || !strings.Contains(m.stderr, "interrupted") {
			t.Fatalf("%v: merge of an interrupted shard: exit %d (%v)\nstdout: %s\nstderr: %s", sig, m.code, err, m.stdout, m.stderr)
		}
	}
}

// wasInterrupted checks the result file of a hunt or exploration that sig
// stopped: marked interrupted and incomplete, with the runs it made and
// exit 130.
func wasInterrupted(t *testing.T, sig syscall.Signal, path string, r result) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: no result file: %v\n%s", sig, err, r.stdout)
	}
	var rf struct {
		Stopped  string `json:"stopped"`
		Complete bool   `json:"complete"`
		Runs     int    `json:"runs"`
		Exit     int    `json:"exit"`
	}
	if err := json.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	if rf.Stopped != "interrupted" || rf.Complete || rf.Runs == 0 || rf.Exit != 130 {
		t.Fatalf("%v: result file %s", sig, b)
	}
}

// stoppedByASignal checks the result file of a hunt or exploration that
// sig stopped in its first run, which is discarded: marked interrupted
// and incomplete, with exit 130, whatever it counts.
func stoppedByASignal(t *testing.T, sig syscall.Signal, path string, r result) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), `"stopped": "interrupted"`) || !strings.Contains(string(b), `"complete": false`) || !strings.Contains(string(b), `"exit": 130`) {
		t.Fatalf("%v: result file %s (%v)\n%s", sig, b, err, r.stdout)
	}
	return string(b)
}

// A shard whose check could not evaluate a predicate names the predicate
// and its error in its result file, and so in the merged report: it said
// only "a predicate failed at step #N", which is all a sharded hunt's
// operator sees.
func TestShardPredicateErrorNamesThePredicate(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "err.star"), []byte(`Agent = table("paxos.Agent")
safety("S", lambda: event.step != 500 or fail("boom"))
`), 0o644)
	for i := range 2 {
		r := replay(t, dir, "sim", "paxos", "--seeds", "1-4", "--check", "err.star", "--all", "--shard", strconv.Itoa(i)+"/2", "--results", "r"+strconv.Itoa(i)+".json")
		if r.code != 4 {
			t.Fatalf("shard %d: exit %d, want 4\n%s%s", i, r.code, r.stdout, r.stderr)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "r0.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"predicate": "S"`) || !strings.Contains(string(raw), "boom") {
		t.Fatalf("the result file does not name the predicate and its error:\n%s", raw)
	}
	r := replay(t, dir, "results", "merge", "r0.json", "r1.json")
	if r.code != 4 || strings.Count(r.stdout, "S failed at step #500 and was disabled: ") != 4 || !strings.Contains(r.stdout, "boom") {
		t.Fatalf("merge: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The same signal twice within a moment is one signal sent twice (GNU
// timeout signals the process and then its group): the exploration
// winds down as on one, writing its result file, where the second copy
// ended it at once with nothing written.
func TestSignalSentTwiceIsOne(t *testing.T) {
	dir := t.TempDir()
	// Runs of 300 nodes: the run under way when the signal comes is
	// still running when its second copy does.
	r := replaySignalled(t, dir, 2500*time.Millisecond, func(p *os.Process) {
		p.Signal(syscall.SIGTERM)
		time.Sleep(20 * time.Millisecond)
		p.Signal(syscall.SIGTERM)
	}, "explore", "paxos", "--nodes", "300", "--strategy", "random", "--budget", "1000000", "--check", "builtin:paxos",
		"--shard", "0/2", "--results", "r.json")
	if r.code != 130 || !strings.Contains(r.stderr, "interrupted after ") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	// The run under way when the signal came is discarded (it may be
	// the first): the file says interrupted, whatever it counts.
	stoppedByASignal(t, syscall.SIGTERM, filepath.Join(dir, "r.json"), r)
}

// A signal ends the run under way, not only the hunt between runs: an
// exploration or a seed hunt of 3,000 paxos nodes (a run takes tens of
// seconds) went on for its whole run after Ctrl-C, then exited 0 with
// its result file saying complete, as if no one had asked it to stop.
func TestInterruptEndsTheRunUnderWay(t *testing.T) {
	for _, args := range [][]string{
		{"explore", "paxos", "--check", "builtin:paxos", "--budget", "1", "--nodes", "3000", "--results", "r.json", "-o", "big.lz4"},
		{"sim", "paxos", "--nodes", "3000", "--seeds", "1-1", "--check", "builtin:paxos", "--results", "r.json"},
	} {
		dir := t.TempDir()
		r := replayInterrupted(t, dir, 2*time.Second, syscall.SIGINT, args...)
		if r.code != 130 || !strings.Contains(r.stderr, "interrupted after 0 ") {
			t.Fatalf("%v: exit %d\nstdout: %s\nstderr: %s", args[0], r.code, r.stdout, r.stderr)
		}
		if b := stoppedByASignal(t, syscall.SIGINT, filepath.Join(dir, "r.json"), r); !strings.Contains(b, `"runs": 0`) {
			t.Fatalf("%v: result file %s", args[0], b)
		}
		// An unsharded hunt names the seeds left, as a range to give.
		if args[0] == "sim" && !strings.Contains(r.stderr, "--seeds 1-1 checks the rest") {
			t.Fatalf("the interrupted hunt does not say how to check the rest:\n%s", r.stderr)
		}
	}
}
