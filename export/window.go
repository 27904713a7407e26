// Package export writes a window of a trace in the formats of the tools
// people already use to look at distributed runs, and the self-contained
// HTML bug report:
//
//   - ShiViz (shiviz.go): a log with a vector clock per event, for the
//     space-time diagrams of https://bestchai.bitbucket.io/shiviz/;
//   - Perfetto / Chrome trace event JSON (perfetto.go), for
//     https://ui.perfetto.dev and chrome://tracing;
//   - Mermaid sequence diagrams (mermaid.go), which GitHub, GitLab and most
//     wikis render from a code block;
//   - Graphviz DOT (dot.go);
//   - JSON lines (jsonl.go), one event per line, for jq and pandas;
//   - the HTML report (report.go), one offline file with the violations,
//     a space-time diagram around each and the state diff of its step.
//
// Every format reads the same Window: a range of steps of a merged trace,
// optionally restricted to some nodes, with the predicates' violations
// that fall in it.
package export

import (
	"fmt"
	"slices"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
)

// Window is the part of a trace an export shows: steps From..To
// (inclusive) of the nodes in Nodes.
type Window struct {
	Trace *replay.Trace
	// Render turns events into the one-line form of `replay events`;
	// Codec (nil when this binary does not know the system) decodes
	// payloads for jsonl.
	Render *replay.Renderer
	Codec  *node.Codec
	From   int
	To     int
	Nodes  []node.ID // shown nodes, sorted
	// Violations found by a predicates script; the formats that can show
	// them annotate the findings (safety violations and liveness alarms,
	// not screened or unjudged intervals) whose step is in the window.
	Violations []*predicates.Violation

	shown map[node.ID]bool
	steps []int
}

// EmptyError says the window holds no event.
type EmptyError struct{ Msg string }

func (e *EmptyError) Error() string { return e.Msg }

// NewWindow selects steps from..to (to -1: the last step) of the nodes
// given (none: every node of the trace). It fails with an *EmptyError
// when no event falls in the window, since every format would then write
// a file that looks like an export and shows nothing.
func NewWindow(tr *replay.Trace, codec *node.Codec, from, to int, nodes []node.ID) (*Window, error) {
	if to < 0 || to >= tr.Len() {
		to = tr.Len() - 1
	}
	if len(nodes) == 0 {
		nodes = tr.Nodes
	}
	w := &Window{Trace: tr, Render: replay.NewRenderer(tr, codec), Codec: codec, From: from, To: to,
		Nodes: slices.Sorted(slices.Values(nodes)), shown: map[node.ID]bool{}}
	w.Nodes = slices.Compact(w.Nodes)
	for _, id := range w.Nodes {
		w.shown[id] = true
	}
	for s := max(from, 0); s <= to; s++ {
		if w.shown[tr.Event(s).Node] {
			w.steps = append(w.steps, s)
		}
	}
	if len(w.steps) == 0 {
		return nil, &EmptyError{fmt.Sprintf("the window #%d..#%d holds no event of the nodes shown", from, to)}
	}
	return w, nil
}

// Steps lists the steps in the window, in causal order.
func (w *Window) Steps() []int { return w.steps }

// Len is the number of events in the window.
func (w *Window) Len() int { return len(w.steps) }

// In reports whether step is in the window.
func (w *Window) In(step int) bool {
	return step >= w.From && step <= w.To && w.shown[w.Trace.Event(step).Node]
}

// Shows reports whether the node is shown.
func (w *Window) Shows(id node.ID) bool { return w.shown[id] }

// Message is one message sent by an event of the window to a shown node.
type Message struct {
	Send  int // the sending step
	Index int // among the step's sends
	From  node.ID
	To    node.ID
	Type  string
	// Receipts are every step that received it (more than one when the
	// network duplicated it), in or out of the window; none: lost, or in
	// flight when the recording ended.
	Receipts []int
	// Fate is what became of it (replay.Trace.Fate): in flight, dropped,
	// ... when nobody received it.
	Fate replay.Fate
}

// Lost reports whether nobody ever received the message: lost, or still
// in flight where the trace ends (InFlight).
func (m *Message) Lost() bool { return len(m.Receipts) == 0 }

// InFlight reports whether the message was still in flight where the
// trace ends: not lost, the run stopped first.
func (m *Message) InFlight() bool { return m.Lost() && m.Fate == replay.InFlight }

// Undelivered says what became of a message nobody received, as
// `replay events` tells it: "in flight at the end", "lost: dropped",
// "lost: receiver down", "lost" (the trace cannot tell how).
func (m *Message) Undelivered() string {
	switch {
	case m.InFlight():
		return "in flight at the end"
	case m.Fate == replay.NotDelivered || m.Fate == 0:
		return "lost"
	case m.Fate == replay.Unrecorded:
		return "receipt unknown: the receiver's recording is missing after it"
	}
	return "lost: " + m.Fate.String()
}

// Sends lists the messages an event of the window sent to shown nodes.
func (w *Window) Sends(step int) []Message {
	ev := w.Trace.Event(step)
	var out []Message
	for i, s := range ev.Sends {
		if !w.shown[s.To] {
			continue
		}
		m := Message{Send: step, Index: i, From: ev.Node, To: s.To, Type: s.Type,
			Receipts: w.Trace.Receipts(ev.SentMsg(i))}
		if m.Lost() {
			m.Fate = w.Trace.Fate(ev, i).Fate
		}
		out = append(out, m)
	}
	return out
}

// InWindow lists the findings whose step is in the window: a screened
// liveness interval is not a violation, and marking it one would send the
// reader after a bug that is not there.
func (w *Window) InWindow() []*predicates.Violation {
	var out []*predicates.Violation
	for _, v := range w.Violations {
		if v.Finding() && v.Step >= w.From && v.Step <= w.To && w.shown[v.Node] {
			out = append(out, v)
		}
	}
	return out
}

// violationsAt indexes InWindow by step.
func (w *Window) violationsAt() map[int][]*predicates.Violation {
	m := map[int][]*predicates.Violation{}
	for _, v := range w.InWindow() {
		m[v.Step] = append(m[v.Step], v)
	}
	return m
}

// nodeIndex maps each shown node to its position in Nodes.
func (w *Window) nodeIndex() map[node.ID]int {
	m := make(map[node.ID]int, len(w.Nodes))
	for i, id := range w.Nodes {
		m[id] = i
	}
	return m
}

// auxString is a violation's stability measures as Starlark prints them.
func auxString(v predicates.AuxValue) string {
	if v == nil {
		return ""
	}
	return v.String()
}
