package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples/lockserver"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/statedb"
)

// In the demo n1's Leader.Lasts is nil until its first promise arrives at
// #93: a list that filled up, which the State panel does not list as
// removed, and which d shows as filled.
func TestAListThatFillsUpIsNotRemoved(t *testing.T) {
	m, _ := openDemo(t, 93)
	if m.node != "n1" {
		t.Fatalf("the cursor's node is %s, want n1", m.node)
	}
	panel := strings.Join(lineStrings(m.State(120, 400)), "\n")
	if !strings.Contains(panel, "Lasts") {
		t.Fatalf("the State panel does not show Leader.Lasts:\n%s", panel)
	}
	if i := strings.Index(panel, "removed by"); i >= 0 && strings.Contains(panel[i:], "Leader.Lasts") {
		t.Fatalf("the State panel lists the filled list as removed:\n%s", panel)
	}
	u := startUI(t, m)
	u.keys("d\n")
	p, open := m.Popup()
	if !open {
		t.Fatalf("d opened no diff:\n%s", u.text())
	}
	if text := strings.Join(lineStrings(p.Lines), "\n"); !strings.Contains(text, "Leader.Lasts: nil → [1 element]") {
		t.Fatalf("the diff does not show the list filled:\n%s", text)
	}
}

// m on a task's resume goes to the step that woke it: the receive of the
// Grant the worker waited for.
func TestFollowFromATaskResumeGoesToWhatWokeIt(t *testing.T) {
	m, _, _ := openRun(t, lockserver.System, "none", 1, "", 24)
	if m.cur == nil || m.cur.Kind.String() != "task" || !strings.Contains(m.cur.Line, "woken by msg") {
		t.Fatalf("#24 is not a task woken by a message: %+v", m.cur)
	}
	want := m.cur.WokenAt
	if want < 0 || want >= 24 {
		t.Fatalf("#24 was woken at #%d", want)
	}
	m.FollowMessage()
	if m.pos != want {
		t.Fatalf("m from #24 went to #%d, want #%d (status %q)", m.pos, want, m.status)
	}
	if m.cur.Node != "c3" || m.cur.MsgType == "" {
		t.Fatalf("#%d is not the receive that woke the task: %s", want, m.cur.Line)
	}
}

// d on a pinned node whose event is not the cursor's proposes the step
// before that node's latest event, whose change it then shows.
func TestDiffDefaultForAPinnedNode(t *testing.T) {
	m, _ := openDemo(t, 269)
	u := startUI(t, m)
	cursorNode := m.cur.Node
	for m.node == cursorNode {
		u.keys("}")
	}
	var last *statedb.Step
	m.db.Steps(m.pos, 0, func(s *statedb.Step) bool {
		if s.Node == m.node {
			c := *s
			last = &c
			return false
		}
		return true
	})
	if last == nil || last.PrevOnNode < 0 {
		t.Fatalf("%s has no two steps before #269", m.node)
	}
	u.keys("d")
	if m.prompt == nil {
		t.Fatalf("d asked nothing:\n%s", u.text())
	}
	want := fmt.Sprintf("diff %s at #269 against step: %d", m.node, last.PrevOnNode)
	if got := m.prompt.label + string(m.prompt.text); got != want {
		t.Fatalf("d on pinned %s: %q, want %q", m.node, got, want)
	}
}

// h on a list that filled up shows its versions (nil, then [...]) as
// replay history does; it said the list was not a field.
func TestHistoryOfAContainer(t *testing.T) {
	m, _ := openDemo(t, 93)
	m.focus = PanelState
	m.stateSel = "Leader.Lasts"
	m.History()
	p, open := m.Popup()
	if !open {
		t.Fatalf("h on Leader.Lasts opened nothing: %s", m.status)
	}
	text := strings.Join(lineStrings(p.Lines), "\n")
	if !strings.Contains(text, "nil") || !strings.Contains(text, "[...]") {
		t.Fatalf("the history of Leader.Lasts:\n%s", text)
	}
	// A struct was never nil: it has no versions of its own.
	m.popup = nil
	m.stateSel = "Leader"
	m.History()
	if _, open := m.Popup(); open || !strings.Contains(m.status, "select a value below it") {
		t.Fatalf("h on Leader: %q", m.status)
	}
}

// At a restart the State panel compares the node with its last state
// before the crash: every field is new after a restart, and all of them
// were marked changed, hiding what the restart did not restore (a new
// user's trial). In the demo n1 crashes at #421 and restarts at #496:
// its agent's promises come back from disk, its leader's round does not.
func TestStateAtARestartComparesWithBeforeTheCrash(t *testing.T) {
	m, _ := openDemo(t, 496)
	if m.node != "n1" || m.cur.Kind != node.KindRestart {
		t.Fatalf("#496 is %s %s, want n1's restart", m.cur.Node, m.cur.Kind)
	}
	st, err := m.stateAt(m.pos)
	if err != nil {
		t.Fatal(err)
	}
	if st.before < 0 || len(st.changed) == 0 || len(st.changed) >= len(st.leaves) {
		t.Fatalf("compared with #%d: %d of %d fields changed", st.before, len(st.changed), len(st.leaves))
	}
	panel := strings.Join(lineStrings(m.State(120, 400)), "\n")
	for _, l := range st.leaves {
		if strings.HasPrefix(l.Path, "Agent.") && st.changed[l.Path] {
			t.Errorf("%s was restored from disk but is marked changed", l.Path)
		}
	}
	if len(st.removed) == 0 || !strings.Contains(panel, "held at #") || !strings.Contains(panel, "before the crash, and not restored:") {
		t.Fatalf("the panel does not say what was not restored:\n%s", panel)
	}
	// On a screen of 20 lines the list leaves the tree most of them (it
	// took all but one when long: a new user saw one field at a time).
	small := lineStrings(m.State(120, 20))
	tree := slices.IndexFunc(small, func(l string) bool { return strings.HasPrefix(l, "held at #") })
	if len(small) > 20 || tree < 12 {
		t.Fatalf("%d lines, the tree's %d:\n%s", len(small), tree, strings.Join(small, "\n"))
	}
}

// The selected violation is shown whole, wrapped: its witness and aux
// values ran past the panel's edge, cut off at any width (a new user's
// trial at 200 columns).
func TestTheSelectedViolationIsShownWhole(t *testing.T) {
	m, _ := openDemo(t, 269)
	if m.preds == nil || len(m.listed) == 0 {
		t.Fatal("the demo has no violations listed")
	}
	m.focus = PanelTimeline
	whole := lineStrings(m.Violations(10000, 50))[0]
	m.focus, m.violSel = PanelViolations, 0
	narrow := lineStrings(m.Violations(40, 50))
	fields := strings.Fields(whole)
	shown := strings.Fields(strings.Join(narrow, " "))
	if len(narrow) < 2 || len(shown) < len(fields) || !slices.Equal(shown[:len(fields)], fields) {
		t.Fatalf("the selected violation at 40 columns:\n%s\nwhole: %s", strings.Join(narrow, "\n"), whole)
	}
}
