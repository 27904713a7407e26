package record

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/replaycheck/replaycheck/internal/printable"
	"github.com/replaycheck/replaycheck/node"
)

// check enforces the limits on a header (see MaxNameLen and the others):
// writers call it before starting a segment, readers on every header read.
func (h *Header) check() error {
	if err := checkName("system name", h.System, MaxNameLen, false); err != nil {
		return err
	}
	for _, f := range []struct{ what, s string }{{"bug name", h.Bug}, {"driver name", h.Driver}, {"codec name", h.Codec}} {
		if err := checkName(f.what, f.s, MaxNameLen, true); err != nil {
			return err
		}
	}
	if len(h.Nodes) == 0 {
		return errors.New("the trace header lists no nodes")
	}
	if h.HashEvery < 0 || h.HashBytes < 0 {
		return fmt.Errorf("the trace header spaces state hashes by %d events or %d bytes: want 0 or more", h.HashEvery, h.HashBytes)
	}
	if len(h.Nodes) > MaxNodes {
		return fmt.Errorf("the trace header lists %d nodes (at most %d)", len(h.Nodes), MaxNodes)
	}
	nodes := make(map[node.ID]bool, len(h.Nodes))
	for _, id := range h.Nodes {
		if err := checkName("node name", string(id), MaxNameLen, false); err != nil {
			return err
		}
		if nodes[id] {
			return fmt.Errorf("node %q is listed twice", id)
		}
		nodes[id] = true
	}
	if len(h.Recorded) > len(h.Nodes) {
		return fmt.Errorf("%d recorded nodes of %d", len(h.Recorded), len(h.Nodes))
	}
	for _, id := range h.Recorded {
		if !nodes[id] {
			return fmt.Errorf("recorded node %s is not in the node list", clip(string(id)))
		}
	}
	if len(h.Types) > MaxTypes {
		return fmt.Errorf("%d message types (at most %d)", len(h.Types), MaxTypes)
	}
	types := make(map[string]bool, len(h.Types))
	for _, t := range h.Types {
		if err := checkName("message type name", t, MaxTypeNameLen, false); err != nil {
			return err
		}
		if types[t] {
			return fmt.Errorf("message type %q is listed twice", t)
		}
		types[t] = true
	}
	if err := checkMap("params", "param", h.Params); err != nil {
		return err
	}
	if err := checkMap("run", "run", h.Run); err != nil {
		return err
	}
	if len(h.ForkClocks) > MaxEntries {
		return fmt.Errorf("%d fork clocks (at most %d)", len(h.ForkClocks), MaxEntries)
	}
	for i := 1; i < len(h.ForkClocks); i++ {
		if h.ForkClocks[i] <= h.ForkClocks[i-1] {
			return fmt.Errorf("fork clocks %d and %d are not ascending", h.ForkClocks[i-1], h.ForkClocks[i])
		}
	}
	if h.Segment < 0 {
		return fmt.Errorf("segment %d", h.Segment)
	}
	return nil
}

func checkMap(plural, what string, m map[string]string) error {
	if len(m) > MaxEntries {
		return fmt.Errorf("%d %s (at most %d)", len(m), plural, MaxEntries)
	}
	total := 0
	for k, v := range m {
		if err := checkName(what+" key", k, MaxNameLen, false); err != nil {
			return err
		}
		if len(v) > MaxValueLen {
			return fmt.Errorf("%s %s: value of %d bytes is longer than %d bytes", what, k, len(v), MaxValueLen)
		}
		total += len(v)
	}
	if total > MaxValueLen {
		// Each segment's header is kept: a forged file of 20 segments
		// of 990 values of 64 KiB each held 1.3 GB.
		return fmt.Errorf("%s of %d bytes in all, more than %d bytes", plural, total, MaxValueLen)
	}
	return nil
}

// checkName checks a name that is printed on one line: bounded, valid
// UTF-8, no control characters (a newline in a node name would forge
// output lines).
func checkName(what, s string, limit int, emptyOK bool) error {
	switch {
	case s == "" && !emptyOK:
		return fmt.Errorf("empty %s", what)
	case len(s) > limit:
		return fmt.Errorf("%s %s (%d bytes) is longer than %d bytes", what, clip(s), len(s), limit)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s %s is not valid UTF-8", what, clip(s))
	}
	for _, r := range s {
		// Names are printed bare on every line of output: nothing in
		// one may move the cursor, break the line or turn the text
		// round (a bidi override).
		if printable.Unsafe(r) {
			return fmt.Errorf("%s %s contains a control character (%U)", what, clip(s), r)
		}
	}
	return nil
}

// clip quotes the start of a string that may be huge, for a message.
func clip(s string) string {
	const show = 32
	if len(s) <= show {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q…", printable.Cut(s, show))
}

// check enforces the limits on a gap record against the segment's node
// table: replay would mark the wrong stretch unknown otherwise.
func (g *Gap) check(t *tables) error {
	if _, ok := t.nodeIdx[g.Node]; !ok {
		return fmt.Errorf("gap record for node %s, which is not in the header's node list", clip(string(g.Node)))
	}
	if g.From == 0 {
		return fmt.Errorf("gap record for %s from seq 0 (seqs start at 1)", g.Node)
	}
	if g.To != 0 && g.To < g.From {
		return fmt.Errorf("gap record for %s from seq %d to seq %d: the range is backwards", g.Node, g.From, g.To)
	}
	if len(g.Reason) > MaxReasonLen {
		return fmt.Errorf("gap record reason of %d bytes is longer than %d bytes", len(g.Reason), MaxReasonLen)
	}
	return nil
}

func (e *End) check() error {
	if len(e.Reason) > MaxReasonLen {
		return fmt.Errorf("end record reason of %d bytes is longer than %d bytes", len(e.Reason), MaxReasonLen)
	}
	if len(e.Stats) > MaxEntries {
		return fmt.Errorf("end record with %d stats (at most %d)", len(e.Stats), MaxEntries)
	}
	for k := range e.Stats {
		if err := checkName("end record stats key", k, MaxNameLen, false); err != nil {
			return err
		}
	}
	if len(e.States) > MaxNodes {
		return fmt.Errorf("end record with %d final states (at most %d)", len(e.States), MaxNodes)
	}
	for _, st := range e.States {
		if err := checkName("end record final state's node", string(st.Node), MaxNameLen, false); err != nil {
			return err
		}
	}
	return nil
}

// clipReason shortens a reason a writer was given to MaxReasonLen bytes:
// a writer must not refuse to record why recording ended.
func clipReason(s string) string {
	if len(s) <= MaxReasonLen {
		return s
	}
	return printable.Cut(s, MaxReasonLen-len("…")) + "…"
}

// ListValue joins items with spaces for a header value, keeping as many
// as fit in MaxValueLen and saying how many were left out: a merge of
// thousands of files must still write a valid header.
func ListValue(items []string) string {
	var b strings.Builder
	for i, it := range items {
		more := fmt.Sprintf(" (and %d more)", len(items)-i)
		if b.Len()+1+len(it)+len(more) > MaxValueLen {
			b.WriteString(more)
			break
		}
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(it)
	}
	return b.String()
}

// Text a trace carries that verbs print as it is (a gap's and an end's
// reason, the run's values; names are refused if they hold control
// characters) is read with its control characters escaped, as message
// fields are shown: a forged reason held escape sequences and newlines
// that set a terminal's title and printed a line of its own that read
// as replay's verdict.

func (g *Gap) escapeText() { g.Reason = printable.Escape(g.Reason) }

func (e *End) escapeText() { e.Reason = printable.Escape(e.Reason) }

func (h *Header) escapeText() {
	for k, v := range h.Run {
		h.Run[k] = printable.Escape(v)
	}
}
