package replay

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/node"
)

// Renderer turns events into the one-line story form every surface shows
// (`replay events`, the trace database's summaries, the debugger):
//
//	#17 L=4 t=33.155521ms n1 recv paxos.Collect{Round:8} from n1 (sent #14) -> paxos.Last to n1; 1 disk write(s)
type Renderer struct {
	tr    *Trace
	codec *node.Codec // nil when the system is unknown to this binary
}

// NewRenderer renders events of tr, decoding payloads with codec (nil:
// payloads are shown by type and size).
func NewRenderer(tr *Trace, codec *node.Codec) *Renderer { return &Renderer{tr: tr, codec: codec} }

// Message renders a payload as Type{Field:value ...}, or Type(N bytes) when
// the system is unknown to this binary.
func (r *Renderer) Message(typ string, payload []byte) string {
	if r.codec != nil {
		if m, err := r.codec.Decode(typ, payload); err == nil {
			return typ + shorten(formatValue(m), 120)
		}
	}
	return fmt.Sprintf("%s(%d bytes)", typ, len(payload))
}

func formatValue(m any) string {
	v := reflect.ValueOf(m)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	s := fmt.Sprintf("%+v", v.Interface())
	if v.Kind() != reflect.Struct {
		s = "(" + s + ")"
	}
	return s
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// Time is an event's time since the start of the run.
func (t *Trace) Time(ev *node.Event) time.Duration { return time.Duration(ev.Time - t.Header.Start) }

// Line renders one event: step, Lamport clock, time, node, kind, details
// and effects.
func (r *Renderer) Line(step int, ev *node.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d L=%d t=%v %s %s", step, ev.Lamport, r.tr.Time(ev), ev.Node, ev.Kind)
	if s := r.Summary(ev); s != "" {
		b.WriteString(" ")
		b.WriteString(s)
	}
	return b.String()
}

// Summary is the part of Line after the kind: details, then "-> effects".
func (r *Renderer) Summary(ev *node.Event) string {
	d, e := r.Details(ev), r.Effects(ev)
	switch {
	case e == "":
		return d
	case d == "":
		return "-> " + e
	}
	return d + " -> " + e
}

// Details describes what triggered the event: for a receive, the message,
// its sender and the step that sent it; for a timer, its name; for an
// input, the request.
func (r *Renderer) Details(ev *node.Event) string {
	switch ev.Kind {
	case node.KindRecv:
		s := r.Message(ev.MsgType, ev.Payload) + " from " + string(ev.From)
		if st, ok := r.tr.SendStep(ev); ok {
			s += fmt.Sprintf(" (sent #%d)", st)
		}
		return s
	case node.KindTimer:
		return fmt.Sprintf("%s (timer %d)", ev.TimerName, ev.TimerID)
	case node.KindInput:
		return r.Message(ev.MsgType, ev.Payload)
	case node.KindCrash:
		return "(volatile state and timers lost)"
	}
	return ""
}

// Effects describes what the event did: messages sent, grouped by type
// (receivers that never got them listed as never received), timers set and
// cancelled, disk writes.
func (r *Renderer) Effects(ev *node.Event) string {
	var parts []string
	// Group sends of one type, in order of first appearance.
	type group struct {
		typ      string
		to, lost []string
	}
	var groups []*group
	byType := map[string]*group{}
	for i, s := range ev.Sends {
		g := byType[s.Type]
		if g == nil {
			g = &group{typ: s.Type}
			byType[s.Type] = g
			groups = append(groups, g)
		}
		if len(r.tr.Receipts(ev.SentMsg(i))) > 0 {
			g.to = append(g.to, string(s.To))
		} else {
			g.lost = append(g.lost, string(s.To))
		}
	}
	for _, g := range groups {
		s := g.typ + " to " + strings.Join(g.to, ",")
		if len(g.to) == 0 {
			s = g.typ + " to nobody"
		}
		if len(g.lost) > 0 {
			s += " (never received: " + strings.Join(g.lost, ",") + ")"
		}
		parts = append(parts, s)
	}
	for _, t := range ev.TimersSet {
		parts = append(parts, fmt.Sprintf("timer %s in %v", t.Name, t.After))
	}
	for _, id := range ev.TimersCancelled {
		parts = append(parts, fmt.Sprintf("cancel timer %d", id))
	}
	if ev.DiskWrites > 0 {
		parts = append(parts, fmt.Sprintf("%d disk write(s)", ev.DiskWrites))
	}
	return strings.Join(parts, "; ")
}
