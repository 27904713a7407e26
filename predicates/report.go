package predicates

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"go.starlark.net/starlark"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/stall"
)

// Violation is a safety violation (a point) or a liveness violation (an
// interval from Step to EndStep, EndStep -1 while still open where
// checking ended). Its JSON form depends on the kind (see MarshalJSON);
// the struct tags below are not used for it.
type Violation struct {
	Predicate string    `json:"predicate"`
	Kind      string    `json:"kind"`
	Step      int       `json:"step"`
	Lamport   uint64    `json:"lamport"`
	Node      node.ID   `json:"node"`
	Event     EventInfo `json:"event"`
	Time      int64     `json:"time"` // the event's time, ns since the start of the run
	Witness   string    `json:"witness,omitempty"`
	Aux       AuxValue  `json:"aux,omitempty"`
	// The rest is for liveness intervals. Alarm: the interval was raised
	// (by its alarm function, or open at the end of a run without one);
	// never set for a safety violation, which is a finding as it is.
	EndStep   int  `json:"end_step"`
	Alarm     bool `json:"alarm"`
	AlarmStep int  `json:"alarm_step,omitempty"`
	// AlarmWitness is the interval's witness when it was raised: a row
	// failing then, which need not be the row that failed first (Witness)
	// and may have recovered since.
	AlarmWitness string `json:"alarm_witness,omitempty"`
	EndTime      int64  `json:"end_time,omitempty"` // the closing event's time
	// Duration is how long a closed liveness interval lasted, measured on
	// the time frontier (the latest time of the steps so far), which never
	// goes backwards: causal order is not time order.
	Duration int64 `json:"duration,omitempty"`
	// FirstChecked: Step is the first step a windowed check evaluated
	// (check --from), so the break or interval may have begun before it.
	FirstChecked bool  `json:"first_checked,omitempty"`
	opened       int64 // the frontier when the interval opened
	auxNow       starlark.Value
	auxSet       int // how many times auxNow was computed (segment.go)
	// unjudged: open, without an alarm, where checking stopped before
	// the end of its range (--stop-at-first, a divergence), or not
	// judged because the alarm function had failed.
	unjudged bool
	// open: a liveness interval that has neither closed nor been judged
	// at the end of checking (it may still close, or be raised).
	open bool
}

// Status says what a violation is: "violation" (safety), or for a
// liveness interval "alarm" (raised), "screened" (judged and not raised:
// the stability measures screened it out) or "unjudged" (still open
// without an alarm where checking stopped early, or not judged because
// its alarm function had failed).
func (v *Violation) Status() string {
	switch {
	case v.Kind != "liveness":
		return "violation"
	case v.Alarm:
		return "alarm"
	case v.unjudged:
		return "unjudged"
	}
	return "screened"
}

// Finding reports whether v is a finding: a safety violation or a
// liveness alarm (what --fail-on counts by default).
func (v *Violation) Finding() bool { return v.Kind == "safety" || v.Alarm }

// Judged reports whether v is decided: a safety violation, a liveness
// alarm, or an interval screened (closed, or judged at the end of
// checking, without an alarm). An interval still open, or left unjudged
// where checking stopped, is not.
func (v *Violation) Judged() bool {
	return v.Kind != "liveness" || v.Alarm || (!v.open && !v.unjudged)
}

// JudgedAt is the step at which v was judged: a safety violation where it
// broke, an alarm where it was raised, a screened interval where it
// closed; math.MaxInt for an interval not judged by the last step
// checked (still open, judged only at the end, or left unjudged).
func (v *Violation) JudgedAt() int {
	switch {
	case v.Kind != "liveness":
		return v.Step
	case v.Alarm:
		return v.AlarmStep
	case v.EndStep >= 0:
		return v.EndStep
	}
	return math.MaxInt
}

// stopScan is what --stop-at-first looks at after each step: the
// violations reported since it last looked, and the liveness intervals
// that were open then, which count only once judged (closed and so
// screened, or raised).
type stopScan struct {
	seen    int
	pending []*Violation
}

// from starts a scan at the violations reported from seen on; open are
// the intervals open before that, which it goes on watching.
func (s *stopScan) from(seen int, open []*Violation) {
	s.seen, s.pending = seen, s.pending[:0]
	for _, v := range open {
		if v != nil && v.open {
			s.pending = append(s.pending, v)
		}
	}
}

// counted reports whether a violation among vs that counts was reported
// or judged since the last look.
func (s *stopScan) counted(vs []*Violation, counts func(*Violation) bool) bool {
	found := false
	for ; s.seen < len(vs); s.seen++ {
		v := vs[s.seen]
		if v.open && !v.Alarm {
			s.pending = append(s.pending, v)
			continue
		}
		found = found || counts(v)
	}
	s.pending = slices.DeleteFunc(s.pending, func(v *Violation) bool {
		if v.open && !v.Alarm {
			return false
		}
		found = found || counts(v)
		return true
	})
	return found
}

// EventInfo describes the step's event in a report.
type EventInfo struct {
	Kind    string  `json:"kind"`
	MsgType string  `json:"msg_type,omitempty"`
	Sender  node.ID `json:"sender,omitempty"`
	Timer   string  `json:"timer,omitempty"`
	Task    string  `json:"task,omitempty"` // a task resume: the task's name
}

// AuxValue is a frozen Starlark value (the stability measures), printed as
// Starlark and encoded as JSON.
type AuxValue = starlark.Value

// EvalFailure is a predicate, derived value or stability measure that
// failed at a step (and was disabled): the run was not fully checked.
type EvalFailure struct {
	Name    string `json:"predicate"`
	Kind    string `json:"kind"` // safety, liveness, derived, ordered, or "safety aux", "liveness aux", "liveness alarm"; "state": a node's state (Name) the tables could not read whole; "stuck": a load or evaluation (Name says which) a watch gave up on
	Step    int    `json:"step"`
	Message string `json:"message"`
	// Process: the evaluation ran out of its memory or time budget, which
	// measure the whole process: with other work beside it (explore's
	// --jobs), the failure may be that work's, not the evaluation's.
	Process bool `json:"-"`
}

// String is the failure in one line.
func (e EvalFailure) String() string {
	what := e.Name
	switch e.Kind {
	case "derived":
		what = "derived value " + e.Name
	case "ordered":
		what = "ordered index " + e.Name
	case "safety aux", "liveness aux":
		what = "the aux of " + e.Name
	case "liveness alarm":
		what = "the alarm of " + e.Name
	case "state":
		return fmt.Sprintf("node %s's state could not be read into the tables at step #%d: %s", e.Name, e.Step, e.Message)
	case "stuck":
		if e.Step < 0 {
			return fmt.Sprintf("%s did not return: %s", e.Name, e.Message)
		}
		return fmt.Sprintf("%s did not return at step #%d: %s", e.Name, e.Step, e.Message)
	}
	return fmt.Sprintf("%s failed at step #%d and was disabled: %s", what, e.Step, e.Message)
}

// StuckFailure is the failure of a load or evaluation that a watch gave
// up on (Options.Watch): st as the watch saw it, past StuckBound.
func StuckFailure(st stall.Stuck) EvalFailure {
	return EvalFailure{Name: st.What, Kind: "stuck", Step: st.Step, Process: true,
		Message: fmt.Sprintf("given up on after %v: one Starlark step (a built-in call, or freezing or hashing a value) ran far past the time budget (--script-time), which is looked at only between steps", st.After)}
}

// StuckReport is the report of a check from #0 that a watch gave up on at
// st: the steps before st's were checked, and its failure is its one
// error.
func StuckReport(st stall.Stuck) *Report {
	return &Report{Steps: max(0, st.Step), LastStep: max(-1, st.Step-1), Errors: []EvalFailure{StuckFailure(st)}, Predicates: map[string]*PredicateStats{}}
}

// EvalError is returned (by simtest, and by Report.Err) when something
// failed to evaluate: the run was not fully checked, whatever else the
// report says.
type EvalError struct{ Failures []EvalFailure }

func (e *EvalError) Error() string {
	msg := e.Failures[0].String()
	if n := len(e.Failures) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return msg + "; the run was not fully checked"
}

// Process reports whether a failure ran out of a budget that measures the
// whole process (memory, wall-clock time).
func (e *EvalError) Process() bool {
	for _, f := range e.Failures {
		if f.Process {
			return true
		}
	}
	return false
}

// Err is an *EvalError if a predicate, derived value or stability measure
// failed to evaluate, nil otherwise.
func (r *Report) Err() error {
	if len(r.Errors) == 0 {
		return nil
	}
	return &EvalError{Failures: r.Errors}
}

// PredicateStats counts one predicate's work and findings.
type PredicateStats struct {
	Kind  string `json:"kind"`
	Evals int    `json:"evaluations"`
	// Violations counts findings: safety violations, or liveness alarms.
	Violations int `json:"violations"`
	// Liveness only: alarms, intervals screened out by the stability
	// measures, and intervals left unjudged where checking stopped early.
	Alarms   int `json:"alarms"`
	Screened int `json:"screened"`
	Unjudged int `json:"unjudged"`
	// judged: the liveness predicate has an alarm function, which may
	// screen intervals; without one, an interval that closed is simply
	// not raised.
	judged bool
}

// MarshalJSON leaves the liveness counts out of a safety predicate's.
func (st *PredicateStats) MarshalJSON() ([]byte, error) {
	if st.Kind == "liveness" {
		type plain PredicateStats
		return json.Marshal((*plain)(st))
	}
	return json.Marshal(struct {
		Kind       string `json:"kind"`
		Evals      int    `json:"evaluations"`
		Violations int    `json:"violations"`
	}{st.Kind, st.Evals, st.Violations})
}

// Report is what a check found. Violations holds every safety violation
// and liveness interval (Status tells them apart); its JSON form
// separates them (see ReportJSON).
type Report struct {
	Steps      int // steps evaluated
	Violations []*Violation
	Errors     []EvalFailure
	Predicates map[string]*PredicateStats
	// Complete: checking reached the end of its range; false when it
	// stopped early (at the first finding, at a divergence) or when the
	// trace is incomplete (TraceIncomplete).
	Complete bool
	// TraceIncomplete: checking reached the end of the trace, but the
	// trace lacks part of the run (Options.CutShort: a damaged or missing
	// file, no end record), so its end may not be the run's.
	TraceIncomplete bool
	// LastStep is the last step observed (-1: none).
	LastStep int
	// Unmatched are the tables that matched no object (UnmatchedTable).
	Unmatched []UnmatchedTable
	// Stopped says why checking stopped early, when its caller knows
	// ("the replay diverged at #7, below"): the text report says it
	// beside where it stopped, above counts of 0 that a reader could
	// take for a clean run.
	Stopped string
}

// witnessName names a witness row: its node, and its path when it is not
// the handler itself ("" for none).
func witnessName(w *rowState) string {
	if w == nil {
		return ""
	}
	if w.key.path != "" {
		return string(w.key.node) + " " + w.key.path
	}
	return string(w.key.node)
}

// raise marks p's open interval v raised at this step, with the witness
// failing now.
func (c *Checker) raise(p *Predicate, v *Violation) {
	v.Alarm, v.AlarmStep = true, c.step
	v.AlarmWitness = witnessName(p.frame.witness.witnessRow())
}

// violation records that p became violated at the current step, with
// witness w (nil: none).
func (c *Checker) violation(p *Predicate, w *rowState) *Violation {
	ev := c.ev
	v := &Violation{
		Predicate: p.Name, Kind: p.Kind, Step: c.step, Lamport: ev.Lamport, Node: ev.Node,
		Event: EventInfo{Kind: ev.Kind.String(), MsgType: ev.MsgType, Sender: ev.From, Timer: ev.TimerName, Task: ev.TaskName},
		Time:  ev.Time - c.start, EndStep: -1, opened: c.now, open: p.Kind == "liveness",
	}
	if ev.Kind != node.KindRecv {
		v.Event.Sender = ""
	}
	v.Witness = witnessName(w)
	if p.Kind == "safety" {
		if p.aux != nil && !p.auxFailed {
			if aux, ok := c.evalAux(p, p.aux, nil, &p.auxFailed); ok {
				v.Aux = aux
			}
		}
	}
	c.report.Violations = append(c.report.Violations, v)
	return v
}

// Finish closes the check after its last step: liveness intervals still
// open there are alarms unless an alarm function decided otherwise, and
// statistics are filled in. It returns the report.
func (c *Checker) Finish() *Report { return c.finish(true) }

// finish closes the check; atEnd says whether checking reached the end of
// its range. An interval open where a run was cut short (--stop-at-first,
// a divergence) has not been judged: it is reported open and unjudged,
// not as an alarm, unless its alarm function already raised it.
func (c *Checker) finish(atEnd bool) *Report {
	c.report.TraceIncomplete = atEnd && c.opts.CutShort
	atEnd = atEnd && !c.opts.CutShort
	for _, p := range c.preds {
		if p.open == nil {
			continue
		}
		p.open.unjudged, p.open.open = false, false
		switch {
		case p.open.Alarm:
		case !atEnd || p.alarmFailed || p.disabled:
			// A predicate that failed was not checked after: whether
			// its interval would have closed is unknown.
			p.open.unjudged = true
		case p.alarm == nil:
			c.raise(p, p.open)
		}
		p.open.Aux = firstNonNil(p.open.Aux, p.open.auxNow)
	}
	c.report.Complete, c.report.LastStep = atEnd, c.step
	c.report.setUnmatched(unmatchedTables(c.sightings(), c.reached()))
	for _, p := range c.preds {
		st := &PredicateStats{Kind: p.Kind, Evals: p.Evals, judged: p.alarm != nil}
		c.report.Predicates[p.Name] = st
	}
	c.report.tally()
	return &c.report
}

// tally counts the violations of each predicate into its statistics.
func (r *Report) tally() {
	for _, v := range r.Violations {
		st := r.Predicates[v.Predicate]
		switch v.Status() {
		case "violation":
			st.Violations++
		case "alarm":
			st.Violations++
			st.Alarms++
		case "screened":
			st.Screened++
		case "unjudged":
			st.Unjudged++
		}
	}
}

func firstNonNil(a, b starlark.Value) starlark.Value {
	if a != nil {
		return a
	}
	return b
}

// Decided is the step at which a violation became a finding: a safety
// violation at its step, a liveness interval when it became an alarm (or
// when it opened, if it never did).
func (v *Violation) Decided() int {
	if v.Kind == "liveness" && v.Alarm {
		return v.AlarmStep
	}
	return v.Step
}

// Headline is a violation in a few words: "P violated at step #12", or for
// a liveness alarm "P alarm at step #40 (violated since #12)".
func (v *Violation) Headline() string {
	if v.Kind == "liveness" && v.Alarm {
		return fmt.Sprintf("%s alarm at step #%d (violated since #%d)", v.Predicate, v.AlarmStep, v.Step)
	}
	return fmt.Sprintf("%s violated at step #%d", v.Predicate, v.Step)
}

// setUnmatched records the unmatched tables (warnings: a type only an
// interface holds may be absent from a run, or from the steps and nodes
// checked, without a mistake).
func (r *Report) setUnmatched(u []UnmatchedTable) {
	if r.Steps == 0 {
		return // nothing checked (a divergence at once): nothing to match
	}
	r.Unmatched = u
}
