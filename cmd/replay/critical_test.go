package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// criticalJSON is the part of `replay critical --json` the tests read.
type criticalJSON struct {
	Critical *struct {
		Step        int    `json:"step"`
		Event       string `json:"event"`
		StepsBefore int    `json:"steps_before"`
	} `json:"critical"`
	LastLive *struct {
		Step, Walks, Recovered int
	} `json:"last_live"`
	Probes []struct {
		Step, Walks, Recovered int
	} `json:"probes"`
	Recovering string `json:"recovering_walk"`
}

// TestCriticalTransitionOfStaleSyn: the transport's stale-syn run is
// doomed long before its liveness predicate is judged. The search names a
// step from which no walk recovered, right after a step from which one
// did; the recovering walk it writes really recovers when checked on its
// own; the same seed gives the same answer.
func TestCriticalTransitionOfStaleSyn(t *testing.T) {
	if testing.Short() {
		t.Skip("random walks from a dozen forks: about 10 s")
	}
	dir := t.TempDir()
	star, _ := filepath.Abs("../../scripts/transport.star")
	mustOK(t, replay(t, dir, "sim", "transport", "--bug", "stale-syn", "--seed", "1", "--time", "1500ms", "-o", "stale.lz4"))
	args := []string{"critical", "stale.lz4", star, "--predicate", "AllAcknowledged", "--walks", "4", "--walk-steps", "1500", "--json"}
	r := replay(t, dir, args...)
	mustOK(t, r)
	var out criticalJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if out.Critical == nil || out.LastLive == nil {
		t.Fatalf("no critical step or no live step before it:\n%s", r.stdout)
	}
	if out.LastLive.Step != out.Critical.Step-1 || out.LastLive.Recovered == 0 {
		t.Fatalf("the search did not converge on a live step next to the dead one: last live %+v, critical #%d", *out.LastLive, out.Critical.Step)
	}
	if out.Critical.StepsBefore <= 0 {
		t.Errorf("the critical step #%d is not before the end of the run (%d steps before)", out.Critical.Step, out.Critical.StepsBefore)
	}
	dead := false
	for _, p := range out.Probes {
		if p.Step == out.Critical.Step {
			dead = p.Recovered == 0 && p.Walks == 4
		}
		if p.Step > out.Critical.Step && p.Recovered > 0 {
			t.Errorf("a probe after the critical step recovered: %+v", p)
		}
	}
	if !dead {
		t.Fatalf("the critical step's probe is not dead: %s", r.stdout)
	}
	if !strings.HasPrefix(out.Critical.Event, "#") {
		t.Errorf("the critical event is not a replay events line: %q", out.Critical.Event)
	}
	// Walks get no inputs: the note says so exactly when the critical
	// step is one.
	isInput := strings.Contains(out.Critical.Event, " input ")
	if noted := strings.Contains(r.stderr, "is an external input"); noted != isInput {
		t.Errorf("critical step %q: note about inputs given %v, want %v\n%s", out.Critical.Event, noted, isInput, r.stderr)
	}

	// The recovering walk is an ordinary trace in which the predicate
	// holds at the end.
	c := replay(t, dir, "check", out.Recovering, star, "--json")
	var rep struct {
		Violations []struct {
			Predicate string `json:"predicate"`
		} `json:"violations"`
		Unjudged []struct {
			Predicate string `json:"predicate"`
			EndStep   int    `json:"end_step"`
		} `json:"unjudged"`
		Screened []struct {
			Predicate string `json:"predicate"`
			EndStep   int    `json:"end_step"`
		} `json:"screened"`
	}
	if err := json.Unmarshal([]byte(c.stdout), &rep); err != nil {
		t.Fatalf("check of the recovering walk: %v\n%s%s", err, c.stdout, c.stderr)
	}
	for _, v := range append(rep.Unjudged, rep.Screened...) {
		if v.Predicate == "AllAcknowledged" && v.EndStep < 0 {
			t.Errorf("the recovering walk ends with AllAcknowledged still false")
		}
	}
	for _, v := range rep.Violations {
		if v.Predicate == "AllAcknowledged" {
			t.Errorf("the recovering walk raises an AllAcknowledged alarm")
		}
	}

	again := replay(t, dir, args...)
	mustOK(t, again)
	var out2 criticalJSON
	if err := json.Unmarshal([]byte(again.stdout), &out2); err != nil || out2.Critical == nil || out2.Critical.Step != out.Critical.Step {
		t.Fatalf("the same search again named another step: %s", again.stdout)
	}
}

// TestCriticalRefuses a predicate that is not there, a safety predicate,
// and a liveness predicate the run does not violate.
func TestCriticalRefuses(t *testing.T) {
	dir := t.TempDir()
	star, _ := filepath.Abs("../../scripts/transport.star")
	mustOK(t, replay(t, dir, "sim", "transport", "--seed", "1", "--time", "500ms", "-o", "ok.lz4"))
	badInput(t, replay(t, dir, "critical", "ok.lz4", star), "missing --predicate")
	badInput(t, replay(t, dir, "critical", "ok.lz4", star, "--predicate", "Nope"), `"Nope"`, "AllAcknowledged")
	badInput(t, replay(t, dir, "critical", "ok.lz4", star, "--predicate", "InOrder"), "safety predicate")
	badInput(t, replay(t, dir, "critical", "ok.lz4", star, "--predicate", "AllAcknowledged", "--walks", "0"), "--walks 0")
	badInput(t, replay(t, dir, "critical", "ok.lz4", "--predicate", "AllAcknowledged"), "at least 2")
	badInput(t, replay(t, dir, "critical", "ok.lz4", star, "--predicate", "AllAcknowledged", "--time", "-1s"), "--time -1s")
}

// TestCriticalStopsAtItsTimeLimit: --time ends a long search with what it
// knows (exit 1, said so), instead of running on.
func TestCriticalStopsAtItsTimeLimit(t *testing.T) {
	dir := t.TempDir()
	star, _ := filepath.Abs("../../scripts/transport.star")
	mustOK(t, replay(t, dir, "sim", "transport", "--bug", "stale-syn", "--seed", "1", "--time", "1500ms", "-o", "stale.lz4"))
	r := replay(t, dir, "critical", "stale.lz4", star, "--predicate", "AllAcknowledged", "--walks", "64", "--time", "300ms")
	if r.code != 1 || !strings.Contains(r.stdout, "stopped by --time 300ms") || !strings.Contains(r.stderr, "stopped by --time 300ms after") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestPredictFindsTheSpecBugAhead: from a step 12 events before the spec
// bug's violation, predict reaches a violation of the same predicate,
// writes a branch trace that check confirms at the step it names; from
// the same step of the correct system's run, the same search finds none.
func TestPredictFindsTheSpecBugAhead(t *testing.T) {
	if testing.Short() {
		t.Skip("two explorations of 150 futures: about 15 s")
	}
	dir := t.TempDir()
	star, _ := filepath.Abs("../../scripts/paxos.star")
	mustOK(t, replay(t, dir, "sim", "paxos", "--bug", "spec", "--seed", "8", "-o", "spec.lz4"))
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "8", "-o", "ok.lz4"))
	r := replay(t, dir, "predict", "spec.lz4", star, "--at", "1038", "--budget", "150", "--json")
	if r.code != 1 {
		t.Fatalf("predict: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	var out struct {
		Predicted []struct {
			Predicate  string `json:"predicate"`
			Step       int    `json:"step"`
			StepsAfter int    `json:"steps_after"`
			Trace      string `json:"trace"`
		} `json:"predicted"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Predicted) == 0 {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	p := out.Predicted[0]
	if p.Predicate != "AcceptedRoundIncreasing" || p.StepsAfter != p.Step-1038 || p.StepsAfter <= 0 {
		t.Fatalf("predicted %+v", p)
	}
	c := replay(t, dir, "check", p.Trace, star, "--json")
	if c.code != 1 || !strings.Contains(c.stdout, `"step": `+itoa(p.Step)) {
		t.Fatalf("check of the branch trace (exit %d) does not show the violation at #%d:\n%s", c.code, p.Step, c.stdout)
	}
	ok := replay(t, dir, "predict", "ok.lz4", star, "--at", "1038", "--budget", "150")
	mustOK(t, ok)
	if !strings.Contains(ok.stdout, "no safety violation predicted") {
		t.Fatalf("the correct system's futures:\n%s", ok.stdout)
	}
	badInput(t, replay(t, dir, "predict", "spec.lz4", star), "missing --at")
	badInput(t, replay(t, dir, "predict", "spec.lz4", star, "--at", "99999"), "beyond the trace")
	badInput(t, replay(t, dir, "predict", "spec.lz4", star, "--at", "5", "--strategy", "nope"), `"nope"`)
	// The trace names the build and the nodes: --help does not offer
	// what is refused.
	badInput(t, replay(t, dir, "predict", "spec.lz4", star, "--at", "5", "--bug", "none"), "come from the trace")
	help := replay(t, dir, "predict", "--help")
	mustOK(t, help)
	for _, flag := range []string{"--bug", "--param", "--nodes"} {
		if strings.Contains(help.stdout, "  "+flag+" ") { // a flag line, not the example's sim
			t.Errorf("predict --help offers %s, which predict refuses", flag)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestPredictNotesInputsItsFuturesMiss: futures are forks and get no
// external input; when the recording has some after --at, predict says so.
func TestPredictNotesInputsItsFuturesMiss(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "raftkv", "--seed", "1", "-o", "rk.lz4"))
	r := replay(t, dir, "predict", "rk.lz4", "builtin:raft", "--at", "100", "--budget", "2")
	if !strings.Contains(r.stderr, "external inputs after #100") {
		t.Fatalf("exit %d, no note about later inputs:\n%s", r.code, r.stderr)
	}
}

// A predicate that never holds for --stable makes every probe dead, step
// 0 too: the output says what to look at rather than only that the run
// was doomed from its first step.
func TestCriticalDeadFromTheStartSaysWhy(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "p.lz4"))
	star := filepath.Join(dir, "never.star")
	if err := os.WriteFile(star, []byte("liveness(\"Never\", lambda: False)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := replay(t, dir, "critical", "p.lz4", star, "--predicate", "Never", "--walks", "2", "--walk-steps", "50")
	mustOK(t, r)
	for _, want := range []string{"doomed from the first probed step #0", "raise --walk-steps (50)", "--stable"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestPredictFromAWarmUpPredictsTheSame: futures checked from a warm-up
// after one check of the recording predict what futures checked from #0
// do, with the same branch traces, and the summary says which way each
// was checked.
func TestPredictFromAWarmUpPredictsTheSame(t *testing.T) {
	dir := t.TempDir()
	star, _ := filepath.Abs("../../scripts/paxos.star")
	mustOK(t, replay(t, dir, "sim", "paxos", "--bug", "spec", "--seed", "8", "-o", "spec.lz4"))
	type result struct {
		Futures   int  `json:"futures"`
		Resumed   *int `json:"checked_from_warmup"`
		FromStart *int `json:"checked_from_start"`
		Predicted []struct {
			Predicate string `json:"predicate"`
			Witness   string `json:"witness"`
			Step      int    `json:"step"`
			Future    int    `json:"future"`
			Trace     string `json:"trace"`
		} `json:"predicted"`
		Earlier []string `json:"already_violated"`
	}
	predict := func(warmup string) result {
		r := replay(t, dir, "predict", "spec.lz4", star, "--at", "1038", "--budget", "40", "--warmup", warmup, "--json", "-o", "w"+warmup+".lz4")
		if r.code != 1 {
			t.Fatalf("--warmup %s: exit %d, want 1\n%s%s", warmup, r.code, r.stdout, r.stderr)
		}
		var out result
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		return out
	}
	whole, warm := predict("0"), predict("300")
	if whole.Resumed != nil || whole.FromStart != nil {
		t.Fatalf("--warmup 0 says %v futures were checked from a warm-up", *whole.Resumed)
	}
	if warm.Resumed == nil || *warm.Resumed != warm.Futures || *warm.FromStart != 0 {
		t.Fatalf("--warmup 300: %d futures, checked from the warm-up %v, from #0 %v; want every one from the warm-up", warm.Futures, warm.Resumed, warm.FromStart)
	}
	if len(whole.Predicted) == 0 || len(whole.Predicted) != len(warm.Predicted) || fmt.Sprint(whole.Earlier) != fmt.Sprint(warm.Earlier) {
		t.Fatalf("predicted from #0: %+v (earlier %v)\nfrom a warm-up: %+v (earlier %v)", whole.Predicted, whole.Earlier, warm.Predicted, warm.Earlier)
	}
	for i, p := range whole.Predicted {
		q := warm.Predicted[i]
		if p.Predicate != q.Predicate || p.Witness != q.Witness || p.Step != q.Step || p.Future != q.Future {
			t.Fatalf("prediction %d: %+v from #0, %+v from a warm-up", i, p, q)
		}
		a, errA := os.ReadFile(filepath.Join(dir, p.Trace))
		b, errB := os.ReadFile(filepath.Join(dir, q.Trace))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Fatalf("branch traces %s and %s differ (%v, %v)", p.Trace, q.Trace, errA, errB)
		}
	}
	badInput(t, replay(t, dir, "predict", "spec.lz4", star, "--at", "1038", "--warmup", "-1"), "--warmup")
	badInput(t, replay(t, dir, "explore", "paxos", "--check", star, "--warmup", "100"), "goes with --from")
	// The same words as predict's; and 0, what a fresh exploration does
	// anyway, is not refused.
	badInput(t, replay(t, dir, "explore", "paxos", "--check", star, "--from", "spec.lz4", "--at", "1038", "--warmup", "-1"), "--warmup -1: want 0 or more")
	mustOK(t, replay(t, dir, "explore", "paxos", "--check", star, "--warmup", "0", "--budget", "1", "-o", "w0.lz4"))
}

// predict kept nodes down at the step down in every future without a
// word, where fork says so: a new user read "no safety violation
// predicted" of futures in which two of three replicas never came back.
func TestPredictSaysNodesDownAtTheStepStayDown(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "p.lz4"))
	// n5 crashed at #148 (churn) and is down at #150.
	down := replay(t, dir, "events", "p.lz4", "--kind", "crash", "--limit", "1")
	mustOK(t, down)
	if !strings.HasPrefix(down.stdout, "#148 ") || !strings.Contains(down.stdout, " n5 crash") {
		t.Fatalf("the run's first crash moved: %s", down.stdout)
	}
	const note = "n5, down at #150, stay down in every future: the futures have no churn"
	still := replay(t, dir, "predict", "p.lz4", "builtin:paxos", "--at", "150", "--budget", "3", "--churn", "0")
	mustOK(t, still)
	if !strings.Contains(still.stderr, "predict: note: "+note) {
		t.Errorf("predict --churn 0 of a step with n5 down says nothing of it:\n%s", still.stderr)
	}
	// Under the parent's churn, futures restart it: no note.
	churn := replay(t, dir, "predict", "p.lz4", "builtin:paxos", "--at", "150", "--budget", "3")
	mustOK(t, churn)
	if strings.Contains(churn.stderr, "stay down") {
		t.Errorf("futures with churn are said to keep n5 down:\n%s", churn.stderr)
	}
	// The header names the futures' random faults, which decide what a
	// future can reach (a new user's --churn 1 was left out of it).
	header := func(r result) string { first, _, _ := strings.Cut(r.stdout, "\n"); return first }
	if h := header(churn); !strings.Contains(h, " churn=") {
		t.Errorf("the header of futures with churn does not say so: %s", h)
	}
	if h := header(still); strings.Contains(h, "churn=") {
		t.Errorf("the header of futures without churn names churn: %s", h)
	}
}

// predict judges safety predicates only: a script of liveness
// predicates read "no safety violation predicted" with nothing said of
// them (a new user's membership service).
func TestPredictSaysLivenessIsNotJudged(t *testing.T) {
	dir := t.TempDir()
	star, _ := filepath.Abs("../../scripts/chord.star")
	mustOK(t, replay(t, dir, "sim", "chord", "--seed", "1", "-o", "c.lz4"))
	r := replay(t, dir, "predict", "c.lz4", star, "--at", "50", "--budget", "5")
	if r.code != 0 && r.code != 1 {
		t.Fatalf("predict: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "liveness predicates are not judged in futures: FingersCorrect, RingConsistent") {
		t.Fatalf("predict does not say the liveness predicates were not judged:\n%s", r.stdout)
	}
	j := replay(t, dir, "predict", "c.lz4", star, "--at", "50", "--budget", "5", "--json")
	var out struct {
		Liveness []string `json:"liveness_not_judged"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &out); err != nil || len(out.Liveness) != 2 {
		t.Fatalf("--json: %v %+v\n%s", err, out, j.stdout)
	}
}
