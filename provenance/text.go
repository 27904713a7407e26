package provenance

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/internal/printable"
	"github.com/replaycheck/replaycheck/state"
)

// Lines renders the chain as the CLI and the debugger show it: one line
// per link, `#STEP t=TIME node event — field = value` (times since the
// run's start, values of time.Time too), indented by depth, with
// how it feeds the line above and where the chain ends. Each line's step
// is returned beside it (-1 for lines that are not a step) so that the
// debugger can jump there.
func (c *Chain) Lines() (text []string, steps []int) {
	add := func(step int, indent int, format string, args ...any) {
		// Timer and task names, message types: the handler's text.
		text = append(text, strings.Repeat("  ", indent)+printable.Escape(fmt.Sprintf(format, args...)))
		steps = append(steps, step)
	}
	show := func(v string) string { return state.ShowValue(v, c.start) }
	add(-1, 0, "why %s %s = %s at #%d:", c.Node, c.Field, show(c.Value), c.At)
	for _, l := range c.Links {
		in := l.Depth + 1
		if l.Via != "" {
			how := "recorded"
			if l.Inferred {
				how = "inferred: equal value"
			}
			add(-1, in, "← from %s (%s)", c.showVia(l.Via), how)
			if len(l.AlsoEqual) > 0 {
				add(-1, in+1, "also equal there: %s", strings.Join(l.AlsoEqual, ", "))
			}
		}
		at := fmt.Sprintf("#%d t=%v", l.Step, time.Duration(l.Time))
		if l.Field != "" {
			add(l.Step, in, "%s %s %s — %s = %s", at, l.Node, l.Event, l.Field, show(l.Value))
		} else {
			add(l.Step, in, "%s %s %s", at, l.Node, l.Event)
		}
		if t := l.Trigger; t != nil {
			switch {
			case t.Kind == "timer" && t.TimerSetAt >= 0:
				add(t.TimerSetAt, in+1, "timer %s set at #%d", t.Timer, t.TimerSetAt)
			case len(t.Fields) > 0 && t.Kind == "task":
				add(t.SendStep, in+1, "task %s woken at #%d by message %s from %s, %s: %s", t.Task, t.WokenAt, t.Type, t.From, sentAt(t.SendStep), c.fields(t, l.Value))
			case t.Kind == "task" && t.WokenAt >= 0:
				add(t.WokenAt, in+1, "task %s woken by %s at #%d", t.Task, t.Wake, t.WokenAt)
			case len(t.Fields) > 0 && t.Kind == "recv":
				add(t.SendStep, in+1, "message %s from %s, %s: %s", t.Type, t.From, sentAt(t.SendStep), c.fields(t, l.Value))
			case len(t.Fields) > 0:
				add(-1, in+1, "%s %s: %s", t.Kind, t.Type, c.fields(t, l.Value))
			}
		}
		if l.Origin != "" {
			add(-1, in+1, "origin: %s", c.showEnd(l.Origin, l.originValue))
		}
	}
	if k := c.Kept; k != nil {
		add(k.Step, 1, "kept at #%d: %s %s carried %s = %s, and %s stayed %s", k.Step, k.Node, k.Event, k.Field, show(k.Value), c.Field, show(c.Value))
	}
	return text, steps
}

// sentAt says where a message was sent: its step, or that the sender's
// recording does not have it (a node's file missing or cut).
func sentAt(step int) string {
	if step < 0 {
		return "sent where the sender's recording does not reach"
	}
	return fmt.Sprintf("sent at #%d", step)
}

// maxShownFields is how many of a message's fields a line shows: a
// message holding a log has hundreds, which made one line of thousands
// of characters (a new user's view change). --json has them all.
const maxShownFields = 8

// fields lists a trigger's fields, those holding the value the chain
// follows first among the ones shown, in the message's order, their
// values as Lines shows values.
func (c *Chain) fields(t *Trigger, value string) string {
	show := make([]bool, len(t.Fields))
	n := 0
	for pass := 0; pass < 2; pass++ {
		for i, f := range t.Fields {
			if n == maxShownFields {
				break
			}
			if !show[i] && (pass == 1 || f.Value == value) {
				show[i] = true
				n++
			}
		}
	}
	var parts []string
	for i, f := range t.Fields {
		if show[i] {
			parts = append(parts, f.Path+" = "+state.ShowValue(f.Value, c.start))
		}
	}
	if more := len(t.Fields) - n; more > 0 {
		parts = append(parts, fmt.Sprintf("... and %d more fields (replay why --json lists them all)", more))
	}
	return strings.Join(parts, ", ")
}

// showVia shows the value a link's Via quotes ("T field F = VALUE,
// sent by N at #S...") as Lines shows values. Only that value is
// rewritten: a string that reads like a date is no time.
func (c *Chain) showVia(via string) string {
	i, j := strings.Index(via, " = "), strings.LastIndex(via, ", sent by ")
	if i < 0 || j < i+len(" = ") {
		return via // an own field's, which quotes no value
	}
	return via[:i+len(" = ")] + state.ShowValue(via[i+len(" = "):j], c.start) + via[j:]
}

// showEnd shows value, which sentence ends with (an origin's "... with
// VALUE"), as Lines shows values.
func (c *Chain) showEnd(sentence, value string) string {
	if value == "" || !strings.HasSuffix(sentence, value) {
		return sentence
	}
	return strings.TrimSuffix(sentence, value) + state.ShowValue(value, c.start)
}

// Write prints the chain's lines.
func (c *Chain) Write(w io.Writer) error {
	text, _ := c.Lines()
	_, err := io.WriteString(w, strings.Join(text, "\n")+"\n")
	return err
}
