package predicates

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/replaycheck/replaycheck/node"
)

// Describe renders a violation's event as in `replay events`.
func (v *Violation) Describe() string {
	e := v.Event
	switch e.Kind {
	case "recv":
		return fmt.Sprintf("recv %s from %s", e.MsgType, e.Sender)
	case "timer":
		return "timer " + e.Timer
	case "input":
		return "input " + e.MsgType
	case "task":
		return "task " + e.Task
	}
	return e.Kind
}

// WriteText writes the human report: each finding (safety violations,
// liveness alarms), then a summary. Screened and unjudged intervals are
// only counted there: they are not violations.
func (r *Report) WriteText(w io.Writer, elapsed time.Duration) { r.WriteTextLimited(w, elapsed, 0) }

// WriteTextLimited is WriteText showing at most perPredicate findings of
// each predicate (0: all), and how many of each it left out: a test's
// failure message of 197 violations ran to 600 lines.
func (r *Report) WriteTextLimited(w io.Writer, elapsed time.Duration, perPredicate int) {
	shown, left := map[string]int{}, map[string]int{}
	var leftOrder []string
	for _, v := range r.Violations {
		if !v.Finding() {
			continue
		}
		if perPredicate > 0 && shown[v.Predicate] >= perPredicate {
			if left[v.Predicate] == 0 {
				leftOrder = append(leftOrder, v.Predicate)
			}
			left[v.Predicate]++
			continue
		}
		shown[v.Predicate]++
		r.writeViolation(w, v)
	}
	for _, name := range leftOrder {
		fmt.Fprintf(w, "... and %d more finding(s) of %s (replay check lists every one)\n", left[name], name)
	}
	names := slices.Sorted(maps.Keys(r.Predicates))
	fmt.Fprintf(w, "checked %d steps", r.Steps)
	// An unmeasured time (zero) is not said; a rate over it or a
	// sub-millisecond one says nothing.
	if elapsed > 0 {
		fmt.Fprintf(w, " in %v", elapsed.Round(time.Millisecond))
	}
	if elapsed >= time.Millisecond {
		fmt.Fprintf(w, " (%.0f steps/s)", float64(r.Steps)/elapsed.Seconds())
	}
	switch {
	case r.TraceIncomplete:
		fmt.Fprintf(w, "; the trace is incomplete (see above): checked to its end, #%d", r.LastStep)
	case !r.Complete && r.Stopped != "":
		fmt.Fprintf(w, "; checking stopped early, after #%d: %s", r.LastStep, r.Stopped)
	case !r.Complete:
		fmt.Fprintf(w, "; checking stopped early, after #%d", r.LastStep)
	}
	fmt.Fprintln(w)
	for _, u := range r.Unmatched {
		fmt.Fprintf(w, "  warning: %s\n", u)
	}
	failed, alarmFailed := map[string]int{}, map[string]int{}
	for _, e := range r.Errors {
		if _, seen := failed[e.Name]; !seen && (e.Kind == "safety" || e.Kind == "liveness") {
			failed[e.Name] = e.Step
		}
		if _, seen := alarmFailed[e.Name]; !seen && e.Kind == "liveness alarm" {
			alarmFailed[e.Name] = e.Step
		}
	}
	for _, n := range names {
		st := r.Predicates[n]
		note := ""
		if step, ok := alarmFailed[n]; ok && st.Unjudged > 0 {
			note = fmt.Sprintf(", %d not judged (its alarm function failed at #%d)", st.Unjudged, step)
		} else if st.Unjudged > 0 && r.TraceIncomplete {
			note = fmt.Sprintf(", %d still open where the incomplete trace ends (not judged)", st.Unjudged)
		} else if st.Unjudged > 0 {
			note = fmt.Sprintf(", %d still open when checking stopped (not judged)", st.Unjudged)
		}
		if step, ok := failed[n]; ok {
			note += fmt.Sprintf("; failed at #%d, not checked after", step)
		}
		switch {
		case st.Kind == "safety":
			fmt.Fprintf(w, "  %-32s safety    %d violation(s)%s\n", n, st.Violations, note)
		case st.judged:
			fmt.Fprintf(w, "  %-32s liveness  %d alarm(s), %d interval(s) screened by its alarm function%s\n", n, st.Alarms, st.Screened, note)
		default:
			fmt.Fprintf(w, "  %-32s liveness  %d alarm(s), %d interval(s) that closed%s\n", n, st.Alarms, st.Screened, note)
		}
	}
	if len(r.Errors) > 0 {
		fmt.Fprintf(w, "  %d evaluation error(s): the run was not fully checked\n", len(r.Errors))
	}
}

// WriteErrors writes one line per evaluation failure ("error: ..."); they
// belong on stderr.
func (r *Report) WriteErrors(w io.Writer) {
	for _, e := range r.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
}

func (r *Report) writeViolation(w io.Writer, v *Violation) {
	since := ""
	if v.FirstChecked {
		since = " (the first step checked: it may have begun before)"
	}
	if v.Kind == "safety" {
		fmt.Fprintf(w, "%s (safety) violated at step #%d%s\n", v.Predicate, v.Step, since)
	} else {
		end := "still open at the end"
		switch {
		case v.EndStep >= 0:
			end = fmt.Sprintf("until #%d (%v)", v.EndStep, time.Duration(v.Duration))
		case r.TraceIncomplete:
			end = fmt.Sprintf("still open where the incomplete trace ends, at #%d", r.LastStep)
		case !r.Complete:
			end = fmt.Sprintf("still open when checking stopped at #%d", r.LastStep)
		}
		fmt.Fprintf(w, "%s (liveness) violated from step #%d%s, %s; alarm at #%d\n", v.Predicate, v.Step, since, end, v.AlarmStep)
	}
	fmt.Fprintf(w, "  at:      t=%v L=%d node %s, %s\n", time.Duration(v.Time), v.Lamport, v.Node, v.Describe())
	if wt := WitnessText(v.Witness, v.Alarm, v.AlarmWitness, v.AlarmStep); wt != "" {
		fmt.Fprintf(w, "  witness: %s\n", wt)
	}
	if v.Aux != nil && v.Aux != starlark.None {
		writeAux(w, v.Aux, auxWhen(v))
	}
}

// auxLine is the longest aux written on one line: a dict longer than
// that (a linearizability report lists its window's operations) is
// written a key per line, and a list in it an element per line.
const auxLine = 160

func writeAux(w io.Writer, aux starlark.Value, when string) {
	d, ok := aux.(*starlark.Dict)
	if text := aux.String(); !ok || len(text) <= auxLine {
		fmt.Fprintf(w, "  aux:     %s%s\n", text, when)
		return
	}
	fmt.Fprintf(w, "  aux:%s\n", when)
	for _, kv := range d.Items() {
		key := bare(kv[0])
		if l, ok := kv[1].(*starlark.List); ok && l.Len() > 0 && len(l.String()) > auxLine {
			fmt.Fprintf(w, "    %s: (%d)\n", key, l.Len())
			for i := range l.Len() {
				fmt.Fprintf(w, "      %s\n", bare(l.Index(i)))
			}
			continue
		}
		fmt.Fprintf(w, "    %s: %s\n", key, kv[1])
	}
}

// auxWhen says at which step a liveness interval's aux was computed: it
// is recomputed at every step the interval is open, so the value printed
// beside the step it opened is a later one.
func auxWhen(v *Violation) string { return AuxWhen(v.Kind, v.Alarm, v.AlarmStep, v.EndStep) }

// AuxWhen is auxWhen for a violation read back from elsewhere (the
// debugger's database): its kind, whether it was raised and at which
// step, and where a liveness interval closed (-1: open at the end).
func AuxWhen(kind string, alarm bool, alarmStep, endStep int) string {
	switch {
	case kind != "liveness":
		return ""
	case alarm && alarmStep >= 0:
		return fmt.Sprintf(" (at the alarm, #%d)", alarmStep)
	case endStep >= 0:
		return " (the last computed before it closed)"
	default:
		return " (the last computed)"
	}
}

// WitnessText names a violation's witness ("" for none). For a raised
// liveness interval whose failing row changed, the row failing at the
// alarm comes first: the one that failed first may have recovered.
func WitnessText(witness string, alarm bool, alarmWitness string, alarmStep int) string {
	if alarm && alarmWitness != "" && alarmWitness != witness {
		return fmt.Sprintf("%s at the alarm (#%d); %s when it began", alarmWitness, alarmStep, witness)
	}
	return witness
}

// ReportJSON is a report's JSON form: findings, screened intervals and
// unjudged ones in separate lists, so that the length of "violations" is
// what the text report lists.
type ReportJSON struct {
	Steps    int  `json:"steps"`
	Complete bool `json:"complete"` // false: checking stopped early, or the trace is incomplete
	// TraceIncomplete: checking reached the end of the trace, which
	// lacks part of the run (a damaged or missing file, no end record).
	TraceIncomplete bool `json:"trace_incomplete,omitempty"`
	// FullyChecked: complete, and every predicate evaluated at every
	// step (no entry in errors): what a verdict of "no violation" needs.
	FullyChecked bool `json:"fully_checked"`
	LastStep     int  `json:"last_step"`
	// Violations: safety violations and liveness alarms.
	Violations []*Violation `json:"violations"`
	// Screened: liveness intervals the stability measures screened out.
	Screened []*Violation `json:"screened"`
	// Unjudged: intervals still open, without an alarm, where checking
	// stopped early.
	Unjudged   []*Violation               `json:"unjudged,omitempty"`
	Errors     []EvalFailure              `json:"errors"`
	Predicates map[string]*PredicateStats `json:"predicates"`
	// Unmatched: tables that matched no object in the steps checked.
	Unmatched []UnmatchedTable `json:"unmatched_tables,omitempty"`
}

// JSON is the report in its JSON form.
func (r *Report) JSON() *ReportJSON {
	out := &ReportJSON{Steps: r.Steps, Complete: r.Complete, TraceIncomplete: r.TraceIncomplete, LastStep: r.LastStep,
		FullyChecked: r.Complete && !r.TraceIncomplete && len(r.Errors) == 0,
		Violations:   []*Violation{}, Screened: []*Violation{}, Errors: r.Errors, Predicates: r.Predicates, Unmatched: r.Unmatched}
	for _, v := range r.Violations {
		switch v.Status() {
		case "screened":
			out.Screened = append(out.Screened, v)
		case "unjudged":
			out.Unjudged = append(out.Unjudged, v)
		default:
			out.Violations = append(out.Violations, v)
		}
	}
	if out.Errors == nil {
		out.Errors = []EvalFailure{}
	}
	return out
}

// MarshalJSON encodes the report as ReportJSON.
func (r *Report) MarshalJSON() ([]byte, error) { return json.Marshal(r.JSON()) }

// MarshalJSON encodes a violation with its aux as plain JSON: a safety
// violation as a point; a liveness interval with its end and alarm.
func (v *Violation) MarshalJSON() ([]byte, error) {
	type point struct {
		Predicate string  `json:"predicate"`
		Kind      string  `json:"kind"`
		Status    string  `json:"status"`
		Step      int     `json:"step"`
		Lamport   uint64  `json:"lamport"`
		Node      node.ID `json:"node"`
		Event     string  `json:"event"`
		Time      int64   `json:"time"`
		Witness   string  `json:"witness,omitempty"`
		Aux       any     `json:"aux,omitempty"`
		// FirstChecked: the step is the first of a windowed check.
		FirstChecked bool `json:"first_checked,omitempty"`
	}
	p := point{v.Predicate, v.Kind, v.Status(), v.Step, v.Lamport, v.Node, v.Describe(), v.Time, v.Witness, toJSON(v.Aux), v.FirstChecked}
	if v.Kind != "liveness" {
		return json.Marshal(p)
	}
	type interval struct {
		point
		EndStep      int    `json:"end_step"`
		Alarm        bool   `json:"alarm"`
		AlarmStep    *int   `json:"alarm_step,omitempty"`
		AlarmWitness string `json:"alarm_witness,omitempty"`
		EndTime      *int64 `json:"end_time,omitempty"`
		Duration     *int64 `json:"duration,omitempty"`
	}
	out := interval{point: p, EndStep: v.EndStep, Alarm: v.Alarm}
	if v.Alarm {
		out.AlarmStep, out.AlarmWitness = &v.AlarmStep, v.AlarmWitness
	}
	if v.EndStep >= 0 {
		out.EndTime, out.Duration = &v.EndTime, &v.Duration
	}
	return json.Marshal(out)
}

// toJSON converts a frozen Starlark value to JSON-encodable data.
func toJSON(v starlark.Value) any {
	switch x := v.(type) {
	case nil, starlark.NoneType:
		return nil
	case starlark.Bool:
		return bool(x)
	case starlark.Int:
		if i, ok := x.Int64(); ok {
			return i
		}
		return x.String()
	case starlark.Float:
		return float64(x)
	case starlark.String:
		return string(x)
	case *starlark.List:
		out := make([]any, x.Len())
		for i := range out {
			out[i] = toJSON(x.Index(i))
		}
		return out
	case starlark.Tuple:
		out := make([]any, len(x))
		for i := range out {
			out[i] = toJSON(x[i])
		}
		return out
	case *starlark.Dict:
		out := map[string]any{}
		for _, it := range x.Items() {
			k, ok := starlark.AsString(it[0])
			if !ok {
				k = it[0].String()
			}
			out[k] = toJSON(it[1])
		}
		return out
	case *starlarkstruct.Struct:
		out := map[string]any{}
		for _, n := range x.AttrNames() {
			f, _ := x.Attr(n)
			out[n] = toJSON(f)
		}
		return out
	case *frozenStruct:
		out := map[string]any{}
		for _, n := range x.AttrNames() {
			out[n] = toJSON(x.fields[n])
		}
		return out
	}
	return strings.TrimSpace(v.String())
}

// bare is a value as a line shows it: a string without its quotes,
// unless it holds what would break the line (a newline forged report
// lines), then quoted as Starlark writes it.
func bare(v starlark.Value) string {
	if s, ok := v.(starlark.String); ok && !strings.ContainsFunc(string(s), func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }) {
		return string(s)
	}
	return v.String()
}
