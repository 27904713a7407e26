package cli

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/dustin/go-humanize"
	"github.com/replaycheck/replaycheck/internal/shellword"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/explore"
	"github.com/replaycheck/replaycheck/internal/regular"
	"github.com/replaycheck/replaycheck/predicates"
)

// A result file is what one shard of a hunt (replay sim --seeds, replay
// explore) found, written so that replay results merge can combine the
// shards' files into the hunt's report. The schema is in
// docs/user-guide.md ("Sharding a hunt"); a reader refuses a format or
// version it does not know rather than guess.
const (
	resultsFormat  = "replaycheck-results"
	resultsVersion = 1
)

type resultFile struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Hunt    huntID    `json:"hunt"`
	Shard   shardSpec `json:"shard"`
	// Complete: the shard ran every run of its slice. A shard that
	// stopped at its first failure (no --all), ran out of time or was
	// interrupted did not, and the merged report says so.
	Complete bool   `json:"complete"`
	Stopped  string `json:"stopped"`
	Runs     int    `json:"runs"`
	// FailedRuns: an exploration's runs that failed (with --all, every
	// one, so it may exceed its distinct findings).
	FailedRuns int `json:"failed_runs,omitempty"`
	// Steps: events checked (sim hunts) or simulated (explore).
	Steps    int64         `json:"steps"`
	Failures []huntFailure `json:"failures"`
	// Exit is the code the shard's command exited with.
	Exit int `json:"exit"`
	// Unmatched: the script's tables that matched no object in any of
	// the shard's runs (a misspelt name checks nothing).
	Unmatched []predicates.UnmatchedTable `json:"unmatched_tables,omitempty"`
	// uncounted: an exploration's file with failures and none of --all's
	// counts (written before they were): the merge says no counts.
	uncounted bool
}

// huntID names a hunt: shards whose IDs differ are not slices of one
// hunt, and merging them would report a union that no run covers.
type huntID struct {
	Kind   string `json:"kind"` // "sim" (a seed hunt) or "explore"
	System string `json:"system"`
	Bug    string `json:"bug"`
	// Command is the hunt's command without --shard, --results and -o:
	// every setting that changes which runs are made or what counts.
	Command      string `json:"command"`
	Script       string `json:"script"`
	ScriptSHA256 string `json:"script_sha256"`
	// From fingerprints the recorded run an exploration continues
	// (--from; statedb.Fingerprint): the command names its files by path
	// only, and shards run on traces of one name but of different runs
	// are different hunts.
	From string `json:"from,omitempty"`
}

type shardSpec struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

type huntFailure struct {
	// Seed (sim hunts) or Run (explore) names the failing run.
	Seed *uint64 `json:"seed,omitempty"`
	Run  *int    `json:"run,omitempty"`
	// Runs: an exploration's runs that found it, Run the first (--all).
	Runs      int    `json:"runs,omitempty"`
	Kind      string `json:"kind"` // violation, panic, predicate error, divergence
	Headline  string `json:"headline"`
	Predicate string `json:"predicate,omitempty"`
	Witness   string `json:"witness,omitempty"`
	// AlarmWitness: a liveness alarm's witness when it was raised, where
	// it differs from Witness (the row failing when the interval began).
	AlarmWitness string `json:"alarm_witness,omitempty"`
	Step         int    `json:"step"`
	// AlarmStep: where a liveness alarm was raised (Step is where its
	// interval began), which Debug opens at.
	AlarmStep int `json:"alarm_step,omitempty"`
	// Key tells an exploration's findings apart (predicate and witness,
	// or the panic): merge keeps the first run of each, as --all does.
	Key string `json:"key,omitempty"`
	// Trace is where the shard wrote the run's trace, on its machine
	// ("" if it did not); Reproduce re-creates it from nothing.
	Trace     string `json:"trace,omitempty"`
	Reproduce string `json:"reproduce"`
	Debug     string `json:"debug"`
}

// huntRun names a failing run: its seed (a seed hunt's) or its number
// (an exploration's).
type huntRun struct {
	seed   uint64
	run    int
	bySeed bool
}

func (f huntFailure) run() huntRun {
	if f.Seed != nil {
		return huntRun{seed: *f.Seed, bySeed: true}
	}
	if f.Run != nil {
		return huntRun{run: *f.Run}
	}
	return huntRun{run: -1}
}

func (f huntFailure) order() uint64 {
	if f.Seed != nil {
		return *f.Seed
	}
	if f.Run != nil {
		return uint64(*f.Run)
	}
	return 0
}

func (f huntFailure) name() string {
	if f.Seed != nil {
		return fmt.Sprintf("seed %d", *f.Seed)
	}
	return fmt.Sprintf("run %d", f.order())
}

// maxShards bounds a split: a merge lists the shards it has and misses,
// and a shard skips the runs of those before it, so a count from a typo
// (or a hostile result file) must not cost memory or minutes.
const maxShards = 100_000

// parseShard reads --shard I/N.
func parseShard(spec string) (shardSpec, error) {
	i, n, ok := strings.Cut(spec, "/")
	// Digits only: Atoi takes "+1" too, which names no other shard but
	// is not what the usage says.
	digits := func(s string) (int, error) {
		if s == "" || strings.Trim(s, "0123456789") != "" {
			return 0, strconv.ErrSyntax
		}
		return strconv.Atoi(s)
	}
	index, err1 := digits(i)
	count, err2 := digits(n)
	if !ok || err1 != nil || err2 != nil || count < 1 || index < 0 || index >= count {
		return shardSpec{}, badInput("--shard %q: want I/N, shard I of N counted from 0 (0 <= I < N), e.g. 0/4", spec)
	}
	if count > maxShards {
		return shardSpec{}, badInput("--shard %q: at most %d shards (a merge tracks every one)", spec, maxShards)
	}
	return shardSpec{Index: index, Count: count}, nil
}

// scriptDigest fingerprints a script's text and the modules it loads:
// two machines with the same path but different scripts, or the same
// script loading different helpers, do not run one hunt. A script that
// loads nothing has the digest of its text alone, as before modules
// counted.
func scriptDigest(path string) (string, error) {
	b, err := regular.ReadFile(path, predicates.MaxScriptBytes)
	if err != nil {
		return "", badInput("--check: %v", err)
	}
	h := sha256.New()
	h.Write(b)
	for _, m := range predicates.ScriptModules(path) {
		src, err := predicates.ReadScript(m)
		if err != nil {
			return "", badInput("--check: %s loads %s: %v", path, filepath.Base(m), err)
		}
		fmt.Fprintf(h, "\x00load %s %d\x00", filepath.Base(m), len(src))
		h.Write(src)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// encode writes rf as its file holds it, stamped with the format.
func (rf *resultFile) encode(w io.Writer) error {
	rf.Format, rf.Version = resultsFormat, resultsVersion
	if rf.Failures == nil {
		rf.Failures = []huntFailure{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rf)
}

func writeResults(path string, rf *resultFile) error {
	if err := notOverATrace(path, "the result file"); err != nil {
		return err
	}
	if err := replacesOnlyResults(path); err != nil {
		return err
	}
	return writeAtomic(path, func(w *atomicFile) error { return rf.encode(w) })
}

// replacesOnlyResults refuses to write a result file over a file that is
// not one (notes, a script: --results notes.txt replaced them), as
// traces are written only over traces. A shard run again over its own
// result file is usual.
func replacesOnlyResults(path string) error {
	head, present := headOf(path, 4096)
	if present && !bytes.Contains(head, []byte(`"`+resultsFormat+`"`)) {
		return badInput("%s exists and is not a result file: writing the results there would replace it (remove it, or name another file)", path)
	}
	return nil
}

// maxResultsBytes bounds a result file read whole: one holds a shard's
// failures, kilobytes to a few megabytes.
const maxResultsBytes = 256 << 20

// readResults reads and checks a shard's result file. Its commands run
// prog, this program, or replay: the shards of a sweep may have been run
// by a team's own binary (cli.Main) or by the bundled one.
func readResults(path, prog string) (*resultFile, error) {
	b, err := regular.ReadFile(path, maxResultsBytes)
	if errors.Is(err, regular.ErrTooBig) {
		return nil, badInput("%s: not a result file (they hold at most %d bytes)", path, maxResultsBytes)
	}
	if err != nil {
		return nil, badInput("%v", err)
	}
	var rf resultFile
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&rf); err != nil {
		return nil, badInput("%s: not a result file: %v", path, err)
	}
	if dec.InputOffset() < int64(len(bytes.TrimRight(b, " \t\r\n"))) {
		return nil, badInput("%s: not a result file: more follows its JSON object at byte %d", path, dec.InputOffset())
	}
	switch {
	case rf.Format != resultsFormat:
		return nil, badInput("%s: not a result file (format %q, want %q)", path, rf.Format, resultsFormat)
	case rf.Version != resultsVersion:
		return nil, badInput("%s: result file version %d; this replay reads version %d", path, rf.Version, resultsVersion)
	case rf.Shard.Count < 1 || rf.Shard.Index < 0 || rf.Shard.Index >= rf.Shard.Count || rf.Shard.Count > maxShards:
		return nil, badInput("%s: shard %d/%d is not a shard", path, rf.Shard.Index, rf.Shard.Count)
	case rf.Runs < 0 || rf.Steps < 0 || rf.FailedRuns < 0:
		return nil, badInput("%s: %d runs, %d steps, %d failed runs: counts cannot be negative", path, rf.Runs, rf.Steps, rf.FailedRuns)
	case rf.FailedRuns > rf.Runs:
		return nil, badInput("%s: %d runs, %d of them failed: not a file a hunt wrote as it is (edited?)", path, rf.Runs, rf.FailedRuns)
	case rf.Steps > maxShardSteps || int64(rf.Runs) > maxShardSteps:
		return nil, badInput("%s: %d runs, %d steps: more than a shard can run (%d at most)", path, rf.Runs, rf.Steps, int64(maxShardSteps))
	case !slices.Contains(shardExits, rf.Exit):
		return nil, badInput("%s: the shard exited %d, which a hunt that wrote its results does not (it exits 0, 1, 3, 4 or 130): not a file a hunt wrote as it is (edited?)", path, rf.Exit)
	case rf.Exit == ExitInterrupted && rf.Stopped != "interrupted":
		return nil, badInput("%s: the shard exited %d (interrupted) but says it stopped %q: not a file a hunt wrote as it is (edited?)", path, rf.Exit, rf.Stopped)
	case stopReasons[rf.Hunt.Kind] == nil:
		// Checked before what depends on it (a "hunt": null read as
		// a hunt that writes nothing).
		return nil, badInput("%s: the shard's hunt is of kind %q; a hunt is of kind sim or explore: not a file a hunt wrote as it is (edited?)", path, rf.Hunt.Kind)
	case !slices.Contains(stopReasons[rf.Hunt.Kind], rf.Stopped):
		return nil, badInput("%s: the shard says it stopped %q, which a %q hunt does not write (it writes %s): not a file a hunt wrote as it is (edited?)",
			path, rf.Stopped, rf.Hunt.Kind, strings.Join(stopReasons[rf.Hunt.Kind], ", "))
	case rf.Complete != completes(rf.Hunt.Kind, rf.Stopped) && rf.Stopped != "failure":
		// A seed hunt that stopped at a failure may have been at its
		// slice's last seed.
		return nil, badInput("%s: the shard says it stopped %q and that its slice is complete=%v, which a hunt does not write together: not a file a hunt wrote as it is (edited?)", path, rf.Stopped, rf.Complete)
	}
	// The merged report prints the hunt's command too ("hunt: ..."):
	// it must be one this program writes, as the failures' are.
	hunt, err := asReplayCommand(rf.Hunt.Command, prog)
	if err == nil && hunt == "" {
		err = errors.New("none")
	}
	if err == nil {
		err = replayCommand(hunt)
	}
	if err != nil {
		return nil, badInput("%s: the hunt's command: %s: not a file a hunt wrote as it is (edited?)", path, err)
	}
	if from, to, ok := huntSeeds(rf.Hunt); ok {
		for _, f := range rf.Failures {
			if f.Seed == nil {
				continue
			}
			if s := *f.Seed; s < from || s > to || (s-from)%uint64(rf.Shard.Count) != uint64(rf.Shard.Index) {
				return nil, badInput("%s: a failure of seed %d, which shard %d/%d of seeds %d-%d does not run: not a file a hunt wrote as it is (edited?)", path, s, rf.Shard.Index, rf.Shard.Count, from, to)
			}
		}
	}
	// Each failure is of a run it made, but a run that diverged, which an
	// exploration does not count. One run may break several predicates:
	// explore --all records each distinct finding, so runs are counted,
	// not failures (a new user's two-predicate exploration was refused).
	failed := map[huntRun]bool{}
	for _, f := range rf.Failures {
		if f.Kind != "divergence" {
			failed[f.run()] = true
		}
	}
	if rf.Runs < len(failed) {
		return nil, badInput("%s: %d runs, %d of them failing: not a file a hunt wrote as it is (edited?)", path, rf.Runs, len(failed))
	}
	if err := checkCounts(path, &rf); err != nil {
		return nil, err
	}
	if err := checkRuns(path, &rf); err != nil {
		return nil, err
	}
	for _, f := range rf.Failures {
		if !slices.Contains(failureKinds, f.Kind) {
			return nil, badInput("%s: a failure of kind %q: a hunt writes %s", path, f.Kind, strings.Join(failureKinds, ", "))
		}
		// A violation names its predicate; a panic, a stall and a
		// divergence have none (a violation relabelled a stall kept
		// its predicate).
		if f.Kind != "predicate error" && (f.Kind == "violation") != (f.Predicate != "") {
			return nil, badInput("%s: %s is a %s that names predicate %q: not a file a hunt wrote as it is (edited?)", path, f.name(), f.Kind, f.Predicate)
		}
		// The merged report prints these for its reader to run.
		reproduce, err := asReplayCommand(f.Reproduce, prog)
		if err != nil {
			return nil, badInput("%s: %s's reproduce command: %s: not a file a hunt wrote as it is (edited?)", path, f.name(), err)
		}
		debug, err := asReplayCommand(f.Debug, prog)
		if err != nil {
			return nil, badInput("%s: %s's debug command: %s: not a file a hunt wrote as it is (edited?)", path, f.name(), err)
		}
		for _, c := range []struct{ what, cmd string }{{"reproduce", reproduce}, {"debug", debug}} {
			if err := replayCommand(c.cmd); err != nil {
				return nil, badInput("%s: %s's %s command: %s: not a file a hunt wrote as it is (edited?)", path, f.name(), c.what, err)
			}
		}
		if err := reproducesIt(reproduce, f.Seed, rf.Hunt.System, rf.Hunt.Bug); err != nil {
			return nil, badInput("%s: %s's reproduce command %s: not a file a hunt wrote as it is (edited?)", path, f.name(), err)
		}
		if err := debugsIt(debug, rf.Hunt.Script); err != nil {
			return nil, badInput("%s: %s's debug command %s: not a file a hunt wrote as it is (edited?)", path, f.name(), err)
		}
	}
	byFailures := impliedExit(rf.Hunt.Kind, rf.Failures)
	implied := strictExit(rf.Hunt, byFailures, rf.Unmatched)
	if rf.Exit == ExitOK && len(rf.Failures) > 0 {
		// A hunt records only failures --fail-on counts, and exits with
		// the first one's code.
		return nil, badInput("%s: the shard exited 0 with %d failure(s): not a file a hunt wrote as it is (edited?)", path, len(rf.Failures))
	}
	// The merge ranks the failures, not the shard's exit: a shard that
	// exited for a reason its failures do not give (a predicate error
	// without its failure), or not for the reason they give, is not
	// what a hunt wrote.
	if rf.Exit != implied && rf.Exit != ExitInterrupted {
		gave := "its failures give"
		if implied != byFailures {
			gave = "its tables that matched nothing (--strict-tables) give"
		}
		return nil, badInput("%s: the shard exited %d but %s %d: not a file a hunt wrote as it is (edited?)", path, rf.Exit, gave, implied)
	}
	// An interrupted shard exits 130 whatever it found (and only such a
	// one): the merge counts it as a slice not finished.
	if (rf.Stopped == "interrupted") != (rf.Exit == ExitInterrupted) {
		return nil, badInput("%s: the shard stopped %q but exited %d: not a file a hunt wrote as it is (edited?)", path, rf.Stopped, rf.Exit)
	}
	// An exploration ends at a divergence: no failure comes after one.
	for i, f := range rf.Failures {
		if rf.Hunt.Kind == "explore" && f.Kind == "divergence" && (i != len(rf.Failures)-1 || rf.Stopped != "divergence") {
			return nil, badInput("%s: %s diverged, but the shard went on (stopped %q): not a file a hunt wrote as it is (edited?)", path, f.name(), rf.Stopped)
		}
	}
	return &rf, nil
}

// checkCounts refuses --all's counts a hunt cannot have written: a seed
// hunt writes none; an exploration's failed runs include every run its
// failures name, and each finding was found by one to that many runs. A
// file with failures and no counts at all was written before them.
func checkCounts(path string, rf *resultFile) error {
	counted := rf.FailedRuns != 0 || slices.ContainsFunc(rf.Failures, func(f huntFailure) bool { return f.Runs != 0 })
	switch {
	case !counted:
		rf.uncounted = rf.Hunt.Kind == "explore" && len(rf.Failures) > 0
		return nil
	case rf.Hunt.Kind != "explore":
		return badInput("%s: failed runs counted, which a seed hunt writes no count of: not a file a hunt wrote as it is (edited?)", path)
	}
	runs := map[huntRun]bool{}
	for _, f := range rf.Failures {
		runs[f.run()] = true
	}
	if rf.FailedRuns > 0 && len(rf.Failures) == 0 {
		// Every failed run finds something, if only the first's again.
		return badInput("%s: %d failed runs and no failure: not a file a hunt wrote as it is (edited?)", path, rf.FailedRuns)
	}
	if rf.FailedRuns < len(runs) {
		return badInput("%s: %d failed runs counts without some of the %d runs its failures name: not a file a hunt wrote as it is (edited?)", path, rf.FailedRuns, len(runs))
	}
	for _, f := range rf.Failures {
		if f.Runs < 1 || f.Runs > rf.FailedRuns {
			return badInput("%s: %s was found by %d runs, of the shard's %d failed ones: not a file a hunt wrote as it is (edited?)", path, f.name(), f.Runs, rf.FailedRuns)
		}
	}
	return nil
}

// checkRuns refuses a result file whose runs a hunt cannot have made:
// failures named by the other kind of hunt's numbers, runs outside the
// shard's slice, one run listed twice, more runs than the slice holds,
// or a shard that says it ran its whole slice but counts fewer.
func checkRuns(path string, rf *resultFile) error {
	edited := func(format string, args ...any) error {
		return badInput("%s: "+format+": not a file a hunt wrote as it is (edited?)", append([]any{path}, args...)...)
	}
	i, n := rf.Shard.Index, rf.Shard.Count
	slice := -1 // the runs in the shard's slice, if the command tells
	if from, to, ok := huntSeeds(rf.Hunt); ok {
		// Seeds from+i, from+i+n, ... up to to.
		slice = 0
		if d := to - from; d >= uint64(i) {
			// (d-i)/n, not +1 first: a whole 64-bit range wrapped to 0.
			slice = int(min((d-uint64(i))/uint64(n), maxShardSteps-1) + 1)
		}
	}
	budget := -1
	if m := budgetInCommand.FindStringSubmatch(rf.Hunt.Command); rf.Hunt.Kind == "explore" && m != nil {
		if b, err := strconv.Atoi(m[1]); err == nil {
			budget = b
			// Runs r < b with r%n == i, without b+n overflowing (a budget
			// of 2^63-1 made every shard's slice 0).
			slice = 0
			if i < b {
				slice = (b-1-i)/n + 1
			}
		}
	}
	// A run of an exploration with --all may fail in several ways (one
	// finding per predicate and witness it broke): a run is listed twice
	// only with the same finding.
	seen := map[string]bool{}
	for _, f := range rf.Failures {
		switch {
		case rf.Hunt.Kind == "sim" && (f.Seed == nil || f.Run != nil):
			return edited("a seed hunt's failure named by %s", describeRun(f))
		case rf.Hunt.Kind == "explore" && (f.Run == nil || f.Seed != nil):
			return edited("an exploration's failure named by %s", describeRun(f))
		case f.Run != nil && (*f.Run < 0 || *f.Run%n != i):
			return edited("a failure of run %d, which shard %d/%d does not make", *f.Run, i, n)
		case f.Run != nil && budget >= 0 && *f.Run >= budget:
			return edited("a failure of run %d, past the budget of %d runs", *f.Run, budget)
		case f.Step < 0:
			return edited("a failure at step %d", f.Step)
		case f.AlarmStep != 0 && f.AlarmStep <= f.Step:
			return edited("%s at step %d, raised as an alarm at #%d, before it began", f.name(), f.Step, f.AlarmStep)
		case atOf(f.Debug) >= 0 && atOf(f.Debug) != f.Step && (f.AlarmStep == 0 || atOf(f.Debug) != f.AlarmStep):
			return edited("%s at step %d, but its debug command opens #%d", f.name(), f.Step, atOf(f.Debug))
		case rf.Hunt.Kind == "explore" && f.Key == "":
			// The key is what merge tells findings apart by: without it
			// two different findings would pass for one.
			return edited("%s has no key", f.name())
		case rf.Hunt.Kind == "explore" && f.Kind == "violation" && f.Key != explore.ViolationKey(f.Predicate, f.Witness),
			rf.Hunt.Kind == "explore" && f.Kind == "divergence" && f.Key != divergenceKey(int(f.order())):
			// Another finding's key merged it away as a duplicate.
			return edited("%s's key %q is not its finding's", f.name(), f.Key)
		}
		finding := fmt.Sprintf("%d %s", f.order(), f.Key)
		if seen[finding] {
			return edited("%s is listed twice", f.name())
		}
		seen[finding] = true
	}
	switch {
	case slice >= 0 && rf.Runs > slice:
		return edited("%d runs, but shard %d/%d of this hunt holds %d", rf.Runs, i, n, slice)
	case slice >= 0 && rf.Complete && rf.Stopped != "exhausted" && rf.Runs != slice:
		return edited("complete with %d runs, but shard %d/%d of this hunt holds %d", rf.Runs, i, n, slice)
	}
	return nil
}

// describeRun says how a failure names its run.
func describeRun(f huntFailure) string {
	switch {
	case f.Seed != nil && f.Run != nil:
		return "both a seed and a run"
	case f.Seed != nil:
		return "a seed"
	case f.Run != nil:
		return "a run number"
	}
	return "nothing"
}

var budgetInCommand = regexp.MustCompile(` --budget (\d+)(?: |$)`)

var atInCommand = regexp.MustCompile(` --at (\d+)(?: |$)`)

// atOf is the step a debug command opens (-1: it names none).
func atOf(debug string) int {
	m := atInCommand.FindStringSubmatch(debug)
	if m == nil {
		return -1
	}
	at, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return at
}

// shardExits are the codes a hunt exits with after writing its result
// file: none, a finding, a divergence, a predicate error, interrupted.
var shardExits = []int{ExitOK, ExitViolations, ExitDivergence, ExitPredicateError, ExitInterrupted}

// huntSeeds is the seed range of a seed hunt, from its command.
func huntSeeds(h huntID) (from, to uint64, ok bool) {
	if h.Kind != "sim" {
		return 0, 0, false
	}
	m := seedsInCommand.FindStringSubmatch(h.Command)
	if m == nil {
		return 0, 0, false
	}
	from, err1 := strconv.ParseUint(m[1], 10, 64)
	to, err2 := strconv.ParseUint(m[2], 10, 64)
	return from, to, err1 == nil && err2 == nil && from <= to
}

var seedsInCommand = regexp.MustCompile(` --seeds (\d+)-(\d+)(?: |$)`)

// failureKinds are the kinds of failure a hunt writes.
var failureKinds = []string{"violation", "panic", "stall", "predicate error", "divergence"}

// maxShardSteps bounds a shard's step count: far more than any shard
// runs, and maxShards shards of it still add up without overflow.
const maxShardSteps = 1 << 46

// fromVerb is a hunt's command from its verb on: shards of one sweep
// started as replay on some machines and through go run (or a team's
// binary) on others are one hunt.
func fromVerb(cmd string) string {
	at := -1
	for _, verb := range []string{" sim ", " explore "} {
		if i := strings.Index(cmd, verb); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	if at < 0 {
		return cmd
	}
	return cmd[at+1:]
}

// scriptByPath is the script as a hunt's identity compares it by name:
// not at all when its text's digest is known (shards started from other
// folders or machines name one script by other paths), else its path.
func scriptByPath(h huntID) string {
	if h.ScriptSHA256 != "" {
		return ""
	}
	return h.Script
}

// commandWithoutPaths is a hunt's command less the paths whose contents
// the hunt's identity compares by digest: the script's (--check, when
// ScriptSHA256 is known) and the recording's (--from, when From is).
// Shards started from other folders or machines name them by other paths.
func commandWithoutPaths(h huntID) string {
	words, err := shellWords(h.Command)
	if err != nil {
		return h.Command // not as this program writes it: compared whole
	}
	var kept []string
	for i := 0; i < len(words); i++ {
		if i+1 < len(words) && (words[i] == "--check" && h.ScriptSHA256 != "" || words[i] == "--from" && h.From != "") {
			kept = append(kept, words[i], "PATH")
			i++
			continue
		}
		kept = append(kept, shellword.Quote(words[i]))
	}
	return strings.Join(kept, " ")
}

// huntDiff names the first field in which two hunts differ ("" if none).
// short is a digest's first 12 characters, enough to tell two apart.
func short(digest string) string { return digest[:min(12, len(digest))] }

func huntDiff(a, b huntID) string {
	for _, f := range []struct{ name, a, b string }{
		{"kind", a.Kind, b.Kind}, {"system", a.System, b.System}, {"bug", a.Bug, b.Bug},
		{"script", scriptByPath(a), scriptByPath(b)}, {"script text (with the modules it loads)", short(a.ScriptSHA256), short(b.ScriptSHA256)},
		{"command", fromVerb(commandWithoutPaths(a)), fromVerb(commandWithoutPaths(b))},
		{"recorded run (--from) contents", a.From, b.From},
	} {
		if f.a != f.b {
			return fmt.Sprintf("%s %q vs %q", f.name, f.a, f.b)
		}
	}
	return ""
}

func (a *App) resultsCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "results",
		Short: "Combine the result files of a sharded hunt",
		Long: `Work with the result files that replay sim --seeds ... --shard I/N and
replay explore --shard I/N write (--results FILE): one per shard of a hunt
split across machines.`,
		// Without a Run, a mistyped subcommand ("results mrge") printed this
		// help and exited 0.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return badInput("a subcommand is needed: merge (%s results --help)", a.name())
			}
			if args[0] == "help" { // results help [merge], as the root's help command
				if len(args) > 1 {
					if sub, _, err := cmd.Find(args[1:]); err == nil && sub != cmd {
						return sub.Help()
					}
				}
				return cmd.Help()
			}
			return unknownSubcommand(cmd, args[0], a.name()+" results")
		},
	}
	var asJSON, partial bool
	merge := &cobra.Command{
		Use:   "merge FILES... [--json]",
		Short: "Merge the result files of one hunt's shards into one report",
		Long: `Read the result files of the shards of one hunt and print one report: every
failing run, sorted by seed (or run number), each with the command that
reproduces it from nothing and the command that opens the debugger at the
failure. An exploration's findings are deduplicated as --all does: the first
run of each distinct predicate and witness (or panic).

The files must come from one hunt: the same system, bug, script (by its
text) and settings, shards of the same count, each shard once. Files of
different hunts are refused (exit 2). A missing shard is refused too, since
the merged report would claim seeds no shard ran, unless --partial is given.

Exit codes as the hunt's: 0 no failure, 1 a violation (or panic), 3 some
run's replay diverged from its simulation (a nondeterministic handler), 4
some run could not be fully checked (a predicate failed to evaluate), 130
no failure but a shard was interrupted (its slice was not finished: run it
again) or, with --partial, missing, 2 bad input.`,
		Example: `  replay results merge results/*.json
  replay results merge --json shard-0.json shard-1.json shard-2.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return badInput("missing FILES: the result files of a hunt's shards (--results of %[1]s sim --shard or %[1]s explore --shard)", a.prog())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.mergeResults(args, asJSON, partial)
		},
	}
	merge.Flags().BoolVar(&asJSON, "json", false, "print the merged report as one JSON object")
	merge.Flags().BoolVar(&partial, "partial", false, "merge even if some shards' files are missing (the report lists them)")
	root.AddCommand(merge)
	return root
}

// mergedResults is the merged report (--json).
type mergedResults struct {
	Format   string `json:"format"`
	Version  int    `json:"version"`
	Hunt     huntID `json:"hunt"`
	Shards   int    `json:"shards"`
	Merged   []int  `json:"merged"`
	Missing  []int  `json:"missing"`
	Partial  []int  `json:"incomplete"` // shards that did not run their whole slice
	Complete bool   `json:"complete"`
	Runs     int    `json:"runs"`
	// FailedRuns: as a shard's, summed (explorations).
	FailedRuns int           `json:"failed_runs,omitempty"`
	Steps      int64         `json:"steps"`
	Failures   []huntFailure `json:"failures"`
	Exit       int           `json:"exit"`
	// Unmatched: tables that matched no object in any run of any shard.
	Unmatched []predicates.UnmatchedTable `json:"unmatched_tables,omitempty"`
	unmatched predicates.UnmatchedAcross
}

// maxMergeBytes bounds the result files one merge reads, all together:
// each is held decoded until the report is written.
const maxMergeBytes = 1 << 30

func (a *App) mergeResults(paths []string, asJSON, partial bool) error {
	var total int64
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			total += st.Size()
		}
	}
	if total > maxMergeBytes {
		// Refused before reading any: a failure's fields are bytes to
		// kilobytes, and a hunt's files together are megabytes.
		return badInput("the %d result files hold %s in all; a merge reads at most %s (a hunt's files hold kilobytes per failure: are these result files?)",
			len(paths), humanize.IBytes(uint64(total)), humanize.IBytes(maxMergeBytes))
	}
	var files []*resultFile
	for _, p := range paths {
		rf, err := readResults(p, a.prog())
		if err != nil {
			return err
		}
		if len(files) > 0 {
			first := files[0]
			if d := huntDiff(first.Hunt, rf.Hunt); d != "" {
				return badInput("%s and %s are results of different hunts (%s): merge the shards of one hunt", paths[0], p, d)
			}
			if rf.Shard.Count != first.Shard.Count {
				return badInput("%s is shard %d/%d but %s is of %d shards: merge the shards of one split", p, rf.Shard.Index, rf.Shard.Count, paths[0], first.Shard.Count)
			}
		}
		for i, g := range files {
			if g.Shard.Index == rf.Shard.Index {
				return badInput("%s and %s are both shard %d/%d: give each shard once", paths[i], p, rf.Shard.Index, rf.Shard.Count)
			}
		}
		files = append(files, rf)
	}
	m := mergedResults{Format: resultsFormat, Version: resultsVersion, Hunt: files[0].Hunt, Shards: files[0].Shard.Count,
		Merged: []int{}, Missing: []int{}, Partial: []int{}}
	have := map[int]bool{}
	var interrupted []int // shards stopped by Ctrl-C or SIGTERM
	for _, rf := range files {
		have[rf.Shard.Index] = true
		m.Merged = append(m.Merged, rf.Shard.Index)
		m.Runs += rf.Runs
		m.FailedRuns += rf.FailedRuns
		m.Steps += rf.Steps
		if !rf.Complete {
			m.Partial = append(m.Partial, rf.Shard.Index)
		}
		if rf.Stopped == "interrupted" {
			interrupted = append(interrupted, rf.Shard.Index)
		}
		m.Failures = append(m.Failures, rf.Failures...)
		m.unmatched.Merge(rf.Unmatched, rf.Runs)
	}
	m.Unmatched = m.unmatched.Tables()
	if slices.ContainsFunc(files, func(rf *resultFile) bool { return rf.uncounted }) {
		// A shard without counts: a sum would be too low.
		m.FailedRuns = 0
		for i := range m.Failures {
			m.Failures[i].Runs = 0
		}
	}
	slices.Sort(m.Merged)
	slices.Sort(m.Partial)
	for i := range m.Shards {
		if !have[i] {
			m.Missing = append(m.Missing, i)
		}
	}
	if len(m.Missing) > 0 && !partial {
		return badInput("shard(s) %s of %d missing: the merged report would claim runs no shard made (give every shard's file, or --partial)", intList(m.Missing), m.Shards)
	}
	m.Complete = len(m.Missing) == 0 && len(m.Partial) == 0
	slices.SortStableFunc(m.Failures, func(x, y huntFailure) int { return cmp.Compare(x.order(), y.order()) })
	if m.Hunt.Kind == "explore" {
		// The first run of each distinct finding, as an unsharded
		// exploration with --all reports them, found by the runs of
		// every shard that found it.
		first := map[string]*huntFailure{}
		kept := m.Failures[:0]
		for _, f := range m.Failures {
			if k := first[f.Key]; k != nil {
				k.Runs += f.Runs
				continue
			}
			kept = append(kept, f)
			first[f.Key] = &kept[len(kept)-1]
		}
		m.Failures = kept
	}
	if m.Failures == nil {
		m.Failures = []huntFailure{}
	}
	m.Exit = impliedExit(m.Hunt.Kind, m.Failures) // as the hunt would exit
	slices.Sort(interrupted)
	if m.Exit == ExitOK && (len(interrupted) > 0 || len(m.Missing) > 0) {
		// As the interrupted shard did: a sweep with slices left (or,
		// with --partial, slices no file was given for) is not a clean
		// one, and a script must not take it for one.
		m.Exit = ExitInterrupted
	}
	// --strict-tables judges the tables only of a whole sweep: a slice
	// not run may have matched them.
	m.Exit = strictExit(m.Hunt, m.Exit, m.Unmatched)
	if asJSON {
		enc := json.NewEncoder(a.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(m); err != nil {
			return err
		}
	} else {
		writeMerged(a.Stdout, &m)
	}
	switch m.Exit {
	case ExitOK:
		return nil
	case ExitInterrupted:
		if len(interrupted) == 0 {
			return &exitError{m.Exit, fmt.Errorf("no failure, but shard(s) %s of %d are missing (--partial): their slices were not merged, so the sweep is not clean", intList(m.Missing), m.Shards)}
		}
		return &exitError{m.Exit, fmt.Errorf("no failure, but shard(s) %s were interrupted before the end of their slice: run them again and merge", intList(interrupted))}
	}
	// The error names the first failure of the kind that decided the exit.
	i := slices.IndexFunc(m.Failures, func(f huntFailure) bool { return failureExit(f.Kind) == m.Exit })
	if i < 0 {
		return strictTables(m.Unmatched, m.unmatched.In("run")) // no failure: the tables decided
	}
	f := m.Failures[i]
	switch m.Exit {
	case ExitPredicateError:
		return &exitError{m.Exit, fmt.Errorf("%s: a predicate could not be evaluated (not fully checked)", f.name())}
	case ExitDivergence:
		return &exitError{m.Exit, fmt.Errorf("%s: %s (a nondeterministic handler: not fully checked)", f.name(), f.Headline)}
	}
	return &exitError{m.Exit, fmt.Errorf("%s: %s", f.name(), f.Headline)}
}

// stopReasons are the reasons a shard of each kind of hunt writes for
// stopping: a seed hunt's (hunt.go), an exploration's (explore.Summary's
// Stopped, "canceled" written as "interrupted").
var stopReasons = map[string][]string{
	"sim":     {"done", "failure", "interrupted"},
	"explore": {"budget", "time", "exhausted", "interrupted", "violation", "predicate error", "divergence", "stall"},
}

// strictExit is the exit of a hunt that exited code for its failures,
// after --strict-tables (when the hunt ran with it) judged the tables that
// matched no object in its runs: 4 when nothing else decided.
func strictExit(id huntID, code int, unmatched []predicates.UnmatchedTable) int {
	if code == ExitOK && len(unmatched) > 0 && strings.HasSuffix(id.Command, " --strict-tables") {
		return ExitPredicateError
	}
	return code
}

// impliedExit is the code a hunt of kind exits with after failures (when
// not interrupted): a seed hunt's worst failure's, as worseExit ranks
// them; an exploration stops at a divergence (3), and otherwise exits 4
// for a predicate error and 1 for a violation.
func impliedExit(kind string, failures []huntFailure) int {
	code := ExitOK
	for _, f := range failures {
		if kind == "explore" && f.Kind == "divergence" {
			return ExitDivergence
		}
		code = worseExit(code, failureExit(f.Kind))
	}
	return code
}

// asReplayCommand is cmd with "replay" for the program that starts it,
// when that is prog (this program) or replay; "" stays "" (no command).
func asReplayCommand(cmd, prog string) (string, error) {
	if cmd == "" {
		return "", nil
	}
	for _, p := range []string{prog, "replay"} {
		if rest, ok := strings.CutPrefix(cmd, p+" "); ok && p != "" {
			return "replay " + rest, nil
		}
	}
	first, _, _ := strings.Cut(cmd, " ")
	if prog != "replay" {
		return "", fmt.Errorf("%q runs %q, not %s or replay", cmd, first, prog)
	}
	return "", fmt.Errorf("%q runs %q, not replay", cmd, first)
}

// replayCommand refuses a command that is not one run of replay's own
// verbs written as this program writes commands: words that are bare or
// single-quoted (shellword.Quote), no shell syntax outside quotes, no control
// characters. A result file from another machine may hold anything, and
// the merged report tells its reader to run these.
func replayCommand(cmd string) error {
	if cmd == "" {
		return nil
	}
	if strings.ContainsFunc(cmd, unicode.IsControl) {
		return fmt.Errorf("holds control characters")
	}
	words, err := shellWords(cmd)
	if err != nil {
		return err
	}
	if len(words) < 2 || words[0] != "replay" || !slices.Contains([]string{"sim", "explore", "debug", "verify"}, words[1]) {
		return fmt.Errorf("%q is not a replay sim, explore, debug or verify command", cmd)
	}
	// Files the commands write: a trace (-o, which refuses to replace
	// anything but a trace) and a re-made run's result file; a profile or
	// a database path could name any file of the reader's.
	for i, w := range words {
		name, value, hasValue := strings.Cut(w, "=")
		switch name {
		case "--cpuprofile", "--starlark-profile", "--db":
			return fmt.Errorf("it writes %s, which replay's commands never do", name)
		case "--results":
			if !hasValue && i+1 < len(words) {
				value = words[i+1]
			}
			if !strings.HasSuffix(value, "-results.json") {
				return fmt.Errorf("its --results %q is not a re-made run's result file (NAME-results.json)", value)
			}
		}
	}
	return nil
}

// shellWords splits a command written as this program writes commands
// (words bare or single-quoted by shellword.Quote) into its words; shell
// syntax outside quotes is an error.
func shellWords(cmd string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord := false
	for i := 0; i < len(cmd); {
		switch c := cmd[i]; {
		case c == ' ':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
			i++
			continue
		case c == '\\' && i+1 < len(cmd) && cmd[i+1] == '\'':
			word.WriteByte('\'')
			i += 2
		case c == '\'':
			end := strings.IndexByte(cmd[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("an unclosed quote at byte %d", i)
			}
			word.WriteString(cmd[i+1 : i+1+end])
			i += end + 2
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_./:=,+@%", c) >= 0:
			word.WriteByte(c)
			i++
		default:
			return nil, fmt.Errorf("%q outside quotes at byte %d", c, i)
		}
		inWord = true
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// completes tells whether a hunt of kind that stopped for reason ran its
// whole slice ("failure" can go either way).
func completes(kind, reason string) bool {
	return kind == "sim" && reason == "done" || kind == "explore" && (reason == "budget" || reason == "exhausted")
}

// reproducesIt refuses a reproduce command that makes another run than
// the failure's: another system's, another bug's, or a seed hunt's
// failure reproduced by another seed.
func reproducesIt(reproduce string, seed *uint64, system, bug string) error {
	words := strings.Fields(reproduce)
	if len(words) < 3 {
		return nil // no command (an exploration's run without one)
	}
	if sys := strings.Trim(words[2], "'"); sys != system {
		return fmt.Errorf("runs system %q, not the hunt's %q", sys, system)
	}
	if seed != nil {
		// A seed hunt's run is made again by sim with its seed: an
		// explore command, or a schedule, makes another (a hostile pass
		// merged a seed hunt's failure reproduced by explore).
		_, schedule := lastFlag(words, "--schedule")
		if _, seeded := lastFlag(words, "--seed"); words[1] != "sim" || !seeded || schedule {
			return fmt.Errorf("is not sim with the failing seed (%s)", strings.Join(words[1:min(len(words), 4)], " "))
		}
	}
	if s, ok := lastFlag(words, "--seed"); seed != nil && ok && s != strconv.FormatUint(*seed, 10) {
		return fmt.Errorf("runs seed %s, not %d", s, *seed)
	}
	// A command without --bug runs the system as built without one,
	// unless a schedule or a recording (--from) names the bug.
	runs := "none"
	if b, ok := lastFlag(words, "--bug"); ok {
		runs = b
	} else if _, ok := lastFlag(words, "--schedule"); ok {
		runs = ""
	} else if _, ok := lastFlag(words, "--from"); ok {
		runs = ""
	}
	if want := cmp.Or(bug, "none"); runs != "" && runs != want {
		return fmt.Errorf("runs bug %q, not the hunt's %q", runs, want)
	}
	return nil
}

// debugsIt refuses a debug command a hunt does not write: one that is
// not debug or verify, or a debug that checks another script than the
// hunt's (a hostile pass merged one with --preds /tmp/evil.star).
func debugsIt(debug, script string) error {
	if debug == "" {
		return nil
	}
	words, err := shellWords(debug)
	if err != nil || len(words) < 2 {
		return err
	}
	switch words[1] {
	case "verify":
		return nil
	case "debug":
		// (A file that names no script, as none before it was kept,
		// is not held to one.)
		if p, ok := lastFlag(words, "--preds"); script != "" && (!ok || p != script) {
			return fmt.Errorf("checks %q, not the hunt's script %q", p, script)
		}
		return nil
	}
	return fmt.Errorf("is a %s command, not debug or verify", words[1])
}

// lastFlag is the value a command line gives flag, as the command reads
// it: the last of `--flag V` and `--flag=V` (an edited reproduce command
// of `--bug spec --bug none` ran bug none, where the first was checked).
func lastFlag(words []string, flag string) (string, bool) {
	value, found := "", false
	for i, w := range words {
		switch {
		case w == flag && i+1 < len(words):
			value, found = words[i+1], true
		case strings.HasPrefix(w, flag+"="):
			value, found = strings.TrimPrefix(w, flag+"="), true
		}
	}
	return strings.Trim(value, "'"), found
}

// failureExit is the exit code a hunt's failure of kind gives.
func failureExit(kind string) int {
	switch kind {
	case "predicate error":
		return ExitPredicateError
	case "divergence":
		return ExitDivergence
	}
	return ExitViolations
}

// worseExit is the hunt's exit of two failures': a run not fully checked
// (4: a predicate failed; 3: the replay diverged) outranks a violation,
// as in replay check, and a predicate error a divergence.
func worseExit(a, b int) int {
	rank := func(code int) int {
		switch code {
		case ExitViolations:
			return 1
		case ExitDivergence:
			return 2
		case ExitPredicateError:
			return 3
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// writeMerged writes the merged report; what came from the result files is
// escaped (printable), since a file from another machine may hold
// anything, terminal control sequences included.
func writeMerged(w io.Writer, m *mergedResults) {
	fmt.Fprintf(w, "hunt: %s\n", printable(m.Hunt.Command))
	fmt.Fprintf(w, "shards: %d of %d merged, %s%s, %d steps\n", len(m.Merged), m.Shards, plural(m.Runs, "run"), failedNote(m.FailedRuns), m.Steps)
	if len(m.Missing) > 0 {
		fmt.Fprintf(w, "missing: shard(s) %s: their runs were not made\n", intList(m.Missing))
	}
	if len(m.Partial) > 0 {
		fmt.Fprintf(w, "incomplete: shard(s) %s stopped before the end of their slice (at a first failure without --all, a predicate error, a divergence, a time limit or an interrupt)\n", intList(m.Partial))
	}
	var warn strings.Builder
	m.unmatched.WriteText(&warn, "run")
	for line := range strings.Lines(warn.String()) {
		fmt.Fprintln(w, printable(strings.TrimSuffix(line, "\n")))
	}
	if len(m.Failures) == 0 {
		fmt.Fprintln(w, "no failure")
		return
	}
	fmt.Fprintf(w, "%s:\n", plural(len(m.Failures), "failure"))
	for _, f := range m.Failures {
		fmt.Fprintf(w, "\n%s (%s): %s\n", printable(f.name()), printable(f.Kind), printable(f.Headline))
		writeFoundBy(w, "  ", f.Runs)
		switch {
		case f.AlarmWitness != "":
			fmt.Fprintf(w, "  witness:   %s at the alarm; %s when it began\n", printable(f.AlarmWitness), printable(cmp.Or(f.Witness, "none")))
		case f.Witness != "":
			fmt.Fprintf(w, "  witness:   %s\n", printable(f.Witness))
		}
		if f.Trace != "" {
			fmt.Fprintf(w, "  trace:     %s (on the shard's machine)\n", printable(f.Trace))
		}
		fmt.Fprintf(w, "  reproduce: %s\n  debug:     %s\n", printable(f.Reproduce), printable(f.Debug))
	}
}

// intList writes sorted numbers for a message, runs as ranges ("0-9,
// 12"), at most 20 entries and then how many more numbers there are.
func intList(xs []int) string {
	const most = 20
	var s []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if len(s) == most {
			s = append(s, fmt.Sprintf("and %d more", len(xs)-i))
			break
		}
		if j > i {
			s = append(s, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		} else {
			s = append(s, strconv.Itoa(xs[i]))
		}
		i = j + 1
	}
	return strings.Join(s, ", ")
}

// alarmWitness is a liveness alarm's witness when it was raised, if it is
// not the interval's own (the row failing when it began); "" otherwise.
func alarmWitness(v *predicates.Violation) string {
	if !v.Alarm || v.AlarmWitness == v.Witness {
		return ""
	}
	return v.AlarmWitness
}

// decided is where f became a failure: a liveness alarm where it was
// raised, anything else at its step.
func (f *huntFailure) decided() int {
	if f.AlarmStep > 0 {
		return f.AlarmStep
	}
	return f.Step
}

// alarmStep is where a liveness alarm was raised, for a result file's
// alarm_step (0: not an alarm).
func alarmStep(v *predicates.Violation) int {
	if v.Kind != "liveness" || !v.Alarm {
		return 0
	}
	return v.AlarmStep
}

// failedNote is " (K failed)" after an exploration's run count, or ""
// when none failed (or the count is unknown).
func failedNote(failed int) string {
	if failed == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d failed)", failed)
}

// writeFoundBy says, under a finding that more than one run found, how
// many did (indented by indent).
func writeFoundBy(w io.Writer, indent string, runs int) {
	if runs > 1 {
		fmt.Fprintf(w, "%s(the first of %d runs that found it)\n", indent, runs)
	}
}
