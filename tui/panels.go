package tui

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dustin/go-humanize"

	"github.com/replaycheck/replaycheck/internal/printable"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/statedb"
)

// Style is what a piece of text means; the view picks colors.
type Style int

// The styles.
const (
	StyleNormal    Style = iota
	StyleDim             // context: later versions, unmatched rows
	StyleCursor          // the cursor's row
	StyleSelected        // the selected row of the focused panel
	StyleChanged         // changed by the cursor's step
	StyleViolation       // a violation
	StyleLost            // a message never received
	StyleLink            // the send or receipts of the cursor's messages
	StyleHeader          // headings
	StyleUnknown         // state unknown
	StyleError
)

// Span is text in one style; a Line is a row of spans.
type Span struct {
	Text  string
	Style Style
}

// Line is one row of a panel.
type Line []Span

// String is the line's text.
func (l Line) String() string {
	var b strings.Builder
	for _, s := range l {
		b.WriteString(s.Text)
	}
	return b.String()
}

func line(style Style, format string, args ...any) Line {
	return Line{{fmt.Sprintf(format, args...), style}}
}

// linked lists the steps linked to the cursor's event by a message: the
// send of what it received, the receipts of what it sent.
func (m *Model) linked() map[int]bool {
	out := map[int]bool{}
	if m.cur == nil {
		return out
	}
	if m.cur.SendStep >= 0 {
		out[m.cur.SendStep] = true
	}
	for _, s := range m.cur.Sends {
		for _, r := range s.Receipts {
			out[r] = true
		}
	}
	return out
}

// Title is a panel's title.
func (m *Model) Title(p Panel) string {
	switch p {
	case PanelTimeline:
		t := "Timeline"
		if b := m.Breadcrumb(); b != "" {
			// Which run this is, and how to get back to the one it came from.
			t += "  " + b + "  (b: back)"
		}
		if m.filter != nil {
			t += "  filter: " + m.filter.text
		}
		return t
	case PanelState:
		how := "follows the cursor"
		if !m.follow {
			how = "pinned; f follows"
		}
		if m.pos < 0 {
			// Before the first step (a background index not there yet).
			return fmt.Sprintf("State of %s before #0 (%s)", m.node, how)
		}
		return fmt.Sprintf("State of %s at #%d (%s)", m.node, m.pos, how)
	case PanelViolations:
		if m.preds == nil {
			return "Violations"
		}
		stale := ""
		if m.predsOutdated != "" {
			stale = " (stored, outdated: " + m.predsOutdated + "; r checks it again)"
		}
		if n := m.screenedCount(); n > 0 {
			return fmt.Sprintf("Violations (%d; %d screened) %s%s", m.violationCount(), n, m.scriptShown(), stale)
		}
		return fmt.Sprintf("Violations (%d) %s%s", m.violationCount(), m.scriptShown(), stale)
	case PanelWatches:
		return fmt.Sprintf("Watches (%d)", len(m.watches))
	}
	return ""
}

// Timeline is the timeline panel's rows for a height: the cursor's step
// with the (filtered) steps before and after it.
func (m *Model) Timeline(h int) []Line {
	if h <= 0 || m.db.Len() == 0 {
		return nil
	}
	above := h / 3
	var before, after []*statedb.Step
	scan := func(from, to, want int, into *[]*statedb.Step) {
		if want <= 0 {
			return
		}
		m.scanFiltered(from, to, func(s *statedb.Step) bool {
			*into = append(*into, s)
			return len(*into) < want
		})
	}
	scan(m.pos-1, 0, above, &before)
	slices.Reverse(before)
	links := m.linked()
	var out []Line
	row := func(s *statedb.Step, cursor bool) {
		mark, style := "  ", StyleNormal
		switch {
		case cursor:
			mark, style = "▶ ", StyleCursor
		case m.viol[s.Step]:
			mark, style = "! ", StyleViolation
		case links[s.Step]:
			mark, style = "• ", StyleLink
		case m.screenedAt[s.Step]:
			mark = "~ "
		}
		if cursor && m.viol[s.Step] {
			mark = "▶!"
		} else if cursor && m.screenedAt[s.Step] {
			mark = "▶~"
		}
		if cursor && !m.filter.match(s) {
			style = StyleDim
		}
		out = append(out, Line{{mark + s.Line, style}})
	}
	for _, s := range before {
		row(s, false)
	}
	if m.cur != nil {
		row(m.cur, true)
	} else {
		out = append(out, line(StyleCursor, "▶ (before the first step)"))
	}
	scan(m.pos+1, m.db.Len()-1, h-len(out), &after)
	for _, s := range after {
		row(s, false)
	}
	return out
}

// EventLines describe the cursor's event in full: its line (wrapped to
// w), its log lines, its message links.
func (m *Model) EventLines(w, h int) []Line {
	c := m.cur
	if c == nil {
		return []Line{line(StyleDim, "before the first step: every node is yet to start")}
	}
	var out []Line
	for _, l := range wrap(c.Line, w) {
		out = append(out, line(StyleNormal, "%s", l))
	}
	if m.viol[c.Step] || m.screenedAt[c.Step] {
		for _, v := range m.preds.Violations {
			if v.Step == c.Step {
				st := StyleViolation
				if !v.Finding() {
					st = StyleDim
				}
				out = append(out, line(st, "%s", describeViolation(v)))
			}
		}
	}
	if c.Kind == node.KindRecv && c.SendStep >= 0 {
		out = append(out, line(StyleLink, "received from %s, sent at #%d (m follows it)", c.From, c.SendStep))
	}
	// One line per message type: where each message was received.
	var types []string
	got, lost, unrecorded := map[string][]string{}, map[string][]string{}, map[string][]string{}
	for _, s := range c.Sends {
		if _, ok := got[s.Type]; !ok {
			types = append(types, s.Type)
			got[s.Type] = nil
		}
		switch _, missing := replay.UnrecordedAfter(m.db.UnknownStretches(s.To), c.Step); {
		case len(s.Receipts) == 0 && missing:
			// A receipt may be in the receiver's unrecorded stretch.
			unrecorded[s.Type] = append(unrecorded[s.Type], string(s.To))
		case len(s.Receipts) == 0:
			lost[s.Type] = append(lost[s.Type], string(s.To))
		default:
			got[s.Type] = append(got[s.Type], fmt.Sprintf("%s #%s", s.To, joinInts(s.Receipts)))
		}
	}
	for _, t := range types {
		l := Line{{t + " received: " + strings.Join(got[t], ", "), StyleLink}}
		switch {
		case len(got[t]) == 0 && len(unrecorded[t]) > 0:
			l = Line{{t + ": no receipt recorded", StyleLost}}
		case len(got[t]) == 0:
			l = Line{{t + " received by nobody", StyleLost}}
		}
		if len(lost[t]) > 0 {
			l = append(l, Span{"; never received: " + strings.Join(lost[t], ", "), StyleLost})
		}
		if len(unrecorded[t]) > 0 {
			l = append(l, Span{"; receipt unknown (recording missing after it): " + strings.Join(unrecorded[t], ", "), StyleUnknown})
		}
		out = append(out, l)
	}
	for _, l := range c.Logs {
		out = append(out, line(StyleDim, "log: %s", l))
	}
	// Every line wraps, as the event line does: a violation's aux, a
	// long log line or a message's receivers are often wider than the
	// panel, and were cut at its edge.
	var wrapped []Line
	for _, l := range out {
		wrapped = append(wrapped, wrapLine(l, w)...)
	}
	if len(wrapped) > h {
		wrapped = wrapped[:h]
	}
	return wrapped
}

// wrapLine wraps a line wider than w: each of its spans on lines of its
// own, continuation lines indented.
func wrapLine(l Line, w int) []Line {
	if w <= 0 || utf8.RuneCountInString(l.String()) <= w {
		return []Line{l}
	}
	var out []Line
	for _, sp := range l {
		for _, t := range wrapIndent(strings.TrimLeft(sp.Text, " "), w, 2) {
			if len(out) > 0 && !strings.HasPrefix(t, " ") {
				t = "  " + t // a later span continues the line above
				if utf8.RuneCountInString(t) > w {
					t = t[2:]
				}
			}
			out = append(out, Line{{t, sp.Style}})
		}
	}
	return out
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " #")
}

func wrap(s string, w int) []string {
	if w <= 0 {
		return []string{s}
	}
	// One pass over the runes: a watch's value can be megabytes long.
	r := []rune(s)
	var out []string
	for len(r) > w {
		cut := w
		for i := w; i > w/2; i-- {
			if r[i] == ' ' {
				cut = i
				break
			}
		}
		out = append(out, string(r[:cut]))
		r = r[cut:]
		for len(r) > 0 && r[0] == ' ' {
			r = r[1:]
		}
	}
	return append(out, string(r))
}

// clip shortens a value shown in a panel to at most limit bytes (at a
// rune boundary), saying how much was left out: a panel shows a few
// screens of it at most.
func clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	head := printable.Cut(s, limit)
	return fmt.Sprintf("%s… (%s more)", head, humanize.IBytes(uint64(len(s)-len(head))))
}

// maxShownValue is how much of a watch's value the Watches panel shows.
const maxShownValue = 16 << 10

// flowCell is the width of one node's column in the message flow, at
// least; longer node names (n1000) widen every column to fit them, up to
// maxFlowCell.
const (
	flowCell    = 4
	maxFlowCell = 8
)

// flowCellWidth is the width of the message flow's columns for this run's
// node names.
func (m *Model) flowCellWidth() int {
	if m.flowCell == 0 {
		m.flowCell = flowCell
		for _, id := range m.nodes() {
			m.flowCell = max(m.flowCell, min(len(id)+1, maxFlowCell))
		}
	}
	return m.flowCell
}

// Flow is the message flow panel: a space-time diagram of the steps around
// the cursor, one column per node, each receive drawn as an arrow from its
// sender's column, messages never received marked ✗ at their receiver.
func (m *Model) Flow(w, h int) []Line {
	cell := m.flowCellWidth()
	if h <= 1 || len(m.nodes()) == 0 {
		return nil
	}
	rows := h - 1
	first := max(0, m.pos-rows/2)
	last := min(m.db.Len()-1, first+rows-1)
	first = max(0, min(first, last-rows+1))
	// The visible steps, read once: they choose the columns and are drawn.
	var steps []statedb.Step
	m.db.Steps(first, last, func(s *statedb.Step) bool {
		steps = append(steps, *s)
		return true
	})
	nodes := m.flowNodes(steps, w)
	col := map[node.ID]int{}
	for i, id := range nodes {
		col[id] = i
	}
	var hdr strings.Builder
	for _, id := range nodes {
		name := string(id)
		if len(name) > cell-1 {
			name = name[:cell-1]
		}
		fmt.Fprintf(&hdr, "%-*s", cell, name)
	}
	if all := len(m.nodes()); len(nodes) < all {
		fmt.Fprintf(&hdr, " (%d of %d nodes: those of these steps)", len(nodes), all)
	}
	out := []Line{line(StyleHeader, "%s", hdr.String())}
	// Lifelines: whether each node is up at the first row.
	up := map[node.ID]bool{}
	for _, id := range nodes {
		ns, err := m.db.State(id, first-1)
		up[id] = err == nil && len(ns.Leaves) > 0 && ns.Leaves[0].Value == "up"
	}
	links := m.linked()
	for i := range steps {
		s := &steps[i]
		cells := make([]rune, len(nodes)*cell)
		styles := make([]Style, len(cells))
		rowStyle := StyleNormal
		switch {
		case s.Step == m.pos:
			rowStyle = StyleCursor
		case links[s.Step]:
			rowStyle = StyleLink
		case m.viol[s.Step]:
			rowStyle = StyleViolation
		}
		for i, id := range nodes {
			c := i*cell + 1
			for k := i * cell; k < (i+1)*cell; k++ {
				cells[k] = ' '
			}
			switch _, unknown := m.db.Unknown(id, s.Step); {
			case unknown:
				cells[c] = '?'
				styles[c] = StyleUnknown
			case up[id]:
				cells[c] = '│'
				styles[c] = StyleDim
			}
		}
		xc, drawn := col[s.Node]
		x := xc*cell + 1
		sender, away := -1, 0 // the sender's cell, and the side facing away from the arrow
		if drawn && s.Kind == node.KindRecv {
			if f, ok := col[s.From]; ok && s.From != s.Node {
				fx := f*cell + 1
				lo, hi := min(fx, x), max(fx, x)
				for k := lo + 1; k < hi; k++ {
					cells[k], styles[k] = '─', rowStyle
				}
				cells[fx], styles[fx] = '○', rowStyle
				sender, away = fx, -1
				if fx < x {
					cells[x-1] = '▶'
				} else {
					cells[x+1], away = '◀', +1
				}
			}
		}
		for _, snd := range s.Sends {
			if drawn && len(snd.Receipts) == 0 && snd.To != s.Node {
				if t, ok := col[snd.To]; ok {
					c := t*cell + 1
					if c == sender {
						// The sender's ○ stays: the lost message to it is
						// marked beside it, away from the arrow.
						c += away
					}
					cells[c], styles[c] = '✗', StyleLost
				}
			}
		}
		if drawn {
			cells[x], styles[x] = glyph(s.Kind), rowStyle
		}
		switch s.Kind {
		case node.KindCrash:
			up[s.Node] = false
		case node.KindInit, node.KindRestart:
			up[s.Node] = true
		}
		var l Line
		for k := 0; k < len(cells); {
			j := k
			for j < len(cells) && styles[j] == styles[k] {
				j++
			}
			st := styles[k]
			if rowStyle == StyleCursor && st != StyleLost {
				st = StyleCursor
			}
			l = append(l, Span{string(cells[k:j]), st})
			k = j
		}
		l = append(l, Span{" " + s.Line, rowStyle})
		out = append(out, l)
	}
	return out
}

// flowNodes are the message flow's columns for the visible steps on a
// panel w wide: every node while they fit in two thirds of it (the rest is the
// steps' text), else the shown node and those the steps involve (their
// nodes, senders and the addressees of lost messages), nearest the
// cursor first, as many as fit; in natural order. A thousand nodes'
// columns pushed every arrow and line off the screen.
func (m *Model) flowNodes(steps []statedb.Step, w int) []node.ID {
	all := m.nodes()
	limit := max(4, w*2/3/m.flowCellWidth())
	if len(all) <= limit {
		return all
	}
	near := map[node.ID]int{}
	add := func(id node.ID, d int) {
		if r, ok := near[id]; id != "" && (!ok || d < r) {
			near[id] = d
		}
	}
	add(m.node, -1)
	for _, s := range steps {
		d := s.Step - m.pos
		d = max(d, -d)
		add(s.Node, d)
		if s.Kind == node.KindRecv {
			add(s.From, d)
		}
		for _, snd := range s.Sends {
			if len(snd.Receipts) == 0 {
				add(snd.To, d)
			}
		}
	}
	nodes := slices.Collect(maps.Keys(near))
	node.SortNatural(nodes)
	slices.SortStableFunc(nodes, func(a, b node.ID) int { return near[a] - near[b] })
	nodes = nodes[:min(len(nodes), limit)]
	node.SortNatural(nodes)
	return nodes
}

func glyph(k node.Kind) rune {
	switch k {
	case node.KindInit:
		return 'I'
	case node.KindTimer:
		return 'T'
	case node.KindInput:
		return 'P'
	case node.KindCrash:
		return 'X'
	case node.KindRestart:
		return 'R'
	case node.KindTask:
		return 'K'
	}
	return '●'
}

// stateAt is a node's state prepared for the tree.
type stateAt struct {
	ns      *statedb.NodeState
	leaves  []state.Leaf
	removed []string
	changed map[string]bool // the fields marked changed
	// before, when set, is the step changes are counted from instead of
	// the step before: at a restart, the node's last step before its
	// crash (every field is new after a restart; what matters is what
	// the restart did not restore).
	before int
}

func (m *Model) stateAt(pos int) (*stateAt, error) { return m.stateOf(m.node, pos) }

// stateOf is node id's state at pos prepared for the tree or the grid.
func (m *Model) stateOf(id node.ID, pos int) (*stateAt, error) {
	ns, err := m.db.State(id, pos)
	if err != nil {
		return nil, err
	}
	st := &stateAt{ns: ns, leaves: ns.Leaves, changed: ns.Changed, before: -1}
	have := map[string]bool{}
	for _, l := range ns.Leaves {
		have[l.Path] = true
	}
	gone := map[string]bool{}
	if crashPrev, ok := m.beforeCrash(id, pos); ok {
		old, err := m.db.State(id, crashPrev)
		if err == nil && old.Unknown == "" {
			st.before, st.changed = crashPrev, map[string]bool{}
			for _, c := range state.Diff(old.Leaves, ns.Leaves) {
				if have[c.Path] {
					st.changed[c.Path] = true
				} else {
					gone[c.Path] = true
				}
			}
		}
	}
	if st.before < 0 {
		for p := range ns.Changed {
			if !have[p] {
				gone[p] = true
			}
		}
	}
	// A nil that filled up is no leaf now, but it is not removed: the
	// tree shows what it holds.
	filled := state.Composites(ns.Leaves, gone)
	for p := range gone {
		if filled[p] == "" {
			st.removed = append(st.removed, p)
		}
	}
	slices.Sort(st.removed)
	return st, nil
}

// stateRows is the State panel's tree at the cursor.
func (m *Model) stateRows() []treeRow {
	st, err := m.stateAt(m.pos)
	if err != nil {
		return nil
	}
	views := make([]leafView, len(st.leaves))
	for i, l := range st.leaves {
		views[i] = leafView{path: l.Path, value: l.Value, changed: st.changed[l.Path]}
	}
	return buildTree(views, m.collapsed)
}

// State is the State panel: the shown node's state at the cursor as a
// tree, fields the cursor's step changed highlighted.
func (m *Model) State(w, h int) []Line {
	st, err := m.stateAt(m.pos)
	if err != nil {
		return []Line{line(StyleError, "%v", err)}
	}
	switch {
	case st.ns.Unknown != "":
		var out []Line
		for _, l := range wrap("state unknown: "+st.ns.Unknown, w) {
			out = append(out, line(StyleUnknown, "%s", l))
		}
		return out
	case len(st.leaves) == 0:
		return []Line{line(StyleDim, "%s has not started yet", m.node)}
	}
	rows := m.stateRows()
	sel := -1
	for i, r := range rows {
		if r.key == m.stateSel {
			sel = i
		}
	}
	if sel < 0 && len(rows) > 0 {
		sel = 0
		m.stateSel = rows[0].key
	}
	// The removed fields take at most a third of the panel (a crash or
	// a restart lists every field): the tree keeps the rest.
	removed := st.removed
	more := 0
	if limit := max(2, h/3) - 1; len(removed) > limit {
		removed, more = removed[:limit-1], len(removed)-(limit-1)
	}
	extra := 0
	if len(st.removed) > 0 {
		extra = 1 + len(removed)
		if more > 0 {
			extra++
		}
	}
	body := max(1, h-extra)
	if now := (shownState{m.node, m.pos, true}); m.stateShown != now {
		m.stateShown = now
		if c := m.revealChange(rows, body); c >= 0 {
			sel = c
		}
	}
	if sel < m.stateTop {
		m.stateTop = sel
	}
	if sel >= m.stateTop+body {
		m.stateTop = sel - body + 1
	}
	m.stateTop = max(0, min(m.stateTop, len(rows)-body))
	var out []Line
	for i := m.stateTop; i < len(rows) && len(out) < body; i++ {
		r := rows[i]
		indent := strings.Repeat("  ", r.depth)
		style := StyleNormal
		if r.changed {
			style = StyleChanged
		}
		var text string
		switch {
		case r.leaf:
			text = fmt.Sprintf("%s%s = %s", indent, r.label, m.showValue(r.value))
		case m.collapsed[r.key]:
			text = fmt.Sprintf("%s▸ %s", indent, r.label)
		default:
			text = fmt.Sprintf("%s▾ %s", indent, r.label)
		}
		if r.changed && r.leaf {
			text += "  ◀ changed"
		}
		if i == sel && m.focus == PanelState {
			style = StyleSelected
		}
		out = append(out, Line{{text, style}})
	}
	if len(st.removed) > 0 {
		if st.before >= 0 {
			out = append(out, line(StyleChanged, "held at #%d, before the crash, and not restored:", st.before))
		} else {
			out = append(out, line(StyleChanged, "removed by #%d:", m.pos))
		}
		for _, p := range removed {
			out = append(out, line(StyleChanged, "  %s", p))
		}
		if more > 0 {
			out = append(out, line(StyleChanged, "  ... and %d more (d lists every change)", more))
		}
	}
	return out
}

// shownState is a node and a step the State panel drew.
type shownState struct {
	node node.ID
	pos  int
	set  bool
}

// revealChange scrolls the State panel, when the cursor moved and none of
// what its step changed is in view, to the first changed row, and selects
// it (in view, it selects it only in place of the panel's first row); it
// returns that row, or -1 when nothing moved. A big state otherwise
// kept its window where the last step left it, and the change that
// mattered sat off screen. The selection stays where the user put it while
// the panel has the focus.
func (m *Model) revealChange(rows []treeRow, body int) int {
	if m.focus == PanelState {
		return -1
	}
	first, field := -1, -1
	for i, r := range rows {
		// An open subtree's header is marked when a leaf under it
		// changed; the leaf is what must be seen.
		if !r.changed || !(r.leaf || m.collapsed[r.key]) {
			continue
		}
		if first < 0 {
			first = i
		}
		if field < 0 && !strings.HasPrefix(r.key, "@") {
			field = i
		}
	}
	if first < 0 {
		return -1
	}
	if field >= 0 {
		// A field of the node before the runtime's rows (@status,
		// @tasks): what the step did to the node is what h should show.
		first = field
	}
	inView := first >= m.stateTop && first < m.stateTop+body
	if inView {
		// In view already: the selection moves to it only from the
		// panel's first row, where nobody chose to put it (Tab then h
		// showed the history of @status, not of the field marked
		// changed).
		if len(rows) > 0 && (m.stateSel == "" || m.stateSel == rows[0].key || m.stateAuto) {
			m.stateSel, m.stateAuto = rows[first].key, true
			return first
		}
		return -1
	}
	m.stateSel, m.stateAuto = rows[first].key, true
	m.stateTop = max(0, first-body/3)
	return first
}

// beforeCrash is, when step pos restarts node id, the node's last step
// before the crash the restart follows.
func (m *Model) beforeCrash(id node.ID, pos int) (int, bool) {
	st, err := m.db.Step(pos)
	if err != nil || st.Node != id || st.Kind != node.KindRestart || st.PrevOnNode < 0 {
		return 0, false
	}
	crash, err := m.db.Step(st.PrevOnNode)
	if err != nil || crash.Kind != node.KindCrash || crash.PrevOnNode < 0 {
		return 0, false
	}
	return crash.PrevOnNode, true
}

// Violations is the Violations panel: the checker's report.
func (m *Model) Violations(w, h int) []Line {
	if m.preds == nil {
		msg := "no predicates checked (start with --preds FILE)"
		if m.indexTask != nil && m.script() != "" {
			// Checked with the index: the results come at its end.
			msg = fmt.Sprintf("%s: checked while indexing, the results come when it ends (%s)", m.scriptName(), m.indexing)
		}
		out := []Line{line(StyleDim, "%s", msg)}
		if m.recheckErr != "" {
			out = append(out, line(StyleError, "re-check failed: %s", m.recheckErr))
		}
		return out
	}
	var out []Line
	selLast := -1 // the selected violation's last line
	for i, vi := range m.listed {
		v := m.preds.Violations[vi]
		mark := "  "
		if v.Step == m.pos {
			mark = "▶ "
		}
		where := fmt.Sprintf("#%d", v.Step)
		if v.Kind == "liveness" {
			alarm := "screened"
			switch {
			case v.Alarm:
				alarm = "alarm"
			case v.Unjudged:
				alarm = "unjudged"
			}
			where = intervalText(v) + " " + alarm
		}
		text := fmt.Sprintf("%s%s %s %s %s %s", mark, v.Predicate, v.Kind, where, v.Node, v.Event)
		text += witnessText(" witness ", v)
		if v.Aux != "" {
			text += " " + v.Aux
		}
		style := StyleViolation
		if !v.Finding() {
			style = StyleDim // screened: not a violation
		}
		if i == m.violSel && m.focus == PanelViolations {
			// Selected, it is shown whole: witness and aux values are
			// longer than a line.
			for _, l := range wrap(text, max(w, 20)) {
				out = append(out, Line{{l, StyleSelected}})
			}
			selLast = len(out) - 1
			continue
		}
		out = append(out, Line{{text, style}})
	}
	if m.violationCount() == 0 {
		if len(m.preds.Errors) > 0 {
			out = append(out, line(StyleError, "no violations found in %d steps, but not fully checked: the errors below disabled predicates", m.preds.Steps))
		} else {
			out = append(out, line(StyleDim, "no violations in %d steps", m.preds.Steps))
		}
	}
	for _, e := range m.preds.Errors {
		out = append(out, line(StyleError, "error: %s", e))
	}
	if m.recheckErr != "" {
		for _, l := range wrap("re-check failed; these are the previous results: "+m.recheckErr, w) {
			out = append(out, line(StyleError, "%s", l))
		}
	}
	if selLast < 0 {
		selLast = m.violSel
	}
	if selLast >= h && len(out) > h {
		out = out[selLast-h+1:]
	}
	return out
}

// Watches is the Watches panel.
func (m *Model) Watches(w, h int) []Line {
	if len(m.watches) == 0 {
		var out []Line
		for _, l := range wrap(m.watchHint(), w) {
			out = append(out, line(StyleDim, "%s", l))
		}
		return out
	}
	var out []Line
	for i, wt := range m.watches {
		exprStyle, style := StyleHeader, StyleNormal
		switch {
		case wt.err:
			style = StyleError
		case wt.changed:
			style = StyleChanged
		}
		if i == m.watchSel && m.focus == PanelWatches {
			exprStyle = StyleSelected
		}
		for _, l := range wrap(wt.expr, w) {
			out = append(out, line(exprStyle, "%s", l))
		}
		for _, l := range wrap("= "+clip(wt.value, maxShownValue), w-2) {
			out = append(out, line(style, "  %s", l))
		}
		if wt.changed && len(wt.delta) > 0 {
			for _, l := range wrap(fmt.Sprintf("changed by #%d: %s", wt.deltaStep, strings.Join(wt.delta, "; ")), w-2) {
				out = append(out, line(StyleChanged, "  %s", l))
			}
		}
	}
	return out
}

// tableDecl finds the tables a predicates script declares (NAME =
// table(...)), for examples that work on the trace at hand.
var tableDecl = regexp.MustCompile(`(?m)^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*table\(`)

// derivedDecl finds the derived values a predicates script declares (NAME
// = derived(...)).
var derivedDecl = regexp.MustCompile(`(?m)^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*derived\(`)

// derivedExample is a watch of the first derived value a script declares
// that is no accumulator (one that reads itself on its line): a watch
// knows no earlier value of it, and the suggested watch failed (a new
// user's issued()). "" if there is none.
func derivedExample(src []byte) string {
	for _, d := range derivedDecl.FindAllSubmatchIndex(src, -1) {
		name := string(src[d[2]:d[3]])
		line, _, _ := bytes.Cut(src[d[1]:], []byte("\n"))
		if !bytes.Contains(line, []byte(name+"(")) {
			return name + "()"
		}
	}
	return ""
}

// watchHint is the empty Watches panel's text, with examples that work
// on this trace: its first node's timers, and the first table and the
// first derived value of the predicates file, if it declares them.
func (m *Model) watchHint() string {
	script := m.script()
	if m.hintFor != script || m.hint == "" {
		m.hintFor = script
		var examples []string
		if src, err := os.ReadFile(script); script != "" && err == nil {
			if t := tableDecl.FindSubmatch(src); t != nil {
				examples = append(examples, fmt.Sprintf("[r for r in %s]", t[1]))
			}
			if d := derivedExample(src); d != "" {
				examples = append(examples, d)
			}
		}
		if nodes := m.nodes(); len(nodes) > 0 {
			examples = append(examples, fmt.Sprintf("timers(%q)", nodes[0]))
		}
		examples = append(examples, "unknown_nodes()")
		m.hint = "w adds a watch: a Starlark expression evaluated at the cursor, e.g. " + strings.Join(examples, ", ") +
			`; the predicates file's tables, derived values and functions work too (to watch another type, add T = table("pkg.Type") to it and press r)`
	}
	return m.hint
}

// StatusLines are the two bottom lines for a width: the prompt or the
// last message, and a reminder of the main keys (a message too long for
// one line takes both).
func (m *Model) StatusLines(w int) []Line {
	var first Line
	switch {
	case m.prompt != nil:
		// The end of a long answer is what is being typed: keep it in view.
		text := m.prompt.text
		if room := w - utf8.RuneCountInString(m.prompt.label) - 1; w > 0 && len(text) > room {
			text = append([]rune{'…'}, text[len(text)-max(0, room-1):]...)
		}
		first = Line{{m.prompt.label, StyleHeader}, {string(text) + "█", StyleNormal}}
	case m.busy != "":
		first = line(StyleHeader, "%s", m.busy)
	case m.searchNote != "":
		first = line(StyleHeader, "%s (Esc stops it; keys still work)", m.searchNote)
	case m.checking != "":
		first = line(StyleHeader, "%s (keys still work)", m.checking)
	default:
		pos := "start"
		_, total, _ := m.db.Indexing()
		if m.cur != nil {
			pos = fmt.Sprintf("#%d/%d t=%v", m.pos, total-1, time.Duration(m.cur.Time))
		}
		if m.indexing != "" {
			pos += "  [" + m.indexing + "]"
		}
		style := StyleNormal
		if m.err {
			style = StyleError
		}
		prefix := pos + "  "
		if full := prefix + m.status; w > 0 && utf8.RuneCountInString(full) > w {
			ls := wrap(full, w)
			first := []rune(ls[0])
			n := min(len(first), utf8.RuneCountInString(prefix))
			second := []rune(strings.Join(ls[1:], " "))
			if len(second) > w {
				second = append(second[:max(0, w-1)], '…')
			}
			return []Line{{{string(first[:n]), StyleHeader}, {string(first[n:]), style}}, {{string(second), style}}}
		}
		first = Line{{prefix, StyleHeader}, {m.status, style}}
	}
	keys := "? help  q quit  ←→ step  <> node step  v/V violation  m follow message  g go to  ]/[ run until change  r re-check  p predict  c critical  w watch  / filter  h history  d diff  Tab panel"
	if m.parent != nil {
		keys = "b back  " + keys
	}
	hint := line(StyleDim, "%s", keys)
	return []Line{first, hint}
}

// PopupView is what the open popup shows.
type PopupView struct {
	Title      string
	Lines      []Line
	Sel        int  // the selected line (scrolled into view)
	Selectable bool // whether Sel is highlighted (Enter acts on it)
}

// PopupWindow is what the open popup shows in at most w x h cells: lines
// wrapped to w unless they are selectable, scrolled to the popup's
// position (or its selection), with the position in the title when not
// everything fits.
func (m *Model) PopupWindow(w, h int) (PopupView, bool) {
	p := m.popup
	if p == nil {
		return PopupView{}, false
	}
	h = max(1, h)
	v := PopupView{Title: p.title, Selectable: p.onEnter != nil, Sel: -1}
	var all []Line
	for _, it := range p.items {
		if v.Selectable || w <= 0 {
			all = append(all, Line{{it.text, it.style}})
			continue
		}
		for _, l := range wrapIndent(it.text, w, it.indent) {
			all = append(all, Line{{l, it.style}})
		}
	}
	if v.Selectable {
		if p.sel < p.top {
			p.top = p.sel
		}
		if p.sel >= p.top+h {
			p.top = p.sel - h + 1
		}
	}
	p.top = max(0, min(p.top, len(all)-h))
	p.rows = min(h, len(all))
	v.Lines = all[p.top:min(len(all), p.top+h)]
	if v.Selectable {
		v.Sel = p.sel - p.top
	}
	if len(all) > h {
		v.Title += fmt.Sprintf("  lines %d-%d of %d", p.top+1, p.top+len(v.Lines), len(all))
	}
	return v, true
}

// wrapIndent wraps s to w cells, starting continuation lines with indent
// spaces.
func wrapIndent(s string, w, indent int) []string {
	if indent >= w/2 {
		indent = 2
	}
	first := wrap(s, w)
	if len(first) <= 1 {
		return first
	}
	out := []string{first[0]}
	rest := strings.TrimLeft(strings.Join(first[1:], " "), " ")
	for _, l := range wrap(rest, w-indent) {
		out = append(out, strings.Repeat(" ", indent)+l)
	}
	return out
}

// Popup describes the open popup (ok false: none).
func (m *Model) Popup() (PopupView, bool) {
	p := m.popup
	if p == nil {
		return PopupView{}, false
	}
	v := PopupView{Title: p.title, Sel: p.sel, Selectable: p.onEnter != nil}
	for _, it := range p.items {
		v.Lines = append(v.Lines, Line{{it.text, it.style}})
	}
	return v, true
}

// showValue is a field's value as the debugger shows it: a time.Time as
// the time since the start of the run, like every other time on the
// screen (state.ShowValue).
func (m *Model) showValue(v string) string {
	return state.ShowValue(v, m.db.Meta().Start)
}
