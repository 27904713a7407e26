package tui

// p's search runs beside the UI: keys work while it runs, Esc stops it
// and the list shows what it found by then (issue 13, item 3). The search
// here is a stand-in that finds one violation, then waits to be stopped:
// what is tested is the debugger's handling of it; cli's debug tests run
// the real one.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/replaycheck/replaycheck/critical"
	"github.com/replaycheck/replaycheck/statedb"
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

// c traces back the alarm selected in the Violations panel: that row's
// predicate and interval, not the first alarm of its predicate nor the
// panel's first row (a new user with two liveness predicates at #1818,
// the ▶ row NoStarvation #1818..#2226: Tab Tab c traced back the first
// row, WaiterServed; after Up Down, NoStarvation's first interval). Tab
// to the panel selects the row at the cursor, the ▶ one.
func TestCriticalTracesBackTheSelectedAlarm(t *testing.T) {
	m, _ := openDemo(t, 0)
	p := *m.preds
	p.Violations = []statedb.Violation{
		{Predicate: "WaiterServed", Kind: "liveness", Step: 5, EndStep: 40, Alarm: true, AlarmStep: 20},
		{Predicate: "NoStarvation", Kind: "liveness", Step: 50, EndStep: 60, Alarm: true, AlarmStep: 55},
		{Predicate: "NoStarvation", Kind: "liveness", Step: 70, EndStep: 90, Alarm: true, AlarmStep: 80},
	}
	m.setPredicates(&p)
	m.seekOrSay(70)
	type call struct {
		predicate string
		alarm     int
	}
	calls := make(chan call, 10)
	m.cfg.Critical = func(ctx context.Context, traces []string, script, predicate string, alarm int, progress func(string)) (*Transition, error) {
		calls <- call{predicate, alarm}
		crit := alarm - 3 // a step of the interval's own: where the stand-in says it became doomed
		return &Transition{Predicate: predicate, Critical: crit, LastLive: crit - 1, Walks: 2,
			Probes: []critical.Probe{{Step: crit - 1, Walks: 2, Recovered: 1}, {Step: crit, Walks: 2}}}, nil
	}
	u := startUI(t, m)
	want := func(how string, w call) {
		t.Helper()
		select {
		case c := <-calls:
			if c != w {
				t.Fatalf("%s: c traced back %s's alarm holding #%d, want %s's holding #%d:\n%s", how, c.predicate, c.alarm, w.predicate, w.alarm, u.text())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: c started no search:\n%s", how, u.text())
		}
		u.waitFor(fmt.Sprintf("critical step of %s #%d..", w.predicate, w.alarm))
		u.press(tcell.KeyEscape, 0, 0) // the probes' list
	}

	// The cursor is at #70, NoStarvation's second interval (▶): Tab Tab
	// focuses the panel on that row.
	u.keys("\t\t")
	if m.Focus() != PanelViolations {
		t.Fatalf("Tab Tab focused panel %d, want the Violations panel", m.Focus())
	}
	u.keys("c")
	want("Tab Tab c at #70", call{"NoStarvation", 70})
	// The cursor went to #67; the selection stays. Up selects
	// NoStarvation's first interval: c traces back that one, not the
	// second one's result again.
	u.press(tcell.KeyUp, 0, 0)
	u.keys("c")
	want("Up c", call{"NoStarvation", 50})
	// Up Down back to the second interval: its result is shown again,
	// not searched again, and it is the second interval's.
	u.press(tcell.KeyUp, 0, 0)
	u.press(tcell.KeyDown, 0, 0)
	u.press(tcell.KeyDown, 0, 0)
	u.keys("c")
	u.waitFor("critical step of NoStarvation #70..#90: #67")
	select {
	case c := <-calls:
		t.Fatalf("c on a searched alarm searched again (%v)", c)
	default:
	}
	u.press(tcell.KeyEscape, 0, 0)
	// The first row, another predicate.
	u.press(tcell.KeyUp, 0, 0)
	u.press(tcell.KeyUp, 0, 0)
	u.keys("c")
	want("first row", call{"WaiterServed", 5})
}
