package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/replaycheck/replaycheck/critical"
	"github.com/replaycheck/replaycheck/statedb"
)

// The searches behind p and c live in the command line (replay predict,
// replay critical); the debugger gets them as functions in its Config,
// so that it knows nothing of flags, defaults or where branch traces go.

// PredictFunc explores the futures of the world after step of traces,
// checked against script, and writes each predicted violation's branch
// trace. progress hears what it is doing; ctx ending stops it with what it
// found (Predicted.Stopped "canceled"), not an error.
type PredictFunc func(ctx context.Context, traces []string, script string, step int, progress func(string)) (*Predicted, error)

// CriticalFunc searches the critical transition of the liveness
// predicate's alarm whose interval holds step alarm (replay critical
// --alarm) in traces and writes a recovering walk from the last live
// step. ctx ending stops it with the bounds found so far.
type CriticalFunc func(ctx context.Context, traces []string, script, predicate string, alarm int, progress func(string)) (*Transition, error)

// Predicted is what predict found from a step.
type Predicted struct {
	From        int
	Predictions []Prediction // by step, then predicate and witness
	Earlier     []string     // predicates already violated at or before From: "P (#N)"
	Notes       []string     // futures that failed otherwise (a handler panicked)
	Futures     int
	// Stopped says why the search ended: "budget", "exhausted", "time",
	// "canceled" (Esc: the list holds what was found by then).
	Stopped string
}

// Prediction is one distinct safety violation a future reached, with the
// shortest path found to it.
type Prediction struct {
	Predicate string
	Witness   string
	Step      int    // where it happens, in the branch trace
	Trace     string // the branch trace: the recording up to From, then the future
}

// Transition is a critical-transition search's result.
type Transition struct {
	Predicate string
	// Interval is the alarm's interval searched, as the Violations panel
	// shows it ("#1818..#2226"; set by the debugger).
	Interval string
	// Critical is the critical step (-1: walks from the last step recover,
	// the run is not doomed where it ends); LastLive the latest probe
	// before it from which a walk recovered (-1: doomed from the first).
	Critical, LastLive int
	Probes             []critical.Probe
	Walks              int    // walks per probe
	Recovering         string // trace of a recovering walk forked after LastLive ("" none)
	Stopped            string // "canceled" when Esc stopped it: Critical and LastLive bound the transition
	// BecameLost: messages a fork takes as lost from the critical step on
	// (their receiver's clock passed their latency window), each a Lost.
	BecameLost []Lost
	// Notes are what the search says beside its answer (walks that
	// panicked, nodes the walks restarted), as replay critical prints.
	Notes []string
}

// name is the predicate and the interval searched.
func (r *Transition) name() string {
	if r.Interval == "" {
		return r.Predicate
	}
	return r.Predicate + " " + r.Interval
}

// Lost is a message that became lost at the critical step: the run lost it
// when it was sent, at SendStep, or, with ReceiverDown, its receiver was
// down (since its crash at CrashStep) as its latency window closed.
type Lost struct {
	Type         string
	From, To     string
	SendStep     int
	ReceiverDown bool
	CrashStep    int
}

// startSearch runs a background search (predict, critical, or opening a
// branch's database) that keeps keys working, shows progress in the
// status line and stops on Esc. One at a time per trace.
func (m *Model) startSearch(name string, run func(ctx context.Context, progress func(string)), done func()) {
	ctx, cancel := context.WithCancel(context.Background())
	t := &Task{Name: name}
	t.Text = func(progress func(string)) { run(ctx, progress) }
	t.Done = func() {
		cancel()
		done()
	}
	m.search, m.searchNote, m.stopSearch = t, name, cancel
	m.tasks = append(m.tasks, t)
}

// searching says, when a search runs, that another cannot start.
func (m *Model) searching() bool {
	if m.search != nil {
		m.say("%s is still running (Esc stops it)", m.search.Name)
		return true
	}
	return false
}

// ProgressText records a background search's progress for the status line.
func (m *Model) ProgressText(t *Task, s string) {
	if t == m.search {
		m.searchNote = s
	}
}

// StopSearch stops the running search; it ends with what it found.
func (m *Model) StopSearch() {
	if m.search != nil {
		m.stopSearch()
		m.searchNote = m.search.Name + ": stopping"
	}
}

// Predict explores the futures of the cursor's step in the background
// and lists the violations they reach. A finished search from the same
// step is shown again, not run again (the searches are seeded: the same
// step, the same futures).
func (m *Model) Predict() {
	script := m.script()
	switch {
	case m.cfg.Predict == nil:
		m.fail("predict is not available in this session")
		return
	case script == "":
		m.fail("p needs a predicates file to check the futures against: start with --preds FILE")
		return
	case m.pos < 0:
		m.say("p predicts from the cursor's step: step forward first")
		return
	case m.searching():
		return
	}
	if r := m.predicted[m.pos]; r != nil {
		m.showPredicted(r)
		return
	}
	from, traces, predict := m.pos, m.cfg.Traces, m.cfg.Predict
	var res *Predicted
	var err error
	m.startSearch(fmt.Sprintf("predicting from #%d", from), func(ctx context.Context, progress func(string)) {
		res, err = predict(ctx, traces, script, from, progress)
	}, func() {
		if err != nil {
			m.fail("predict from #%d: %v", from, err)
			return
		}
		if res.Stopped != "canceled" {
			m.predicted[from] = res
		}
		m.showPredicted(res)
	})
}

// showPredicted lists what predict found; Enter opens a branch.
func (m *Model) showPredicted(r *Predicted) {
	stopped := map[string]string{"budget": "the budget ran out", "exhausted": "every future within the depth explored",
		"time": "the time ran out", "canceled": "stopped (Esc): this is what was found by then"}[r.Stopped]
	p := &popup{title: fmt.Sprintf("predicted from #%d: %d violation(s) in %d futures; Enter opens the branch at its violation, b comes back",
		r.From, len(r.Predictions), r.Futures)}
	for _, pr := range r.Predictions {
		text := fmt.Sprintf("%-28s witness %-16s %3d steps after #%d (#%d of %s)", pr.Predicate, orNone(pr.Witness), pr.Step-r.From, r.From, pr.Step, filepath.Base(pr.Trace))
		p.items = append(p.items, popupItem{text: text, step: pr.Step, style: StyleViolation, act: func() {
			m.popup = nil
			m.openBranch(pr.Trace, pr.Step, r.From, fmt.Sprintf("%s violated at #%d, %d steps after the fork", pr.Predicate, pr.Step, pr.Step-r.From))
		}})
	}
	info := func(format string, args ...any) {
		p.items = append(p.items, popupItem{text: fmt.Sprintf(format, args...), step: -1, style: StyleDim})
	}
	if len(r.Predictions) == 0 {
		info("no safety violation predicted within %d futures", r.Futures)
	}
	for _, n := range r.Notes {
		info("%s", n)
	}
	if len(r.Earlier) > 0 {
		info("already violated at or before #%d, not predictions: %s", r.From, strings.Join(r.Earlier, ", "))
	}
	info("%s. A prediction is a future the search reached; none means none within the budget.", stopped)
	p.onEnter = func(it popupItem) {
		if it.act == nil {
			m.say("that line is not a prediction")
			return
		}
		it.act()
	}
	m.popup = p
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// alarmHere is the liveness alarm c traces back: the one selected in the
// Violations panel when it has the focus (that row, not another alarm of
// its predicate), else the first whose interval holds the cursor.
func (m *Model) alarmHere() (statedb.Violation, bool) {
	if m.preds == nil {
		return statedb.Violation{}, false
	}
	vs := m.preds.Violations
	if m.focus == PanelViolations && m.violSel < len(m.listed) {
		v := vs[m.listed[m.violSel]]
		return v, v.Kind == "liveness" && v.Alarm
	}
	for _, v := range vs {
		if v.Kind == "liveness" && v.Alarm && v.Step <= m.pos && (v.EndStep < 0 || m.pos <= v.EndStep) {
			return v, true
		}
	}
	return statedb.Violation{}, false
}

// Critical searches the critical transition of the liveness alarm at the
// cursor (or selected) in the background, then goes to the critical step
// and shows the probes. A finished search is shown again, not re-run.
func (m *Model) Critical() {
	if m.resultsPending() {
		return
	}
	script := m.script()
	v, ok := m.alarmHere()
	switch {
	case m.cfg.Critical == nil:
		m.fail("the critical-transition search is not available in this session")
		return
	case !ok:
		m.say("c traces back a liveness alarm: put the cursor inside an alarm's interval (v goes to one) or select one in the Violations panel")
		return
	case m.searching():
		return
	}
	// By predicate and interval: each alarm of a predicate has its own.
	pred, interval := v.Predicate, intervalText(v)
	key := pred + " " + interval
	if r := m.transitions[key]; r != nil {
		m.showTransition(r, true)
		return
	}
	traces, search, alarm := m.cfg.Traces, m.cfg.Critical, v.Step
	var res *Transition
	var err error
	m.startSearch("critical transition of "+key, func(ctx context.Context, progress func(string)) {
		res, err = search(ctx, traces, script, pred, alarm, progress)
	}, func() {
		if err != nil {
			m.fail("critical transition of %s: %v", key, err)
			return
		}
		res.Interval = interval
		if res.Stopped != "canceled" {
			m.transitions[key] = res
		}
		m.showTransition(res, true)
	})
}

// showTransition goes to the critical step (if jump), says the last live
// step's recovery rate and the probes' sparkline in the status line, and
// lists the probes with the recovering walk to open.
func (m *Model) showTransition(r *Transition, jump bool) {
	last, _ := probeOf(r.Probes, r.LastLive)
	var summary string
	switch {
	case r.Critical < 0:
		summary = fmt.Sprintf("%s: walks from the last step recover; the run is not doomed where it ends (no critical transition)", r.name())
	case r.LastLive < 0:
		summary = fmt.Sprintf("%s: doomed from the first probed step #%d (no walk recovered)", r.name(), r.Critical)
	default:
		summary = fmt.Sprintf("critical step of %s: #%d; last live #%d: %d of %d walks recovered (%.0f%%)",
			r.name(), r.Critical, r.LastLive, last.Recovered, last.Walks, 100*last.Rate())
	}
	if r.Stopped == "canceled" && r.Critical >= 0 {
		summary = fmt.Sprintf("stopped (Esc): the critical step of %s lies in #%d..#%d", r.name(), r.LastLive+1, r.Critical)
	}
	summary += "  probes " + critical.Sparkline(r.Probes)
	if jump && r.Critical >= 0 {
		m.seekOrSay(r.Critical)
	}
	m.say("%s (c: these probes again)", summary)

	p := &popup{title: fmt.Sprintf("critical transition of %s (%d walks per probe; Enter goes to a probe or opens the walk, b comes back)", r.name(), r.Walks)}
	info := func(format string, args ...any) {
		p.items = append(p.items, popupItem{text: fmt.Sprintf(format, args...), step: -1, style: StyleDim})
	}
	info("%s", summary)
	lostAt := -1 // the first message that became lost: the likeliest cause, selected first
	for _, l := range r.BecameLost {
		if lostAt < 0 {
			lostAt = len(p.items)
		}
		text := fmt.Sprintf("at the critical step %s from %s to %s, sent at #%d, became lost: the cause may be its send (Enter goes there)", l.Type, l.From, l.To, l.SendStep)
		cause, said := l.SendStep, fmt.Sprintf("#%d sent the %s that became lost at the critical step", l.SendStep, l.Type)
		if l.ReceiverDown {
			text = fmt.Sprintf("at the critical step %s from %s to %s, sent at #%d, became lost: its window closed with %s down; the cause may be its crash (Enter goes there)", l.Type, l.From, l.To, l.SendStep, l.To)
			cause, said = l.CrashStep, fmt.Sprintf("#%d: %s crashed, and the %s sent to it at #%d became lost at the critical step", l.CrashStep, l.To, l.Type, l.SendStep)
		}
		p.items = append(p.items, popupItem{text: text, step: cause, style: StyleLost, act: func() {
			m.popup = nil
			m.seekOrSay(cause)
			m.say("%s", said)
		}})
	}
	info("probes (recovered/walks by step; · none recovered): %s", critical.Sparkline(r.Probes))
	for _, pr := range r.Probes {
		st := StyleNormal
		what := ""
		switch pr.Step {
		case r.Critical:
			st, what = StyleViolation, "  critical step"
		case r.LastLive:
			what = "  last live step"
		}
		step := pr.Step
		p.items = append(p.items, popupItem{text: fmt.Sprintf("#%-8d %3d/%-3d %-20s%s", pr.Step, pr.Recovered, pr.Walks, strings.Repeat("█", int(pr.Rate()*20+0.5)), what),
			step: step, style: st, act: func() {
				m.popup = nil
				m.seekOrSay(step)
				m.say("probe #%d", step)
			}})
	}
	if r.Recovering != "" && r.LastLive >= 0 {
		p.sel = len(p.items)
		p.items = append(p.items, popupItem{text: fmt.Sprintf("▶ open a recovering walk: %s, forked after #%d", filepath.Base(r.Recovering), r.LastLive),
			step: r.LastLive + 1, style: StyleLink, act: func() {
				m.popup = nil
				m.openBranch(r.Recovering, r.LastLive+1, r.LastLive, fmt.Sprintf("a walk from the last live step #%d where %s recovers", r.LastLive, r.Predicate))
			}})
	}
	if lostAt >= 0 {
		p.sel = lostAt
	}
	for _, n := range r.Notes {
		info("note: %s", n)
	}
	info("These are random walks: a dead step is one from which none of %d walks recovered, not one from which none can.", r.Walks)
	p.onEnter = func(it popupItem) {
		if it.act == nil {
			return
		}
		it.act()
	}
	m.popup = p
}

func probeOf(ps []critical.Probe, step int) (critical.Probe, bool) {
	for _, p := range ps {
		if p.Step == step {
			return p, true
		}
	}
	return critical.Probe{}, false
}

// openBranch opens a branch trace (forked after step fork of this trace)
// in the same debugger at step at: its database is built in the
// background, then the view switches to it. A branch opened before is
// shown again as it was left.
func (m *Model) openBranch(file string, at, fork int, what string) {
	if c := m.children[file]; c != nil {
		m.switchTo = c
		c.say("branch %s again (b: back to #%d)", filepath.Base(file), m.pos)
		return
	}
	if m.searching() {
		return
	}
	reg, preds := m.cfg.Registry, m.script()
	var db *statedb.DB
	var err error
	m.startSearch("opening "+filepath.Base(file), func(ctx context.Context, progress func(string)) {
		db, _, err = statedb.Ensure([]string{file}, "", statedb.Options{Registry: reg, Preds: preds,
			Progress: func(phase string, done, total int) {
				progress(fmt.Sprintf("opening %s: %s step %d of %d", filepath.Base(file), phase, done, total))
			},
			Stop: func() bool { return ctx.Err() != nil }})
	}, func() {
		if err != nil {
			m.fail("open %s: %v", file, err)
			return
		}
		name := ""
		if preds == m.cfg.Preds {
			name = m.cfg.PredsName
		}
		child, err := New(Config{DB: db, Traces: []string{file}, Registry: reg, Preds: preds, PredsName: name, At: at,
			Predict: m.cfg.Predict, Critical: m.cfg.Critical})
		if err != nil {
			db.Close()
			m.fail("open %s: %v", file, err)
			return
		}
		child.parent, child.fork = m, fork
		m.children[file] = child
		m.switchTo = child
		child.say("%s: %s (b: back to %s #%d)", filepath.Base(file), what, filepath.Base(m.cfg.Traces[0]), m.pos)
	})
}

// Back returns from a branch to the trace it was opened from, at the
// step the user left it.
func (m *Model) Back() {
	if m.parent == nil {
		m.say("b goes back from a branch (opened with p or c) to its parent trace; this is the trace you opened")
		return
	}
	m.StopSearch() // its result would land on a trace no longer shown
	m.popup = nil
	m.switchTo = m.parent
	m.parent.say("back from %s at #%d", filepath.Base(m.cfg.Traces[0]), m.parent.pos)
}

// TakeSwitch returns the model the view should show instead of this one
// (a branch opened, or back to its parent), once.
func (m *Model) TakeSwitch() *Model {
	n := m.switchTo
	m.switchTo = nil
	return n
}

// Breadcrumb is the chain of traces from the one opened to this branch,
// with the step each branch forked after ("" for the trace opened).
func (m *Model) Breadcrumb() string {
	if m.parent == nil {
		return ""
	}
	var parts []string
	for c := m; c.parent != nil; c = c.parent {
		parts = append([]string{fmt.Sprintf("%s #%d", filepath.Base(c.parent.cfg.Traces[0]), c.fork)}, parts...)
	}
	return strings.Join(append(parts, filepath.Base(m.cfg.Traces[0])), " › ")
}

// Close closes the databases of the branches opened from this trace
// (the caller closes its own).
func (m *Model) Close() error {
	var first error
	if m.cfg.Building != nil {
		m.cfg.Building.Close() // stops a build still running; nothing half-built is kept
	}
	if m.ownDB {
		defer m.db.Close()
	}
	for _, c := range m.children {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
		if err := c.db.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
