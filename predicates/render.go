package predicates

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
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
	}
	return e.Kind
}

// WriteText writes the human report: each violation, then a summary.
func (r *Report) WriteText(w io.Writer, elapsed time.Duration) {
	for _, v := range r.Violations {
		if v.Kind == "liveness" && !v.Alarm {
			continue // screened intervals are summarised below
		}
		writeViolation(w, v)
	}
	names := slices.Sorted(maps.Keys(r.Predicates))
	rate := float64(r.Steps) / max(elapsed.Seconds(), 1e-9)
	fmt.Fprintf(w, "checked %d steps in %v (%.0f steps/s)\n", r.Steps, elapsed.Round(time.Millisecond), rate)
	failed := map[string]int{}
	for _, e := range r.Errors {
		if _, seen := failed[e.Name]; !seen && (e.Kind == "safety" || e.Kind == "liveness") {
			failed[e.Name] = e.Step
		}
	}
	for _, n := range names {
		st := r.Predicates[n]
		note := ""
		if step, ok := failed[n]; ok {
			note = fmt.Sprintf("; failed at #%d, not checked after", step)
		}
		switch st.Kind {
		case "safety":
			fmt.Fprintf(w, "  %-32s safety    %d violation(s)%s\n", n, st.Violations, note)
		default:
			fmt.Fprintf(w, "  %-32s liveness  %d alarm(s), %d interval(s) screened by stability measures%s\n", n, st.Alarms, st.Screened, note)
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

func writeViolation(w io.Writer, v *Violation) {
	if v.Kind == "safety" {
		fmt.Fprintf(w, "%s (safety) violated at step #%d\n", v.Predicate, v.Step)
	} else {
		end := "still open at the end"
		if v.EndStep >= 0 {
			end = fmt.Sprintf("until #%d (%v)", v.EndStep, time.Duration(v.Duration))
		}
		fmt.Fprintf(w, "%s (liveness) violated from step #%d, %s; alarm at #%d\n", v.Predicate, v.Step, end, v.AlarmStep)
	}
	fmt.Fprintf(w, "  at:      t=%v L=%d node %s, %s\n", time.Duration(v.Time), v.Lamport, v.Node, v.Describe())
	if v.Witness != "" {
		fmt.Fprintf(w, "  witness: %s\n", v.Witness)
	}
	if v.Aux != nil && v.Aux != starlark.None {
		fmt.Fprintf(w, "  aux:     %s\n", v.Aux)
	}
}

// MarshalJSON encodes a violation with its aux as plain JSON.
func (v *Violation) MarshalJSON() ([]byte, error) {
	type plain Violation
	out := struct {
		*plain
		Event string `json:"event"`
		Aux   any    `json:"aux,omitempty"`
	}{plain: (*plain)(v), Event: v.Describe(), Aux: toJSON(v.Aux)}
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
	}
	return strings.TrimSpace(v.String())
}
