package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestExploreFindsSpec: explore finds paxos's seeded spec bug with no
// help, writes an ordinary trace that replay sim --schedule re-runs to
// the same events and replay check fails, and prints the commands that
// do so.
func TestExploreFindsSpec(t *testing.T) {
	dir := t.TempDir()
	script := paxosScript(t)
	r := replay(t, dir, "explore", "paxos", "--bug", "spec", "--check", script, "--strategy", "pct", "--seed", "2", "-o", "found.lz4")
	if r.code != 1 {
		t.Fatalf("explore: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`(?m)^run (\d+) fails: AcceptedRoundIncreasing violated at step #(\d+)$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no violation line:\n%s", r.stdout)
	}
	for _, want := range []string{
		"reproduce: replay sim paxos --schedule found.lz4 -o found-rerun.lz4",
		"debug:     replay debug found.lz4 --preds " + script + " --at " + m[2],
		"chooser:   pct seed=2 run=" + m[1] + " ",
		"stopped: at the first failing run",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	mustOK(t, replay(t, dir, "sim", "paxos", "--schedule", "found.lz4", "-o", "found-rerun.lz4"))
	a := replay(t, dir, "events", "found.lz4")
	b := replay(t, dir, "events", "found-rerun.lz4")
	mustOK(t, a)
	if a.stdout != b.stdout {
		t.Fatal("the re-run's events differ from the found run's")
	}
	c := replay(t, dir, "check", "found-rerun.lz4", script)
	if c.code != 1 || !strings.Contains(c.stdout, "AcceptedRoundIncreasing (safety) violated at step #"+m[2]) {
		t.Fatalf("check of the re-run: exit %d\n%s", c.code, c.stdout)
	}
	mustOK(t, replay(t, dir, "verify", "found.lz4"))
	// --fail-on decides which findings fail a run, as check's does: with
	// none, the same search finds nothing and says why.
	run, _ := strconv.Atoi(m[1])
	r = replay(t, dir, "explore", "paxos", "--bug", "spec", "--check", script, "--strategy", "pct", "--seed", "2",
		"--budget", strconv.Itoa(run+1), "--fail-on", "none", "-o", "none.lz4")
	if r.code != 0 || !strings.Contains(r.stdout, "no violation counted by --fail-on none") {
		t.Fatalf("--fail-on none: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	badInput(t, replay(t, dir, "explore", "paxos", "--check", script, "--fail-on", "bogus"), "--fail-on")
}

// TestExploreDeterministic: the same seed gives the same found trace, to
// the byte, with --jobs 1 and --jobs 2; --json says where it is.
func TestExploreDeterministic(t *testing.T) {
	dir := t.TempDir()
	script := paxosScript(t)
	var traces [][]byte
	for i, jobs := range []string{"1", "2"} {
		out := []string{"a.lz4", "b.lz4"}[i]
		r := replay(t, dir, "explore", "paxos", "--bug", "spec", "--check", script, "--strategy", "delay-rtc", "--faults", "1",
			"--seed", "4", "--jobs", jobs, "--json", "-o", out)
		if r.code != 1 {
			t.Fatalf("jobs %s: exit %d\n%s%s", jobs, r.code, r.stdout, r.stderr)
		}
		var sum struct {
			Runs    int    `json:"runs"`
			Stopped string `json:"stopped"`
			Found   []struct {
				Run       int    `json:"run"`
				Kind      string `json:"kind"`
				Predicate string `json:"predicate"`
				Trace     string `json:"trace"`
				Reproduce string `json:"reproduce"`
			} `json:"found"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
			t.Fatalf("--json: %v\n%s", err, r.stdout)
		}
		if sum.Stopped != "violation" || len(sum.Found) != 1 || sum.Found[0].Trace != out || sum.Found[0].Kind != "violation" ||
			sum.Found[0].Predicate != "AcceptedRoundIncreasing" || sum.Runs != sum.Found[0].Run+1 {
			t.Fatalf("jobs %s: summary %+v", jobs, sum)
		}
		b, err := os.ReadFile(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		traces = append(traces, b)
	}
	if !bytes.Equal(traces[0], traces[1]) {
		t.Fatal("--jobs 2 found another trace than --jobs 1")
	}
}

// TestExploreExhausts: bfs exhausts paxos's space within 4 decisions
// (the orders of the first inits) and says so, exit 0.
func TestExploreExhausts(t *testing.T) {
	dir := t.TempDir()
	r := replay(t, dir, "explore", "paxos", "--check", paxosScript(t), "--strategy", "bfs", "--depth", "4", "--churn", "0", "--json", "-o", "none.lz4")
	mustOK(t, r)
	var sum struct {
		Exhausted bool `json:"exhausted"`
		States    *int `json:"distinct_states"`
		Runs      int  `json:"runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil || !sum.Exhausted || sum.States == nil || *sum.States == 0 {
		t.Fatalf("summary %s: %v", r.stdout, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.lz4")); !os.IsNotExist(err) {
		t.Fatal("a clean exploration wrote a trace")
	}
	r = replay(t, dir, "explore", "paxos", "--check", paxosScript(t), "--strategy", "bfs", "--depth", "4", "--churn", "0", "-o", "none.lz4")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "stopped: the strategy exhausted its bounded space: every order of the first 4 decisions") || !strings.Contains(r.stdout, "no violation") {
		t.Fatalf("text summary:\n%s", r.stdout)
	}
	// It names the random faults still drawn (paxos drops messages by
	// default), and not churn, which --churn 0 turned off.
	if !strings.Contains(r.stdout, "drawn, not searched: use --drop 0)") || strings.Contains(r.stdout, "--churn 0") {
		t.Fatalf("the hint names the wrong faults:\n%s", r.stdout)
	}
	r = replay(t, dir, "explore", "paxos", "--check", paxosScript(t), "--strategy", "bfs", "--depth", "4", "--churn", "0", "--drop", "0", "-o", "none.lz4")
	mustOK(t, r)
	if strings.Contains(r.stdout, "drawn, not searched") {
		t.Fatalf("a hint without random faults:\n%s", r.stdout)
	}
}

// TestExplorePredicateError: a predicate that cannot be evaluated stops
// the exploration with exit 4, as check, and keeps the run.
func TestExplorePredicateError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.star"), []byte("safety(\"Bad\", lambda: 1 // 0 == 0)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := replay(t, dir, "explore", "paxos", "--check", "bad.star", "--budget", "3", "-o", "bad.lz4")
	if r.code != 4 || !strings.Contains(r.stderr, "not fully checked") {
		t.Fatalf("exit %d, want 4\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.lz4")); err != nil {
		t.Fatalf("the run that could not be checked was not kept: %v", err)
	}
}

// TestExploreBadInput: one line on stderr, exit 2, for every misuse.
func TestExploreBadInput(t *testing.T) {
	dir := t.TempDir()
	script := paxosScript(t)
	base := []string{"explore", "paxos", "--check", script}
	for _, tc := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"explore", "paxos", "--check", script, "--strategy", "annealing"}, []string{"annealing", "random, pct, delay-rr, delay-rtc, delay-prr, bfs, dfs"}},
		{append(base, "--depth", "0"), []string{"--depth 0"}},
		{append(base, "--depth", "-2"), []string{"--depth -2"}},
		{append(base, "--budget", "0"), []string{"--budget 0"}},
		{append(base, "--jobs", "0"), []string{"--jobs 0"}},
		{append(base, "--samples", "3"), []string{"--samples"}},
		{append(base, "--faults", "-1"), []string{"--faults -1"}},
		{append(base, "--fail-stop"), []string{"--fail-stop", "--faults"}},
		{append(base, "--exhaustive"), []string{"--exhaustive", "random"}},
		{append(base, "--time", "0s"), []string{"--time 0s"}},
		{append(base, "--virtual-time", "0s"), []string{"--virtual-time 0s"}},
		{append(base, "--bug", "nonesuch"), []string{"nonesuch", "spec"}},
		{append(base, "--nodes", "0"), []string{"--nodes 0"}},
		{append(base, "-o", ""), []string{"-o"}},
		{append(base, "-o", "nodir/found.lz4"), []string{"nodir"}},
		{[]string{"explore", "nosuch", "--check", script}, []string{"nosuch"}},
		{[]string{"explore", "paxos"}, []string{"--check"}},
		{[]string{"explore", "paxos", "--check", "missing.star"}, []string{"missing.star"}},
		{[]string{"explore", "paxos", "--check", "t.txt"}, []string{"t.txt", ".star"}},
		{[]string{"explore", "--check", script}, []string{"SYSTEM"}},
	} {
		badInput(t, replay(t, dir, tc.args...), tc.wants...)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("bad input left files: %v", entries)
	}
}
