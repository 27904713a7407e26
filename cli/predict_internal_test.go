package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/explore"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
)

// Two predictions found in one future (two witnesses of one break) share
// its trace file: predict wrote the same future twice, as two files a
// new user found byte for byte equal.
func TestPredictionsOfOneFutureShareItsFile(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "pred")
	preds := []*prediction{{run: 102, trace: []byte("future 102")}, {run: 102, trace: []byte("future 102")}, {run: 7, trace: []byte("future 7")}}
	if err := writePredictions(preds, prefix, false); err != nil {
		t.Fatal(err)
	}
	if preds[0].file != prefix+"-1.lz4" || preds[1].file != preds[0].file || preds[2].file != prefix+"-2.lz4" {
		t.Fatalf("files: %s %s %s", preds[0].file, preds[1].file, preds[2].file)
	}
	if _, err := os.Stat(prefix + "-3.lz4"); err == nil {
		t.Fatal("a third file was written")
	}
	if b, err := os.ReadFile(preds[2].file); err != nil || string(b) != "future 7" {
		t.Fatalf("%s: %q %v", preds[2].file, b, err)
	}
}

// The zero time reads as a date in a leaf, where predicates see None and
// the debugger "zero time" (a new user took it for a value): replay
// state and history say so; other times read as times since the start.
func TestShownValue(t *testing.T) {
	start := int64(1767225600) * 1e9 // 2026-01-01T00:00:00Z
	if got := shownValue("0001-01-01T00:00:00Z", start); got != "zero time (None to predicates)" {
		t.Errorf("the zero time: %q", got)
	}
	if got := shownValue("2026-01-01T00:00:02.5Z", start); got != "t=2.5s" {
		t.Errorf("a time: %q", got)
	}
	for _, v := range []string{`"0001-01-01T00:00:00Z"`, "42"} {
		if got := shownValue(v, start); got != v {
			t.Errorf("%s became %q", v, got)
		}
	}
}

// The predicates already violated before the fork step are listed in
// step order, one entry per predicate and step: they were sorted as text
// (#1088 before #208) and a step that broke a predicate for two
// witnesses was listed twice, alike.
func TestPredictListsEarlierViolationsInStepOrder(t *testing.T) {
	var out bytes.Buffer
	a := &App{Stdout: &out}
	earlier := map[string]*predicates.Violation{
		"a": {Predicate: "AtMostOneServer", Step: 1088, Witness: "s1"},
		"b": {Predicate: "AtMostOneServer", Step: 208, Witness: "s2"},
		"c": {Predicate: "AtMostOneServer", Step: 401, Witness: "s1"},
		"d": {Predicate: "AtMostOneServer", Step: 401, Witness: "s3"},
		"e": {Predicate: "Linearizable", Step: 208},
	}
	a.predictText(nil, []string{"t.lz4"}, "p.star", predictFlags{at: 1905}, &predicted{sum: &explore.Summary{}, earlier: earlier}, nil)
	want := "already violated at or before #1905, not predictions: AtMostOneServer (#208), Linearizable (#208), AtMostOneServer (#401, 2 witnesses), AtMostOneServer (#1088)\n"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("got:\n%s\nwant the line:\n%s", out.String(), want)
	}
	// --json: each predicate once (it listed one per witness, without
	// steps), and the steps beside, as the text has them.
	out.Reset()
	if err := a.predictJSON(nil, []string{"t.lz4"}, "p.star", predictFlags{at: 1905}, &predicted{sum: &explore.Summary{}, earlier: earlier}, nil); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Names []string     `json:"already_violated"`
		At    []earlyBreak `json:"already_violated_at"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if want := "[AtMostOneServer Linearizable]"; fmt.Sprint(got.Names) != want {
		t.Errorf("already_violated %v, want %s", got.Names, want)
	}
	if want := "[{AtMostOneServer 208 1} {Linearizable 208 1} {AtMostOneServer 401 2} {AtMostOneServer 1088 1}]"; fmt.Sprint(got.At) != want {
		t.Errorf("already_violated_at %v, want %s", got.At, want)
	}
}

// Traces numbered past what a run wrote are an earlier run's: predict
// names them (a new user took a stale -2 for the new run's second
// future).
func TestLeftoverTraces(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"s-predict-1.lz4", "s-predict-2.lz4", "s-predict-3.lz4", "s-predict-10.lz4", "s-predict-03.lz4", "s-predict-x.lz4", "other-4.lz4"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := leftoverTraces(filepath.Join(dir, "s-predict"), 2)
	want := []string{filepath.Join(dir, "s-predict-3.lz4"), filepath.Join(dir, "s-predict-10.lz4")}
	if !slices.Equal(got, want) {
		t.Errorf("leftovers %q, want %q", got, want)
	}
	if got := leftoverTraces(filepath.Join(dir, "s-predict"), 10); got != nil {
		t.Errorf("leftovers past 10: %q", got)
	}
}

// explore --all lists a finding per predicate and witness: a bug broken
// on per-key rows came out as 13 findings, read as 13 bugs. The summary
// counts them by predicate when one was found at several witnesses.
func TestFindingsAreCountedByPredicate(t *testing.T) {
	v := func(pred, witness string) *explore.Finding {
		return &explore.Finding{Violation: &predicates.Violation{Predicate: pred, Witness: witness}}
	}
	found := []*explore.Finding{v("Atomicity", "p3 Txs[6]"), v("AbortOnlyWithCause", "coord Txs[2]"), v("Atomicity", "p1 Txs[9]"),
		{Panic: &node.PanicError{Node: "n1", Kind: node.KindRecv, Value: "boom"}}}
	want := "findings by predicate: Atomicity 2, AbortOnlyWithCause 1, a handler's panic 1 (one predicate at several witnesses is often one bug)"
	if got := findingsByPredicate(found); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := findingsByPredicate(found[:2]); got != "" {
		t.Errorf("two predicates found once each: %q", got)
	}
}

// With --jobs, each segment's checker notes a slow predicate once: the
// note came once per segment. onceEach passes on the first of each name.
func TestSlowNotesComeOnceAcrossSegments(t *testing.T) {
	var got []string
	say := onceEach(func(s predicates.SlowEvaluation) { got = append(got, s.Kind+" "+s.Name) })
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			say(predicates.SlowEvaluation{Name: "Odd", Kind: "safety"})
			say(predicates.SlowEvaluation{Name: "log", Kind: "derived"})
		})
	}
	wg.Wait()
	slices.Sort(got)
	if want := []string{"derived log", "safety Odd"}; !slices.Equal(got, want) {
		t.Errorf("notes %v, want %v", got, want)
	}
}

// predict's progress line leaves out the states a strategy does not
// count: random counts none, and the line (the debugger's status too)
// said "0 distinct states" of futures that had many.
func TestPredictProgressOfRandomCountsNoStates(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "p.lz4")
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb, Terminal: true}
	if code := app.Run([]string{"sim", "paxos", "--seed", "1", "--steps", "400", "-o", trace}); code != ExitOK {
		t.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	app.Run([]string{"predict", trace, "builtin:paxos", "--at", "200", "--budget", "400", "--strategy", "random", "-o", filepath.Join(t.TempDir(), "f")})
	if !strings.Contains(errb.String(), "predicting from #200: ") {
		t.Fatalf("no progress line:\n%q", errb.String())
	}
	if strings.Contains(errb.String(), "distinct states") || strings.Contains(out.String(), "distinct states") {
		t.Fatalf("random's futures are said to have distinct states:\n%q\n%s", errb.String(), out.String())
	}
}
