package export

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/replaycheck/replaycheck/node"
)

// Mermaid's limits. A diagram past them is refused rather than written:
// Mermaid itself stops rendering text longer than its default maxTextSize
// (50,000 characters), and a sequence diagram with more lanes or arrows
// than these is unreadable in an issue or a wiki page anyway, where these
// diagrams go.
const (
	MermaidMaxParticipants = 20
	MermaidMaxMessages     = 400 // arrows and notes
	MermaidMaxText         = 50000
)

// TooBigError says a window exceeds what a format can show.
type TooBigError struct{ Msg string }

func (e *TooBigError) Error() string { return e.Msg }

// Mermaid writes the window as a Mermaid sequence diagram: one participant
// per shown node; a message as an arrow at its send (-x, a cross at the
// end, when it was lost; -), an open arrow, when it was still in flight
// where the trace ends), labelled with its type and the steps of send
// and receipt; a message sent before the window as an arrow at its
// receipt; crashes, restarts, inputs and violations as notes. Timers are
// left out: they would outnumber the messages. Participants are aliased
// (P0, P1, ...) because node names may hold characters Mermaid reads as
// syntax.
func Mermaid(out io.Writer, w *Window) error {
	if n := len(w.Nodes); n > MermaidMaxParticipants {
		return &TooBigError{fmt.Sprintf("mermaid: the window has %d nodes; a Mermaid diagram shows at most %d (choose some with --nodes)", n, MermaidMaxParticipants)}
	}
	idx := w.nodeIndex()
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, "    "+fmt.Sprintf(format, args...)) }
	p := func(id node.ID) string { return fmt.Sprintf("P%d", idx[id]) }
	viol := w.violationsAt()
	for _, step := range w.Steps() {
		ev := w.Trace.Event(step)
		switch ev.Kind {
		case node.KindRecv:
			if send, ok := w.Trace.SendStep(ev); !ok || !w.In(send) {
				if w.Shows(ev.From) {
					from := "before the window"
					if ok {
						from = fmt.Sprintf("sent #%d, before the window", send)
					}
					add("%s->>%s: %s (%s, received #%d)", p(ev.From), p(ev.Node), mermaidText(ev.MsgType), from, step)
				}
			}
		case node.KindCrash, node.KindRestart, node.KindInput:
			text := fmt.Sprintf("#%d %s", step, ev.Kind)
			if ev.Kind == node.KindInput {
				text += " " + ev.MsgType
			}
			add("Note over %s: %s", p(ev.Node), mermaidText(text))
		}
		for _, m := range w.Sends(step) {
			switch {
			case m.InFlight(): // an open arrow: the run ended first
				add("%s-)%s: %s (#%d, %s)", p(m.From), p(m.To), mermaidText(m.Type), step, m.Undelivered())
			case m.Lost():
				add("%s-x%s: %s (#%d, %s)", p(m.From), p(m.To), mermaidText(m.Type), step, m.Undelivered())
			case w.In(m.Receipts[0]):
				add("%s->>%s: %s (#%d to #%s)", p(m.From), p(m.To), mermaidText(m.Type), step, joinSteps(m.Receipts))
			default:
				add("%s->>%s: %s (#%d, received #%s, after the window)", p(m.From), p(m.To), mermaidText(m.Type), step, joinSteps(m.Receipts))
			}
		}
		for _, v := range viol[step] {
			add("Note over %s: VIOLATION %s", p(v.Node), mermaidText(v.Headline()))
		}
	}
	if len(lines) > MermaidMaxMessages {
		return &TooBigError{fmt.Sprintf("mermaid: the window #%d..#%d has %d arrows and notes; a Mermaid diagram shows at most %d (narrow it with --from/--to or --nodes)", w.From, w.To, len(lines), MermaidMaxMessages)}
	}
	var b strings.Builder
	b.WriteString("sequenceDiagram\n")
	for i, id := range w.Nodes {
		fmt.Fprintf(&b, "    participant P%d as %s\n", i, mermaidText(string(id)))
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if b.Len() > MermaidMaxText {
		return &TooBigError{fmt.Sprintf("mermaid: the diagram of #%d..#%d is %d characters; Mermaid renders at most %d (narrow it with --from/--to or --nodes)", w.From, w.To, b.Len(), MermaidMaxText)}
	}
	bw := bufio.NewWriter(out)
	bw.WriteString(b.String())
	return bw.Flush()
}

// mermaidText keeps a label on its line and out of Mermaid's syntax: ';'
// ends a statement, '%%' starts a comment and '#...;' is an entity.
func mermaidText(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ", ";", ",", "%%", "%").Replace(s)
}

func joinSteps(steps []int) string {
	s := make([]string, len(steps))
	for i, st := range steps {
		s[i] = fmt.Sprint(st)
	}
	return strings.Join(s, ",#")
}
