package tui

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/replaycheck/replaycheck/node"
)

// nodes are the trace's nodes in the order the debugger shows them
// everywhere (message flow columns, { }, the grid): natural order, so n2
// comes before n10, as replay info lists them.
func (m *Model) nodes() []node.ID {
	if m.sortedNodes == nil {
		m.sortedNodes = slices.Clone(m.db.Nodes())
		node.SortNatural(m.sortedNodes)
	}
	return m.sortedNodes
}

// ToggleGrid shows the cluster grid in place of the message flow, or the
// message flow again.
func (m *Model) ToggleGrid() {
	m.grid = !m.grid
	switch {
	case !m.grid:
		m.say("message flow")
	case len(m.gridCols) == 0:
		m.say("cluster grid: select a field in the State panel and press + to add it as a column")
	default:
		m.say("cluster grid: %s (+ on a State field adds or removes a column)", strings.Join(m.gridCols, ", "))
	}
}

// GridColumn adds the State panel's selected field to the grid's
// columns, or removes it if it is one, and shows the grid.
func (m *Model) GridColumn() {
	path := m.stateSel
	leaf := false
	for _, r := range m.stateRows() {
		if r.key == path {
			leaf = r.leaf
		}
	}
	if m.focus != PanelState || !leaf {
		m.say("+ adds the field selected in the State panel to the cluster grid: Tab there and select a field (/ finds one)")
		return
	}
	if i := slices.Index(m.gridCols, path); i >= 0 {
		m.gridCols = slices.Delete(m.gridCols, i, i+1)
		m.say("grid: removed %s", path)
	} else {
		m.gridCols = append(m.gridCols, path)
		m.say("grid: added %s (G toggles the grid and the message flow)", path)
	}
	m.grid = true
}

// GridColumns are the grid's columns, in the order they were added.
func (m *Model) GridColumns() []string { return slices.Clone(m.gridCols) }

// Grid is the cluster grid: one row per node, one column per chosen field,
// every node's value at the cursor; a cell the cursor's step changed is
// highlighted and marked *, so moving the cursor shows the cluster
// changing in time.
func (m *Model) Grid(w, h int) []Line {
	if len(m.gridCols) == 0 {
		return []Line{line(StyleDim, "no columns: select a field in the State panel (Tab) and press + to add it")}
	}
	nodes := m.nodes()
	cells := make([][]string, len(nodes))
	changed := make([][]bool, len(nodes))
	width := make([]int, len(m.gridCols)+1)
	width[0] = len("node")
	for i, id := range nodes {
		width[0] = max(width[0], utf8.RuneCountInString(string(id)))
		cells[i] = make([]string, len(m.gridCols))
		changed[i] = make([]bool, len(m.gridCols))
		st, err := m.stateOf(id, m.pos) // a restart counts from before its crash, as in the State panel
		if err != nil {
			return []Line{line(StyleError, "%v", err)}
		}
		ns := st.ns
		vals := map[string]string{}
		for _, l := range ns.Leaves {
			vals[l.Path] = l.Value
		}
		for j, c := range m.gridCols {
			v, ok := vals[c]
			switch {
			case ns.Unknown != "":
				v = "?"
			case !ok:
				v = "-" // no such field on this node now (down, not started, or gone)
			default:
				v = m.showValue(v)
			}
			if st.changed[c] {
				v += " *"
				changed[i][j] = true
			}
			cells[i][j] = v
		}
	}
	for j, c := range m.gridCols {
		width[j+1] = utf8.RuneCountInString(c)
		for i := range nodes {
			width[j+1] = max(width[j+1], utf8.RuneCountInString(cells[i][j]))
		}
		width[j+1] = min(width[j+1], 40)
	}
	pad := func(s string, n int) string {
		if r := []rune(s); len(r) > n {
			return string(r[:n-1]) + "…"
		}
		return s + strings.Repeat(" ", n-utf8.RuneCountInString(s))
	}
	hdr := Line{{pad("node", width[0]), StyleHeader}}
	for j, c := range m.gridCols {
		hdr = append(hdr, Span{"  " + pad(c, width[j+1]), StyleHeader})
	}
	out := []Line{hdr}
	for i, id := range nodes {
		if len(out) >= h {
			break
		}
		st := StyleNormal
		if m.cur != nil && m.cur.Node == id {
			st = StyleCursor // the node whose step the cursor is on
		}
		l := Line{{pad(string(id), width[0]), st}}
		for j := range m.gridCols {
			cs := StyleNormal
			if changed[i][j] {
				cs = StyleChanged
			}
			l = append(l, Span{"  " + pad(cells[i][j], width[j+1]), cs})
		}
		out = append(out, l)
	}
	return out
}

// flowTitle is the title of the panel that shows the message flow or the
// grid.
func (m *Model) flowTitle() string {
	if m.grid {
		return fmt.Sprintf("Cluster grid at #%d (G: message flow; + on a State field: add/remove a column; * changed by this step)", m.pos)
	}
	return "Message flow"
}
