package export

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/state"
)

// The page is one file with its style, script and data inline, and no
// URL it loads: a bug report has to open from an attachment, offline,
// years later. The diagrams are drawn by the page's script from the
// embedded data (not pre-rendered SVG) because hiding a node lays the
// lanes out again.
//
//go:embed report.html
var reportPage string

var reportTemplate = template.Must(template.New("report").Parse(reportPage))

// ReportMaxDiagrams bounds the violations drawn with a diagram and state
// diff: a run with hundreds of findings is one bug seen many times, and
// the page must stay small enough to attach.
const ReportMaxDiagrams = 20

// Report is what the HTML report shows.
type Report struct {
	Title   string
	System  string
	Traces  []string
	Script  string
	Steps   int
	Nodes   []node.ID
	Checked *predicates.Report
	Errors  []string // evaluation failures, a divergence
	Items   []ReportItem
	Others  []*predicates.Violation // findings past ReportMaxDiagrams, screened and unjudged intervals
	// Commands reproduce the run and open the debugger.
	Commands []Command
	Made     time.Time
}

// MoreFindings counts the violations (safety violations, liveness alarms)
// among Others: those past the diagrams.
func (r *Report) MoreFindings() int {
	n := 0
	for _, v := range r.Others {
		if v.Finding() {
			n++
		}
	}
	return n
}

// NotFindings counts the liveness intervals among Others that are not
// violations: screened by their alarm function, or left unjudged.
func (r *Report) NotFindings() int { return len(r.Others) - r.MoreFindings() }

// Command is a command line with what it does.
type Command struct{ What, Line string }

// ReportItem is one violation with the window around it.
type ReportItem struct {
	V      *predicates.Violation
	Event  string // the violating event, one line
	Window *Window
	// Diff is how the violating node's state changed at the step
	// (state.Diff, as the debugger's d key shows it); DiffNote says why
	// there is none.
	Diff     []state.Change
	DiffNote string
	// DiffFrom names the state the diff starts from when it is not the
	// node's just before the step: a restart's is the state before its
	// crash ("" : before the step).
	DiffFrom string
	Commands []Command
}

// Diagram is the data the page draws a space-time diagram from.
type Diagram struct {
	Nodes     []string       `json:"nodes"`
	Events    []diagramEvent `json:"events"`
	Msgs      []diagramMsg   `json:"msgs"`
	Violation int            `json:"violation"`
}

type diagramEvent struct {
	Step int    `json:"s"`
	Node int    `json:"n"`
	Kind string `json:"k"`
	Line string `json:"d"`
}

// diagramMsg is a message: From and To are steps, -1 when that end lies
// outside the window (To -1 and Lost: never received).
type diagramMsg struct {
	Type     string `json:"t"`
	From     int    `json:"f"`
	To       int    `json:"r"`
	FromNode int    `json:"fn"`
	ToNode   int    `json:"tn"`
	Lost     bool   `json:"lost,omitempty"`
	Note     string `json:"note,omitempty"`
}

// Diagram builds the diagram data of the item's window.
func (it *ReportItem) Diagram() Diagram {
	w := it.Window
	idx := w.nodeIndex()
	d := Diagram{Violation: it.V.Step}
	for _, id := range w.Nodes {
		d.Nodes = append(d.Nodes, string(id))
	}
	for _, step := range w.Steps() {
		ev := w.Trace.Event(step)
		d.Events = append(d.Events, diagramEvent{Step: step, Node: idx[ev.Node], Kind: ev.Kind.String(), Line: oneLine(w.Render.Line(step, ev))})
		if ev.Kind == node.KindRecv && w.Shows(ev.From) {
			if send, ok := w.Trace.SendStep(ev); !ok || !w.In(send) {
				note := "sent before the window"
				if ok {
					note = fmt.Sprintf("sent #%d, before the window", send)
				}
				d.Msgs = append(d.Msgs, diagramMsg{Type: ev.MsgType, From: -1, To: step, FromNode: idx[ev.From], ToNode: idx[ev.Node], Note: note})
			}
		}
		for _, m := range w.Sends(step) {
			if m.Lost() {
				d.Msgs = append(d.Msgs, diagramMsg{Type: m.Type, From: step, To: -1, FromNode: idx[m.From], ToNode: idx[m.To], Lost: !m.InFlight(), Note: m.Undelivered()})
				continue
			}
			for _, r := range m.Receipts {
				dm := diagramMsg{Type: m.Type, From: step, To: r, FromNode: idx[m.From], ToNode: idx[m.To]}
				if !w.In(r) {
					dm.To, dm.Note = -1, fmt.Sprintf("received #%d, after the window", r)
				}
				d.Msgs = append(d.Msgs, dm)
			}
		}
	}
	return d
}

// Aux is the violation's stability measures as Starlark prints them.
func (it *ReportItem) Aux() string { return auxString(it.V.Aux) }

// Time is the violation's time since the start of the run.
func (it *ReportItem) Time() time.Duration { return time.Duration(it.V.Time) }

// WriteReport writes the HTML page.
func WriteReport(out io.Writer, r *Report) error {
	return reportTemplate.Execute(out, r)
}
