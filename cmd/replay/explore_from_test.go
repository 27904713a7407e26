package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestExploreFromARecordedRun: explore searches the futures of a recorded
// run after a step (a clean paxos run with the spec bug, forked early),
// finds a violation, and the printed command re-runs the exploration to
// the same trace bytes. raftkv, whose state a copy cannot reproduce, is
// explored by rebuilding the world for every run. Bad input is refused.
func TestExploreFromARecordedRun(t *testing.T) {
	dir := t.TempDir()
	paxosStar, _ := filepath.Abs("../../scripts/paxos.star")
	raftStar, _ := filepath.Abs("../../scripts/raft.star")
	chordStar, _ := filepath.Abs("../../scripts/chord.star")
	mustOK(t, replay(t, dir, "sim", "paxos", "--bug", "spec", "--seed", "3", "--churn", "0", "-o", "s3.lz4"))
	mustOK(t, replay(t, dir, "check", "s3.lz4", paxosStar))
	r := replay(t, dir, "explore", "paxos", "--check", paxosStar, "--from", "s3.lz4", "--at", "40",
		"--strategy", "pct", "--budget", "200", "-o", "found.lz4")
	if r.code != 1 {
		t.Fatalf("explore --from: exit %d, want 1 (a violation)\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`(?m)^reproduce: replay (explore .*)$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no reproduce line:\n%s", r.stdout)
	}
	again := replay(t, dir, strings.Fields(m[1])...)
	if again.code != 1 {
		t.Fatalf("the reproduce command: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "found.lz4"))
	b, _ := os.ReadFile(filepath.Join(dir, "found-rerun.lz4"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("the reproduce command wrote other bytes (%d vs %d)", len(a), len(b))
	}
	// With --all, a later finding's command re-makes that finding, not
	// the first (it once stopped at the first failing run).
	r = replay(t, dir, "explore", "paxos", "--check", paxosStar, "--from", "s3.lz4", "--at", "40",
		"--strategy", "pct", "--budget", "12", "--all", "-o", "all.lz4")
	cmds := regexp.MustCompile(`(?m)^reproduce: replay (explore .*) # its trace is the last written: (\S+)$`).FindAllStringSubmatch(r.stdout, -1)
	if r.code != 1 || len(cmds) == 0 {
		t.Fatalf("explore --all: exit %d, want 1 and a second finding's reproduce line\n%s%s", r.code, r.stdout, r.stderr)
	}
	if again := replay(t, dir, strings.Fields(cmds[0][1])...); again.code != 1 {
		t.Fatalf("the second finding's reproduce command: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}
	a, _ = os.ReadFile(filepath.Join(dir, "all-2.lz4"))
	b, _ = os.ReadFile(filepath.Join(dir, cmds[0][2]))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("the second finding's reproduce command wrote other bytes to %s (%d vs %d)", cmds[0][2], len(a), len(b))
	}

	// The found run keeps the recorded steps #0..#40.
	want := replay(t, dir, "events", "s3.lz4", "--limit", "41")
	got := replay(t, dir, "events", "found.lz4", "--limit", "41")
	mustOK(t, want)
	// Each line up to its effects: what a send became (received, or
	// "never received") is each trace's own future.
	events := func(out string) []string {
		var evs []string
		for _, l := range strings.Split(out, "\n") {
			evs = append(evs, strings.SplitN(l, " -> ", 2)[0])
		}
		return evs
	}
	if g, w := events(got.stdout), events(want.stdout); strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Fatalf("the found run's steps #0..#40 differ from the recording's:\n%s\nvs\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}

	mustOK(t, replay(t, dir, "sim", "raftkv", "--seed", "2", "--steps", "400", "-o", "r.lz4"))
	mustOK(t, replay(t, dir, "explore", "raftkv", "--check", raftStar, "--from", "r.lz4", "--at", "300",
		"--strategy", "random", "--budget", "3", "--steps", "200", "--jobs", "2", "-o", "rf.lz4"))

	// The recording must never be overwritten by a finding.
	before, _ := os.ReadFile(filepath.Join(dir, "s3.lz4"))
	badInput(t, replay(t, dir, "explore", "paxos", "--check", paxosStar, "--from", "s3.lz4", "--at", "40", "-o", "s3.lz4"), "also an input")
	if after, _ := os.ReadFile(filepath.Join(dir, "s3.lz4")); !bytes.Equal(before, after) {
		t.Fatal("explore -o overwrote its --from recording")
	}
	badInput(t, replay(t, dir, "explore", "paxos", "--check", paxosStar, "--at", "4"), "--from")
	badInput(t, replay(t, dir, "explore", "paxos", "--check", paxosStar, "--depth", "4", "--strategy", "random"), "--depth")
	badInput(t, replay(t, dir, "explore", "paxos", "--check", paxosStar, "--from", "s3.lz4"), "--at")
	badInput(t, replay(t, dir, "explore", "paxos", "--check", paxosStar, "--from", "s3.lz4", "--at", "999999"), "beyond")
	badInput(t, replay(t, dir, "explore", "chord", "--check", chordStar, "--from", "s3.lz4", "--at", "4"), "paxos", "chord")
	badInput(t, replay(t, dir, "explore", "paxos", "--check", paxosStar, "--from", "s3.lz4", "--at", "4", "--bug", "none"), "--bug")
}

// TestExploreFromIgnoresWhatTheRecordingBroke: every run of a fork
// exploration repeats the recorded steps, so a violation in them is no
// finding (a new user's search reported one at #730 of a fork at #800,
// which shrink then refused as "within the fork's recorded steps"). It is
// said apart, as predict does.
func TestExploreFromIgnoresWhatTheRecordingBroke(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--bug", "no-persist", "--seed", "1", "-o", "np.lz4"))
	r := replay(t, dir, "check", "np.lz4", "builtin:paxos")
	if r.code != 1 || !strings.Contains(r.stdout, "AcceptedRoundIncreasing (safety) violated at step #217") {
		t.Fatalf("the recording should break AcceptedRoundIncreasing at #217: exit %d\n%s", r.code, r.stdout)
	}
	r = replay(t, dir, "explore", "paxos", "--check", "builtin:paxos", "--from", "np.lz4", "--at", "1500",
		"--strategy", "random", "--budget", "3", "--all", "-o", "found.lz4")
	for _, m := range regexp.MustCompile(`(?m)^run \d+ fails: \S+ violated at step #(\d+)$`).FindAllStringSubmatch(r.stdout, -1) {
		if step, _ := strconv.Atoi(m[1]); step <= 1500 {
			t.Errorf("a finding at #%d, within the recorded steps #0..#1500:\n%s", step, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "already violated in the recorded steps, at or before #1500, not findings: AcceptedRoundIncreasing (#217)") {
		t.Errorf("no note of what the recording broke:\n%s", r.stdout)
	}
	r = replay(t, dir, "explore", "paxos", "--check", "builtin:paxos", "--from", "np.lz4", "--at", "1500",
		"--strategy", "random", "--budget", "3", "--all", "--json", "-o", "found-json.lz4")
	var out struct {
		Found []struct {
			Step int `json:"step"`
		} `json:"found"`
		AlreadyViolated   []string `json:"already_violated"`
		AlreadyViolatedAt []struct {
			Predicate string `json:"predicate"`
			Step      int    `json:"step"`
		} `json:"already_violated_at"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("explore --json: %v\n%s", err, r.stdout)
	}
	if !slices.Equal(out.AlreadyViolated, []string{"AcceptedRoundIncreasing"}) {
		t.Errorf("already_violated %v", out.AlreadyViolated)
	}
	if at := fmt.Sprint(out.AlreadyViolatedAt); at != "[{AcceptedRoundIncreasing 217}]" {
		t.Errorf("already_violated_at %s, want [{AcceptedRoundIncreasing 217}]", at)
	}
	for _, fd := range out.Found {
		if fd.Step <= 1500 {
			t.Errorf("--json: a finding at #%d, within the recorded steps", fd.Step)
		}
	}
}

// TestExploreFromCountsWhatIsJudgedAfterTheFork: what the recorded steps
// hold but --fail-on does not count is not "already violated" (raftkv's
// first LeaderExists interval, #0..#41, is screened), and an interval
// open at the fork step but judged after it is the runs' own finding
// under --fail-on any (review).
func TestExploreFromCountsWhatIsJudgedAfterTheFork(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "raftkv", "--seed", "1", "-o", "r.lz4"))
	r := replay(t, dir, "explore", "raftkv", "--check", "builtin:raft", "--from", "r.lz4", "--at", "1000",
		"--strategy", "random", "--budget", "2", "-o", "a.lz4")
	mustOK(t, r)
	if strings.Contains(r.stdout, "already violated") {
		t.Errorf("a screened interval listed as already violated:\n%s", r.stdout)
	}
	r = replay(t, dir, "explore", "raftkv", "--check", "builtin:raft", "--from", "r.lz4", "--at", "20", "--fail-on", "any",
		"--strategy", "random", "--budget", "2", "-o", "b.lz4")
	if r.code != 1 || !strings.Contains(r.stdout, "fails: LeaderExists") || strings.Contains(r.stdout, "already violated") {
		t.Errorf("an interval open at the fork and screened after it, under --fail-on any: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
