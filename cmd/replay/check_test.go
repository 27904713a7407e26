package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

func paxosScript(t *testing.T) string {
	p, err := filepath.Abs("../../scripts/paxos.star")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDemo(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	// --dir relative to where the user is: the printed commands name the
	// files from there.
	r := replay(t, dir, "demo", "--dir", "out")
	mustOK(t, r)
	if time.Since(start) > 10*time.Second {
		t.Logf("demo took %v (the target is under 10s)", time.Since(start))
	}
	m := regexp.MustCompile(`replay debug out/replay-demo.lz4 --preds out/replay-demo.star --at (\d+)`).FindStringSubmatch(r.stdout)
	if m == nil || !strings.Contains(r.stdout, "GlobalConsistency (safety) violated at step #"+m[1]) {
		t.Fatalf("demo output lacks the violation or the debugger command:\n%s", r.stdout)
	}
	for _, f := range []string{"replay-demo.lz4", "replay-demo.star"} {
		if _, err := os.Stat(filepath.Join(dir, "out", f)); err != nil {
			t.Fatalf("demo did not leave %s: %v", f, err)
		}
	}
	// The same trace fails replay check, at the same step.
	r = replay(t, dir, "check", "out/replay-demo.lz4", "out/replay-demo.star")
	if r.code != 1 || !strings.Contains(r.stdout, "violated at step #"+m[1]) {
		t.Fatalf("check of the demo trace: exit %d\n%s", r.code, r.stdout)
	}
	// Again into the same directory: its own files are made again, but a
	// script the user edited there is not replaced (it was, silently).
	mustOK(t, replay(t, dir, "demo", "--dir", "out"))
	edited := []byte("# my refined predicates\n")
	if err := os.WriteFile(filepath.Join(dir, "out", "replay-demo.star"), edited, 0o644); err != nil {
		t.Fatal(err)
	}
	r = replay(t, dir, "demo", "--dir", "out")
	if got, _ := os.ReadFile(filepath.Join(dir, "out", "replay-demo.star")); r.code != 2 || !bytes.Equal(got, edited) || !strings.Contains(r.stderr, "is not the demo's script") {
		t.Fatalf("demo over an edited script: exit %d, script now %.40q\n%s", r.code, got, r.stderr)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	script := paxosScript(t)
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "ok.lz4"))
	r := replay(t, dir, "check", "ok.lz4", script)
	mustOK(t, r)
	if !strings.Contains(r.stdout, "GlobalConsistency                safety    0 violation(s)") {
		t.Fatalf("clean check:\n%s", r.stdout)
	}
	mustOK(t, replay(t, dir, "sim", "paxos", "--bug", "spec", "--seed", "8", "-o", "spec.lz4"))
	r = replay(t, dir, "check", "--json", "spec.lz4", script)
	if r.code != 1 {
		t.Fatalf("check of the spec bug: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Steps      int `json:"steps"`
		Violations []struct {
			Predicate, Kind, Witness, Event string
			Step                            int
			Node                            string
			Alarm                           bool
			EndStep                         int `json:"end_step"`
		} `json:"violations"`
		Errors []any `json:"errors"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if len(rep.Violations) == 0 || rep.Violations[0].Predicate != "AcceptedRoundIncreasing" || rep.Violations[0].Witness == "" || rep.Errors == nil {
		t.Fatalf("--json report: %+v", rep)
	}
	// --fail-on none: the same findings, exit 0.
	mustOK(t, replay(t, dir, "check", "--fail-on", "none", "spec.lz4", script))
	// --to before the violation: nothing found.
	mustOK(t, replay(t, dir, "check", "--to", "10", "spec.lz4", script))

	broken := filepath.Join(dir, "broken.star")
	os.WriteFile(broken, []byte("Agent = table(\"paxos.Agent\")\nsafety(\"X\", lambda: forall(Agent, lambda a: a.Rnd > ))\n"), 0o644)
	badInput(t, replay(t, dir, "check", "ok.lz4", broken), "broken.star:2:")
	badInput(t, replay(t, dir, "check", "ok.lz4", "missing.star"), "missing.star")
	badInput(t, replay(t, dir, "check", "ok.lz4"), "missing FILE... PREDS.star")
	badInput(t, replay(t, dir, "check", "ok.lz4", script, "--fail-on", "sometimes"), "--fail-on")
}

func TestHuntSeeds(t *testing.T) {
	dir := t.TempDir()
	script := paxosScript(t)
	r := replay(t, dir, "sim", "paxos", "--bug", "spec", "--seeds", "1-50", "--check", script, "-o", "found.lz4")
	if r.code != 1 {
		t.Fatalf("hunt: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`seed (\d+) fails`).FindStringSubmatch(r.stdout)
	if m == nil || !strings.Contains(r.stdout, "reproduce: replay sim paxos --seed "+m[1]+" --bug spec -o found.lz4") {
		t.Fatalf("hunt output:\n%s", r.stdout)
	}
	// The written trace is that run: checking it finds the same violation.
	c := replay(t, dir, "check", "found.lz4", script)
	if c.code != 1 || !strings.Contains(c.stdout, "AcceptedRoundIncreasing (safety) violated") {
		t.Fatalf("check of the hunted trace: exit %d\n%s", c.code, c.stdout)
	}
	r = replay(t, dir, "sim", "paxos", "--seeds", "1-20", "--check", script, "-o", "none.lz4")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "20 runs") || !strings.Contains(r.stdout, "no violation") {
		t.Fatalf("clean hunt:\n%s", r.stdout)
	}
	badInput(t, replay(t, dir, "sim", "paxos", "--seeds", "9-2", "--check", script), "--seeds")
	badInput(t, replay(t, dir, "sim", "paxos", "--seeds", "1-2"), "--check")
	badInput(t, replay(t, dir, "sim", "paxos", "--seed", "2", "--seeds", "1-3", "--check", script), "--seed and --seeds")
	badInput(t, replay(t, dir, "sim", "paxos", "--seed", "17", "--check", script), "for seed 17 alone, give --seeds 17-17 --check")
}

// TestRaftCheckWithoutTheLeaderIsNoOutage checks a raftkv run on every
// pair of its three nodes with scripts/raft.star. The pair that leaves
// out the leader still follows it, so LeaderExists must not raise an
// alarm for an outage that never happened (it did: the leader's row is
// absent, and the script saw a leaderless cluster).
func TestRaftCheckWithoutTheLeaderIsNoOutage(t *testing.T) {
	dir := t.TempDir()
	script, err := filepath.Abs("../../scripts/raft.star")
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, replay(t, dir, "sim", "raftkv", "--seed", "1", "-o", "rk.lz4"))
	for _, nodes := range []string{"1,2", "1,3", "2,3"} {
		r := replay(t, dir, "check", "--json", "--nodes", nodes, "rk.lz4", script)
		var rep struct {
			Predicates map[string]struct {
				Alarms   int `json:"alarms"`
				Screened int `json:"screened"`
			} `json:"predicates"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("--nodes %s: %v\n%s%s", nodes, err, r.stdout, r.stderr)
		}
		if le := rep.Predicates["LeaderExists"]; r.code != 0 || le.Alarms != 0 {
			t.Errorf("--nodes %s: exit %d, LeaderExists %+v\n%s", nodes, r.code, le, r.stderr)
		}
	}
}

// slowScript is a predicate that takes about a millisecond per step: a
// check or an index of it is still running when a signal comes.
const slowScript = `def slow():
    n = 0
    for i in range(20000):
        n += i
    return event.step >= 0 and n >= 0

safety("Slow", slow)
`

// slowCheckDir is a directory holding p.lz4, a 20,000-event paxos run,
// and slow.star (slowScript): a check that a signal finds under way.
func slowCheckDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "--steps", "20000", "--time", "1h", "-o", "p.lz4"))
	os.WriteFile(filepath.Join(dir, "slow.star"), []byte(slowScript), 0o644)
	return dir
}

// TestInterruptedCheckReportsWhatItChecked stops a slow check with
// SIGINT: it prints the report of the steps it checked, says where it
// stopped and exits 130 (it printed nothing at all before).
func TestInterruptedCheckReportsWhatItChecked(t *testing.T) {
	dir := slowCheckDir(t)
	// With --jobs too: it died of the signal (130 or 143, nothing
	// printed), a violation found before it lost.
	for _, c := range []struct {
		sig  os.Signal
		jobs string
	}{{os.Interrupt, "1"}, {os.Interrupt, "2"}, {syscall.SIGTERM, "2"}} {
		r := replayInterrupted(t, dir, 1500*time.Millisecond, c.sig, "check", "p.lz4", "slow.star", "--jobs", c.jobs)
		out, errb, code := r.stdout, r.stderr, r.code
		if code != 130 || !strings.Contains(out, "checking stopped early, after #") ||
			!strings.Contains(out, "Slow                             safety    0 violation(s)") ||
			!strings.Contains(errb, "interrupted after step #") {
			t.Fatalf("%v, --jobs %s: exit %d\nstdout: %s\nstderr: %s", c.sig, c.jobs, code, out, errb)
		}
	}
}

// An index stopped by SIGINT or SIGTERM keeps nothing and exits 130: it
// exited 2 (bad input) for SIGINT, and died of SIGTERM leaving its
// partial database and lock behind.
func TestInterruptedIndexKeepsNothing(t *testing.T) {
	dir := slowCheckDir(t)
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		r := replayInterrupted(t, dir, 1500*time.Millisecond, sig, "index", "p.lz4", "--preds", "slow.star")
		if r.code != 130 || !strings.Contains(r.stderr, "stopped before the end: nothing was kept") {
			t.Fatalf("%v: exit %d\nstdout: %s\nstderr: %s", sig, r.code, r.stdout, r.stderr)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if n := e.Name(); n != "p.lz4" && n != "slow.star" {
				t.Errorf("%v: %s left behind", sig, n)
			}
		}
	}
}

// TestFailOnAnyCountsIntervalsOnceJudged: --fail-on any counts screened
// liveness intervals too, but an interval is screened only once it closes
// (or is judged at the end): --stop-at-first stopped at the step chord's
// RingConsistent interval opened and exited 1 on an interval its own
// summary called "not judged" (a new user's trial). It stops where the
// interval closes, judged, and --jobs 2 stops at the same step.
func TestFailOnAnyCountsIntervalsOnceJudged(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "chord", "--seed", "1", "-o", "c.lz4"))
	type report struct {
		LastStep int `json:"last_step"`
		Screened []struct {
			Predicate string `json:"predicate"`
			Status    string `json:"status"`
			Step      int    `json:"step"`
			EndStep   int    `json:"end_step"`
		} `json:"screened"`
	}
	var last []int
	for _, jobs := range []string{"1", "2"} {
		r := replay(t, dir, "check", "c.lz4", "builtin:chord", "--fail-on", "any", "--stop-at-first", "--json", "--jobs", jobs)
		if r.code != 1 {
			t.Fatalf("--jobs %s: exit %d, want 1 (a screened interval counts)\n%s%s", jobs, r.code, r.stdout, r.stderr)
		}
		var rep report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("--jobs %s: %v\n%s", jobs, err, r.stdout)
		}
		closed := false
		for _, s := range rep.Screened {
			if s.Status == "screened" && s.EndStep == rep.LastStep {
				closed = true
			}
		}
		if !closed {
			t.Errorf("--jobs %s: stopped after #%d, where no interval closed: %+v", jobs, rep.LastStep, rep.Screened)
		}
		last = append(last, rep.LastStep)
	}
	if last[0] != last[1] {
		t.Errorf("--jobs 1 stopped after #%d, --jobs 2 after #%d", last[0], last[1])
	}
	// Checking stopped by --to while the interval is open judges nothing:
	// no finding under any.
	r := replay(t, dir, "check", "c.lz4", "builtin:chord", "--fail-on", "any", "--to", "5")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "still open when checking stopped (not judged)") {
		t.Errorf("--to 5: the open interval is not said unjudged:\n%s", r.stdout)
	}
}

// Ctrl-C or SIGTERM while a verb that writes its output only at the end
// was still loading or checking killed it by the signal, with nothing
// said (a hostile pass: export, report, verify). It now ends with one
// line and exit 130, and writes nothing.
func TestInterruptedBeforeOutputSaysSo(t *testing.T) {
	dir := slowCheckDir(t)
	for _, c := range []struct {
		sig  os.Signal
		args []string
	}{
		{os.Interrupt, []string{"export", "p.lz4", "--format", "jsonl", "--preds", "slow.star", "-o", "x.jsonl"}},
		{syscall.SIGTERM, []string{"report", "p.lz4", "slow.star", "-o", "x.html"}},
		// A verb that stops gracefully on Ctrl-C only: SIGTERM (a
		// timeout, a pod stopped) still ends it at once (a review found
		// the first SIGTERM swallowed while the verb waited for Ctrl-C).
		{syscall.SIGTERM, []string{"sim", "paxos", "--steps", "200000000", "--time", "100000h", "-o", "x.lz4"}},
	} {
		r := replayInterrupted(t, dir, 1500*time.Millisecond, c.sig, c.args...)
		if r.code != 130 || !strings.Contains(r.stderr, "replay "+c.args[0]+": interrupted (") {
			t.Fatalf("%v %v: exit %d\nstdout: %s\nstderr: %s", c.sig, c.args, r.code, r.stdout, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, c.args[len(c.args)-1])); !os.IsNotExist(err) {
			t.Fatalf("%v: the output exists: %v", c.args, err)
		}
	}
}

// check --nodes says how many of the steps it checked are the replayed
// nodes' own: "checked 3886 steps" counts them all (predicates run at
// every step), which a user of --nodes 2,3 read as the steps replayed.
func TestCheckNodesSaysHowManyStepsAreTheirs(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "raftkv", "--seed", "2", "-o", "rk.lz4"))
	ev := replay(t, dir, "events", "rk.lz4", "--node", "2,3")
	mustOK(t, ev)
	theirs := strings.Count(ev.stdout, "\n#") + 1
	all := replay(t, dir, "events", "rk.lz4")
	total := strings.Count(all.stdout, "\n#") + 1
	r := replay(t, dir, "check", "rk.lz4", "builtin:raft", "--nodes", "2,3")
	if want := fmt.Sprintf("replays 2 of the 3 nodes, %d of the trace's %d steps", theirs, total); !strings.Contains(r.stderr, want) || theirs >= total {
		t.Fatalf("exit %d; stderr does not say %q:\n%s", r.code, want, r.stderr)
	}
}
