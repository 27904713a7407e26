package tui

// p's search runs beside the UI: keys work while it runs, Esc stops it
// and the list shows what it found by then (issue 13, item 3). The search
// here is a stand-in that finds one violation, then waits to be stopped:
// what is tested is the debugger's handling of it; cli's debug tests run
// the real one.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
)

func TestPredictRunsInTheBackgroundAndEscKeepsWhatItFound(t *testing.T) {
	m, _ := openDemo(t, 200)
	started := make(chan struct{})
	m.cfg.Predict = func(ctx context.Context, traces []string, script string, step int, progress func(string)) (*Predicted, error) {
		close(started)
		found := []Prediction{{Predicate: "GlobalConsistency", Witness: "", Step: step + 7, Trace: traces[0]}}
		for ctx.Err() == nil {
			progress("predicting from #200: 3 futures, 1 violation")
			time.Sleep(5 * time.Millisecond)
		}
		return &Predicted{From: step, Predictions: found, Futures: 3, Stopped: "canceled"}, nil
	}
	u := startUI(t, m)
	u.keys("p")
	<-started
	u.waitFor("predicting from #200: 3 futures")
	if !strings.Contains(u.statusText(), "Esc stops it") {
		t.Fatalf("the status line does not say how to stop the search:\n%s", u.statusText())
	}
	// Keys still work: the cursor moves while the search runs.
	u.press(tcell.KeyRight, 0, 0)
	u.waitFor("State of n")
	if !strings.Contains(u.text(), "at #201 ") {
		t.Fatalf("→ during the search did not step:\n%s", u.text())
	}
	// A second p does not start another search (started would be
	// closed twice: a panic).
	u.keys("p")
	if m.search == nil || !strings.Contains(u.statusText(), "predicting from #200") {
		t.Fatalf("p during the search:\n%s", u.statusText())
	}
	u.press(tcell.KeyEscape, 0, 0)
	u.waitFor("predicted from #200: 1 violation(s) in 3 futures")
	if !strings.Contains(u.text(), "stopped (Esc): this is what was found by then") {
		t.Fatalf("the list does not say the search was stopped:\n%s", u.text())
	}
	if row := u.row("GlobalConsistency", "7 steps after #200"); row == "" {
		t.Fatalf("the list lacks what was found before Esc:\n%s", u.text())
	}
	// A stopped search is not kept as finished: p runs it again.
	u.press(tcell.KeyEscape, 0, 0)
	if m.predicted[200] != nil {
		t.Fatal("a stopped search was kept as the answer for #200")
	}
}

// b on the trace the user opened says there is nothing to go back to;
// it is not a branch.
func TestBackOnTheOpenedTraceSaysSo(t *testing.T) {
	m, _ := openDemo(t, 10)
	m.Back()
	if m.TakeSwitch() != nil || !strings.Contains(m.Status(), "this is the trace you opened") {
		t.Fatalf("b on the opened trace: %q", m.Status())
	}
	m.Critical()
	if !strings.Contains(m.Status(), "not available") {
		t.Fatalf("c without a search: %q", m.Status())
	}
}
