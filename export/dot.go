package export

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/replaycheck/replaycheck/internal/printable"
	"github.com/replaycheck/replaycheck/node"
)

// DOT writes the window as a Graphviz space-time diagram (render it with
// `dot -Tsvg`): time runs left to right, each shown node is a row of its
// events chained by heavy edges that keep the row straight, and each
// message is an edge from its send to its receipt. A lost message ends in
// a red cross; one whose other end lies outside the window ends in a
// plain label giving the step there. A violation's event is drawn red
// with the violation as its label.
func DOT(out io.Writer, w *Window) error {
	bw := bufio.NewWriterSize(out, 1<<16)
	fmt.Fprintf(bw, "digraph trace {\n  rankdir=LR;\n  node [shape=box, style=rounded, fontsize=10];\n  edge [fontsize=9];\n")
	viol := w.violationsAt()
	last := map[node.ID]int{}
	for _, id := range w.Nodes {
		fmt.Fprintf(bw, "  %s [shape=plaintext, style=\"\", fontsize=14, label=%s];\n", laneID(id), dotQuote(string(id)))
	}
	for _, step := range w.Steps() {
		ev := w.Trace.Event(step)
		label := []string{fmt.Sprintf("#%d %s", step, ev.Kind)}
		if ev.MsgType != "" {
			label = append(label, ev.MsgType)
		} else if ev.TimerName != "" {
			label = append(label, ev.TimerName)
		}
		attrs := ""
		if vs := viol[step]; len(vs) > 0 {
			var hs []string
			for _, v := range vs {
				hs = append(hs, "VIOLATION "+v.Headline())
			}
			attrs = fmt.Sprintf(", color=red, penwidth=3, fontcolor=red, xlabel=%s", dotLines(hs...))
		} else if ev.Kind == node.KindCrash {
			attrs = ", style=\"rounded,filled\", fillcolor=gray80"
		}
		fmt.Fprintf(bw, "  s%d [label=%s%s];\n", step, dotLines(label...), attrs)
		prev := laneID(ev.Node)
		if p, ok := last[ev.Node]; ok {
			prev = fmt.Sprintf("s%d", p)
		}
		fmt.Fprintf(bw, "  %s -> s%d [weight=100, arrowhead=none, color=gray60];\n", prev, step)
		last[ev.Node] = step
		if ev.Kind == node.KindRecv && w.Shows(ev.From) {
			if send, ok := w.Trace.SendStep(ev); !ok || !w.In(send) {
				from := "before the window"
				if ok {
					from = fmt.Sprintf("#%d", send)
				}
				fmt.Fprintf(bw, "  in%d [shape=plaintext, style=\"\", label=%s];\n  in%d -> s%d [style=dotted, label=%s];\n",
					step, dotQuote(string(ev.From)+" "+from), step, step, dotQuote(ev.MsgType))
			}
		}
		for _, m := range w.Sends(step) {
			switch {
			case m.InFlight():
				fmt.Fprintf(bw, "  lost%d_%d [shape=point, style=\"\", color=orange, xlabel=%s];\n  s%d -> lost%d_%d [color=orange, style=dashed, label=%s];\n",
					step, m.Index, dotQuote("in flight to "+string(m.To)), step, step, m.Index, dotQuote(m.Type+" ("+m.Undelivered()+")"))
			case m.Lost():
				fmt.Fprintf(bw, "  lost%d_%d [shape=point, style=\"\", color=red, xlabel=%s];\n  s%d -> lost%d_%d [color=red, style=dashed, arrowhead=tee, label=%s];\n",
					step, m.Index, dotQuote("lost to "+string(m.To)), step, step, m.Index, dotQuote(m.Type+" ("+m.Undelivered()+")"))
			default:
				for _, r := range m.Receipts {
					if w.In(r) {
						fmt.Fprintf(bw, "  s%d -> s%d [color=blue, label=%s];\n", step, r, dotQuote(m.Type))
					} else {
						fmt.Fprintf(bw, "  out%d_%d_%d [shape=plaintext, style=\"\", label=%s];\n  s%d -> out%d_%d_%d [style=dotted, label=%s];\n",
							step, m.Index, r, dotQuote(fmt.Sprintf("%s #%d", m.To, r)), step, step, m.Index, r, dotQuote(m.Type))
					}
				}
			}
		}
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

func laneID(id node.ID) string { return dotQuote("node " + string(id)) }

// dotQuote makes a DOT quoted string of one line. What a recording holds
// (a timer's name, a node's) is the recording's, not the graph's: its
// control characters, line separators and bidirectional controls are
// written as Go escapes, as every other export writes them, so the file
// stays one Graphviz reads and a terminal printing it obeys nothing.
func dotQuote(s string) string { return dotLines(s) }

// dotLines is dotQuote of several lines, which DOT labels show one
// under another.
func dotLines(lines ...string) string {
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	var b strings.Builder
	b.WriteByte('"')
	for i, l := range lines {
		if i > 0 {
			b.WriteString(`\n`)
		}
		b.WriteString(esc.Replace(printable.Escape(l)))
	}
	b.WriteByte('"')
	return b.String()
}
