package predicates

import (
	"fmt"

	"go.starlark.net/starlark"

	"github.com/replaycheck/replaycheck/node"
)

// Violation is a safety violation (a point) or a liveness violation (an
// interval from Step to EndStep, EndStep -1 while still open at the end).
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
	EndStep   int       `json:"end_step"`
	Alarm     bool      `json:"alarm"`
	AlarmStep int       `json:"alarm_step,omitempty"`
	EndTime   int64     `json:"end_time,omitempty"` // the closing event's time
	// Duration is how long a closed liveness interval lasted, measured on
	// the time frontier (the latest time of the steps so far), which never
	// goes backwards: causal order is not time order.
	Duration int64 `json:"duration,omitempty"`
	opened   int64 // the frontier when the interval opened
	auxNow   starlark.Value
}

// EventInfo describes the step's event in a report.
type EventInfo struct {
	Kind    string  `json:"kind"`
	MsgType string  `json:"msg_type,omitempty"`
	Sender  node.ID `json:"sender,omitempty"`
	Timer   string  `json:"timer,omitempty"`
}

// AuxValue is a frozen Starlark value (the stability measures), printed as
// Starlark and encoded as JSON.
type AuxValue = starlark.Value

// EvalFailure is a predicate, derived value or stability measure that
// failed at a step (and was disabled): the run was not fully checked.
type EvalFailure struct {
	Name    string `json:"predicate"`
	Kind    string `json:"kind"` // safety, liveness, derived, or "safety aux", "liveness aux", "liveness alarm"
	Step    int    `json:"step"`
	Message string `json:"message"`
}

// String is the failure in one line.
func (e EvalFailure) String() string {
	what := e.Name
	switch e.Kind {
	case "derived":
		what = "derived value " + e.Name
	case "safety aux", "liveness aux":
		what = "the aux of " + e.Name
	case "liveness alarm":
		what = "the alarm of " + e.Name
	}
	return fmt.Sprintf("%s failed at step #%d and was disabled: %s", what, e.Step, e.Message)
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
	Kind       string `json:"kind"`
	Evals      int    `json:"evaluations"`
	Violations int    `json:"violations"`
	Alarms     int    `json:"alarms"`
	Screened   int    `json:"screened"`
}

// Report is what a check found.
type Report struct {
	Steps      int                        `json:"steps"` // steps evaluated
	Violations []*Violation               `json:"violations"`
	Errors     []EvalFailure              `json:"errors"`
	Predicates map[string]*PredicateStats `json:"predicates"`
}

// violation records that p became violated at the current step, with
// witness w (nil: none).
func (c *Checker) violation(p *Predicate, w *rowState) *Violation {
	ev := c.ev
	v := &Violation{
		Predicate: p.Name, Kind: p.Kind, Step: c.step, Lamport: ev.Lamport, Node: ev.Node,
		Event: EventInfo{Kind: ev.Kind.String(), MsgType: ev.MsgType, Sender: ev.From, Timer: ev.TimerName},
		Time:  ev.Time - c.start, EndStep: -1, opened: c.now,
	}
	if ev.Kind != node.KindRecv {
		v.Event.Sender = ""
	}
	if w != nil {
		v.Witness = string(w.key.node)
		if w.key.path != "" {
			v.Witness += " " + w.key.path
		}
	}
	if p.Kind == "safety" {
		v.Alarm = true
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
// its range. An interval open where a run was cut short (--stop-at-first)
// has not been judged: it is reported open, not as an alarm.
func (c *Checker) finish(atEnd bool) *Report {
	for _, p := range c.preds {
		if p.open != nil && p.alarm == nil && atEnd {
			p.open.Alarm = true
			p.open.AlarmStep = c.step
		}
		if p.open != nil {
			p.open.Aux = firstNonNil(p.open.Aux, p.open.auxNow)
		}
	}
	for _, p := range c.preds {
		st := &PredicateStats{Kind: p.Kind, Evals: p.Evals}
		c.report.Predicates[p.Name] = st
	}
	for _, v := range c.report.Violations {
		st := c.report.Predicates[v.Predicate]
		st.Violations++
		if v.Kind == "liveness" {
			if v.Alarm {
				st.Alarms++
			} else {
				st.Screened++
			}
		}
	}
	return &c.report
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
