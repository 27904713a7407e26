package tui

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/statedb"
)

// The grid shows every agent's accepted value at the cursor; stepping
// from #260 to #261 (n4 accepts round 82's x7) changes n4's cell, and
// only that cell is highlighted.
func TestGridFollowsTheCursor(t *testing.T) {
	m, _ := openDemo(t, 260)
	u := startUI(t, m)
	u.keys("\t/Agent.AcceptedValue\n+")
	u.keys("/Agent.AcceptedRound\n+")
	if got := m.GridColumns(); !slices.Equal(got, []string{"Agent.AcceptedValue", "Agent.AcceptedRound"}) {
		t.Fatalf("columns %v", got)
	}
	u.waitFor("Cluster grid at #260")
	// At #260, as the walkthrough's watch reads it.
	for id, want := range map[string]string{"n1": `"x5" 47`, "n3": `"x7" 35`, "n4": `"x5" 56`, "n5": `"x5" 56`, "n6": `"" 0`} {
		if got := gridRow(u, id); got != want {
			t.Fatalf("#260: grid row %s = %q, want %q:\n%s", id, got, want, u.text())
		}
	}
	if u.row(`"x7" *`) != "" || u.row(`"x5" *`) != "" {
		t.Fatalf("#260 changes no agent field, yet a cell is marked:\n%s", u.text())
	}
	u.press(tcell.KeyRight, 0, 0)
	u.waitFor("Cluster grid at #261")
	if got := gridRow(u, "n4"); got != `"x7" * 82 *` {
		t.Fatalf("#261: n4's row %q, want the accepted x7, round 82, marked changed:\n%s", got, u.text())
	}
	if got := gridRow(u, "n3"); got != `"x7" 35` {
		t.Fatalf("#261: n3's row %q", got)
	}
	changed, _ := u.styleOf(`"x7" *`)
	plain, _ := u.styleOf(`"x5"  `)
	if changed == plain {
		t.Fatal("a changed cell is drawn like an unchanged one")
	}
	// + again removes the column; G brings the message flow back.
	u.keys("/Agent.AcceptedRound\n+")
	if got := m.GridColumns(); !slices.Equal(got, []string{"Agent.AcceptedValue"}) {
		t.Fatalf("after removing: %v", got)
	}
	u.keys("G")
	u.waitFor("Message flow")
}

// gridRow is a node's grid cells as the screen shows them, single-spaced.
func gridRow(u *ui, id string) string {
	for _, l := range strings.Split(u.text(), "\n") {
		if i := strings.Index(l, "│"+id+" "); i >= 0 {
			cells := l[i+len("│"):]
			cells = cells[:strings.Index(cells, "│")]
			return strings.Join(strings.Fields(cells)[1:], " ")
		}
	}
	return ""
}

// Nodes are in natural order in the grid and the message flow, and { }
// go through them in that order: n2 before n10.
func TestGridNaturalNodeOrder(t *testing.T) {
	m := paxosModel(t, 12, func(steps int) int { return steps - 1 })
	want := []node.ID{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10", "n11", "n12"}
	if !slices.Equal(m.nodes(), want) {
		t.Fatalf("nodes %v", m.nodes())
	}
	if hdr := m.Flow(200, 10)[0].String(); strings.Index(hdr, "n2 ") > strings.Index(hdr, "n10") {
		t.Fatalf("message flow header %q", hdr)
	}
	m.node = "n9"
	m.SelectNode(+1)
	if m.node != "n10" {
		t.Fatalf("} from n9 went to %s", m.node)
	}
	m.focus = PanelState
	m.FindField("Agent.Promised")
	m.GridColumn()
	var rows []string
	for _, l := range m.Grid(200, 20)[1:] {
		rows = append(rows, strings.Fields(l.String())[0])
	}
	if !slices.Equal(rows, []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10", "n11", "n12"}) {
		t.Fatalf("grid rows %v", rows)
	}
}

// y on a State field lists the chain; Enter on a step's line goes there.
func TestWhyListEnterJumps(t *testing.T) {
	m, _ := openDemo(t, 269)
	u := startUI(t, m)
	u.keys("y")
	if _, open := m.Popup(); open || !strings.Contains(u.statusText(), "State panel") {
		t.Fatalf("y outside the State panel:\n%s", u.text())
	}
	u.keys("\t/Agent.AcceptedValue\ny")
	u.waitFor("why n7 Agent.AcceptedValue at #269")
	u.waitFor(`#260 t=110.045319ms n5 recv paxos.Last{Round:82 AcceptedRound:35 AcceptedValue:x7} from n3`)
	u.waitFor("inferred: equal value")
	// The first selectable line is #269 itself; go down to #260's.
	p, _ := m.Popup()
	for !strings.Contains(p.Lines[p.Sel].String(), "#260 t=110.045319ms n5 recv") {
		u.press(tcell.KeyDown, 0, 0)
		p, _ = m.Popup()
		if p.Sel == len(p.Lines)-1 {
			t.Fatalf("no #260 line:\n%s", u.text())
		}
	}
	u.press(tcell.KeyEnter, 0, 0)
	if _, open := m.Popup(); open || m.Pos() != 260 {
		t.Fatalf("Enter on #260's line: at #%d, popup open %v", m.Pos(), open)
	}
}

// With more nodes than columns fit in two thirds of the panel, the message flow
// shows the shown node and those the visible steps involve, in natural
// order, and says so: one column per node of 60 pushed every arrow and
// step off the screen.
func TestFlowShowsTheNodesOfItsSteps(t *testing.T) {
	m := paxosModel(t, 60, func(steps int) int { return steps / 2 })
	db, at := m.db, m.pos
	const w, h = 120, 12
	flow := m.Flow(w, h)
	hdr := flow[0].String()
	cols := strings.Fields(strings.SplitN(hdr, "(", 2)[0])
	if len(cols) == 0 || len(cols) > w*2/3/m.flowCellWidth() || !strings.Contains(hdr, " of 60 nodes") {
		t.Fatalf("header %q: want at most %d of the 60 nodes, said so", hdr, w*2/3/m.flowCellWidth())
	}
	ids := make([]node.ID, len(cols))
	for i, c := range cols {
		ids[i] = node.ID(c)
	}
	sorted := slices.Clone(ids)
	node.SortNatural(sorted)
	if !slices.Contains(ids, m.node) || !slices.Equal(ids, sorted) {
		t.Fatalf("columns %v: want the shown node %s among them, in natural order", ids, m.node)
	}
	// Every visible step's node has its column and its glyph, and the
	// step's text is on the screen.
	for _, l := range flow[1:] {
		text := []rune(l.String())
		if len(text) > 0 && !strings.Contains(string(text[:min(len(text), w)]), "#") {
			t.Fatalf("a step's text is off a %d-wide screen: %q", w, string(text))
		}
	}
	cur, err := db.Step(at)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ids, cur.Node) {
		t.Fatalf("the cursor's node %s has no column: %v", cur.Node, ids)
	}
}

// paxosModel opens a model on a 100 ms paxos run (seed 3) of nodes nodes,
// at the step at picks from the run's length.
func paxosModel(t *testing.T, nodes int, at func(steps int) int) *Model {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Nodes = 3, nodes
	cfg = cfg.WithDefaults(paxos.System)
	cfg.Time = 100 * time.Millisecond
	trace := simtest.Record(t, paxos.System, cfg, filepath.Join(t.TempDir(), "paxos.lz4"))
	db, _, err := statedb.Ensure([]string{trace}, "", statedb.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	m, err := New(Config{DB: db, Traces: []string{trace}, Registry: registry, At: at(db.Len())})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
