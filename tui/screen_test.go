package tui

// What the screen says must be true (issue 10, items 14 and 5).

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"

	"github.com/replaycheck/replaycheck/examples/chainrep"
	"github.com/replaycheck/replaycheck/examples/randtree"
	"github.com/replaycheck/replaycheck/examples/transport"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/scripts"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/statedb"
	"github.com/replaycheck/replaycheck/system"
)

// openRun records a run of sys and opens a model on it, with the bundled
// script named script ("" for none).
func openRun(t *testing.T, sys *system.System, bug string, seed uint64, script string, at int) (*Model, string, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug = seed, bug
	trace := simtest.Record(t, sys, cfg.WithDefaults(sys), filepath.Join(dir, "run.lz4"))
	path := ""
	if script != "" {
		src, err := scripts.FS.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(dir, script)
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg := system.NewRegistry(sys)
	db, _, err := statedb.Ensure([]string{trace}, "", statedb.Options{Registry: reg, Preds: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	m, err := New(Config{DB: db, Traces: []string{trace}, Registry: reg, Preds: path, At: at})
	if err != nil {
		t.Fatal(err)
	}
	return m, trace, path
}

// startUISized is startUI on a screen of w x h.
func startUISized(t *testing.T, m *Model, w, h int) *ui {
	t.Helper()
	u := startUI(t, m)
	u.view.app.QueueUpdateDraw(func() { u.screen.SetSize(w, h) })
	u.press(tcell.KeyRune, 'f', 0) // a harmless key: waits for a draw at the new size
	return u
}

// statusText is the bottom two rows of the screen.
func (u *ui) statusText() string {
	rows := strings.Split(strings.TrimRight(u.text(), "\n"), "\n")
	return strings.Join(rows[len(rows)-2:], "\n")
}

// At #260 n5 receives n3's promise and sends Begins, the one to n3 lost:
// n3's column is the sender of the arrow, not a lost message.
func TestFlowKeepsTheSenderOfALostMessage(t *testing.T) {
	m, _ := openDemo(t, 260)
	var row []rune
	for _, l := range m.Flow(80, 12) {
		if strings.Contains(l.String(), "#260 L=") {
			row = []rune(l.String())
		}
	}
	if row == nil {
		t.Fatal("no row for #260 in the message flow")
	}
	n2, n3, n5 := 1*flowCell+1, 2*flowCell+1, 4*flowCell+1
	if row[n3] != '○' || row[n5] != '●' || row[n5-1] != '▶' {
		t.Fatalf("#260's arrow from n3 to n5 is not drawn whole: %q", string(row))
	}
	if row[n2] != '✗' {
		t.Fatalf("the Begin to n2 is not marked lost: %q", string(row))
	}
	if row[n3-1] != '✗' {
		t.Fatalf("the Begin to n3 is not marked lost beside the sender: %q", string(row))
	}
}

// The status line speaks of where the cursor is: a message about another
// step goes when the cursor moves.
func TestStatusLineFollowsTheCursor(t *testing.T) {
	m, script := openDemo(t, 0)
	u := startUI(t, m)
	u.keys("g72\n")
	if !strings.Contains(u.statusText(), "at #72") {
		t.Fatalf("g 72:\n%s", u.statusText())
	}
	u.press(tcell.KeyLeft, 0, 0)
	if s := u.statusText(); !strings.Contains(s, "#71/1925") || strings.Contains(s, "#72") {
		t.Fatalf("after ← the status line still speaks of #72:\n%s", s)
	}
	u.keys("g72\n")
	u.press(tcell.KeyHome, 0, 0)
	if s := u.statusText(); !strings.Contains(s, "#0/1925") || strings.Contains(s, "#72") {
		t.Fatalf("after Home the status line still speaks of #72:\n%s", s)
	}

	// A failed re-check: said once, then kept in the Violations panel
	// (the results shown are the previous ones) until a re-check works.
	src, _ := os.ReadFile(script)
	os.WriteFile(script, append(append([]byte{}, src...), "\nsafety(\"Broken\", lambda: undefined_name)\n"...), 0o644)
	u.keys("r")
	u.waitFor("re-check failed")
	u.press(tcell.KeyRight, 0, 0)
	u.press(tcell.KeyRight, 0, 0)
	if s := u.statusText(); strings.Contains(s, "re-check failed") {
		t.Fatalf("the re-check error stays in the status line after moving:\n%s", s)
	}
	if u.row("re-check failed") == "" {
		t.Fatalf("the re-check error is not kept in the Violations panel:\n%s", u.text())
	}
	os.WriteFile(script, src, 0o644)
	u.keys("r")
	u.waitFor("re-checked")
	if u.row("re-check failed") != "" {
		t.Fatalf("a fixed re-check error is still shown:\n%s", u.text())
	}
}

// ] on a watch says which elements changed, and it fits an 80x24
// terminal.
func TestRunUntilAWatchChangeSaysWhichElements(t *testing.T) {
	m, _ := openDemo(t, 260)
	u := startUISized(t, m, 80, 24)
	u.keys("w[a.AcceptedValue for a in Agent]\n")
	// ] stops at #261, where n4 accepts x7: n4 is [2] of the list, as
	// n2 is down (n1, n3, n4, n5, n6, n7).
	u.keys("]")
	u.waitFor("#261/1925")
	if s := u.statusText(); !strings.Contains(s, `[2] "x5" → "x7"`) {
		t.Fatalf("] does not say which element changed:\n%s", s)
	}
	if w := strings.Join(lineStrings(m.Watches(40, 10)), "\n"); !strings.Contains(w, `[2] "x5" → "x7"`) {
		t.Fatalf("the Watches panel does not show the change:\n%s", w)
	}
}

func lineStrings(ls []Line) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.String()
	}
	return out
}

func TestReprDiff(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{`1`, `2`, `1 → 2`},
		{`["a", "b, c", "d"]`, `["a", "b, c", "e"]`, `[2] "d" → "e"`},
		{`[("n1", 1), ("n2", 2)]`, `[("n1", 1), ("n2", 3)]`, `[1][1] 2 → 3`},
		{`{"a": 1, "b": [1, 2]}`, `{"a": 1, "b": [1, 3], "c": 0}`, `["b"][1] 2 → 3; ["c"] added: 0`},
		{`[1, 2]`, `[1]`, `[1] removed: 2`},
		{`"x"`, `None`, `"x" → None`},
		// A row removed from the middle is a removal, not every later
		// row turning into the next one; one inserted likewise.
		{`[("n1", 12, True), ("n2", 11, False), ("n3", 9, False)]`, `[("n2", 11, False), ("n3", 9, False)]`, `[0] removed: ("n1", 12, True)`},
		{`[1, 2, 3]`, `[1, 9, 2, 3]`, `[1] added: 9`},
		{`[1, 2, 3, 4]`, `[1, 7, 4]`, `[1] 2 → 7; [2] removed: 3`},
	} {
		if got := strings.Join(reprDiff(c.a, c.b), "; "); got != c.want {
			t.Errorf("reprDiff(%s, %s) = %s, want %s", c.a, c.b, got, c.want)
		}
	}
}

// The help scrolls at 80x24, a line at a time, and wraps what is wider
// than the popup.
func TestHelpScrollsAt80x24(t *testing.T) {
	m, _ := openDemo(t, 0)
	u := startUISized(t, m, 80, 24)
	u.keys("?")
	if u.row("step forward") == "" {
		t.Fatalf("no help:\n%s", u.text())
	}
	seen := u.text()
	u.press(tcell.KeyDown, 0, 0)
	if u.row("step forward") != "" {
		t.Fatalf("Down did not scroll the help:\n%s", u.text())
	}
	for range 5 {
		u.press(tcell.KeyPgDn, 0, 0)
		seen += u.text()
	}
	for _, k := range Keys {
		words := strings.Fields(k.What)
		if !strings.Contains(seen, words[len(words)-1]) {
			t.Errorf("the end of %q never showed", k.What)
		}
	}
	if !strings.Contains(seen, "q  Ctrl-C") || !strings.Contains(seen, "the runtime's view of the node") {
		t.Fatalf("the end of the help never showed:\n%s", seen)
	}
}

// A key the popup has no use for is not swallowed: it closes the popup
// and does what it does.
func TestKeysTypedIntoAPopupAct(t *testing.T) {
	m, _ := openDemo(t, 0)
	u := startUI(t, m)
	u.keys("?v")
	if u.row("▶!#269 ") == "" || u.row("step forward") != "" {
		t.Fatalf("v typed over the help was swallowed:\n%s", u.text())
	}
}

// h and x outside their panels say where they work.
func TestHistoryAndRemoveSayWhereTheyWork(t *testing.T) {
	m, _ := openDemo(t, 263)
	u := startUI(t, m)
	u.keys("x")
	if !strings.Contains(u.statusText(), "Watches") {
		t.Fatalf("x in the Timeline says nothing:\n%s", u.statusText())
	}
	u.keys("h")
	if _, open := m.Popup(); open || !strings.Contains(u.statusText(), "State panel") {
		t.Fatalf("h in the Timeline:\n%s", u.text())
	}
	u.keys("w1+1\n")
	u.keys("x")
	if !strings.Contains(u.statusText(), "Tab") || len(m.watches) != 1 {
		t.Fatalf("x in the Timeline with a watch:\n%s", u.statusText())
	}
}

// The empty Watches panel's example works on the trace at hand.
func TestWatchHintFitsTheTrace(t *testing.T) {
	m, _, _ := openRun(t, randtree.System, "none", 1, "", 10)
	hint := strings.Join(lineStrings(m.Watches(200, 5)), " ")
	if strings.Contains(hint, "Agent") || strings.Contains(hint, "AcceptedValue") {
		t.Fatalf("a paxos example on a randtree trace: %s", hint)
	}
	if !strings.Contains(hint, `timers("n`) {
		t.Fatalf("the hint names none of this trace's nodes: %s", hint)
	}
	m2, _, _ := openRun(t, randtree.System, "none", 1, "randtree.star", 10)
	if hint := strings.Join(lineStrings(m2.Watches(200, 5)), " "); !strings.Contains(hint, "for r in Node]") {
		t.Fatalf("the hint does not use the script's table: %s", hint)
	}
}

// The hint's derived value is one a watch can evaluate: not an
// accumulator, which reads itself and failed as a watch (a new user).
func TestWatchHintSkipsAccumulators(t *testing.T) {
	src := []byte("N = table(\"x.N\")\nissued = derived(\"issued\", lambda: (issued() or 0) + 1)\ntotal = derived(\"total\", lambda: sum([n.V for n in N]))\n")
	if got := derivedExample(src); got != "total()" {
		t.Fatalf("derivedExample: %q, want total()", got)
	}
	if got := derivedExample([]byte("most = derived(\"most\", lambda: max([1] + [most() or 0]))\n")); got != "" {
		t.Fatalf("derivedExample of an accumulator alone: %q", got)
	}
}

// Times in node state read as time since the start, as everywhere else.
func TestTimesInTheStateAreSinceTheStart(t *testing.T) {
	m, _, _ := openRun(t, transport.System, "none", 1, "", 3000)
	var text string
	for range m.db.Nodes() {
		m.SelectNode(+1)
		text = strings.Join(lineStrings(m.State(80, 400)), "\n")
		if strings.Contains(text, "SentAt") {
			break
		}
	}
	if !strings.Contains(text, "SentAt = t=") {
		t.Fatalf("no SentAt since the start in any node's state at #3000:\n%s", text)
	}
	if strings.Contains(text, "T00:00") {
		t.Fatalf("an absolute date in the State panel:\n%s", text)
	}
	// Its history says the same.
	for _, r := range m.stateRows() {
		if strings.HasSuffix(r.key, "SentAt") {
			m.stateSel = r.key
			break
		}
	}
	m.focus = PanelState
	m.History()
	pv, ok := m.Popup()
	if !ok || !strings.Contains(pv.Lines[pv.Sel].String(), "t=") || strings.Contains(pv.Lines[pv.Sel].String(), "T00:00") {
		t.Fatalf("the history of %s: %+v", m.stateSel, pv)
	}
}

// checkCount is what `replay check` counts on a trace: safety violations
// and liveness alarms (its default --fail-on).
func checkCount(t *testing.T, sys *system.System, trace, script string) (counted, screened int) {
	t.Helper()
	tr, err := replay.Load(trace)
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(tr, system.NewRegistry(sys), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := predicates.Load(script, r, predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Run(predicates.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		if v.Kind == "safety" || v.Alarm {
			counted++
		} else {
			screened++
		}
	}
	return counted, screened
}

// Liveness intervals the stability measures screened are not violations:
// counted as check counts them, shown as screened, and skipped by v
// unless s includes them (issue 10, item 5).
func TestScreenedIntervalsAreNotCounted(t *testing.T) {
	m, trace, script := openRun(t, randtree.System, "no-recovery-timer", 1, "randtree.star", -1)
	counted, screened := checkCount(t, randtree.System, trace, script)
	if counted == 0 || screened == 0 {
		t.Fatalf("the run should have both: %d counted, %d screened", counted, screened)
	}
	u := startUI(t, m)
	title := u.row("Violations (")
	if !strings.Contains(title, "Violations ("+itoa(counted)+";") || !strings.Contains(title, itoa(screened)+" screened") {
		t.Fatalf("check counts %d (%d screened); the panel's title: %s", counted, screened, title)
	}
	if !strings.Contains(u.statusText(), itoa(counted)+" violation(s)") {
		t.Fatalf("the opening status does not count as check does (%d):\n%s", counted, u.statusText())
	}
	// v stops only at the counted ones.
	var stops []int
	for range counted + 1 {
		u.keys("v")
		stops = append(stops, m.Pos())
	}
	for _, v := range m.preds.Violations {
		if v.Kind == "liveness" && !v.Alarm {
			for _, s := range stops[:counted] {
				if s == v.Step && !isCounted(m.preds, s) {
					t.Fatalf("v stopped at the screened interval at #%d", s)
				}
			}
		}
	}
	if stops[counted] != stops[counted-1] {
		t.Fatalf("v went on past the %d counted violations: %v", counted, stops)
	}
	// s includes the screened intervals.
	u.keys("s")
	u.press(tcell.KeyHome, 0, 0)
	n := 0
	for range counted + screened + 1 {
		before := m.Pos()
		u.keys("v")
		if m.Pos() != before {
			n++
		}
	}
	if n < 2 || n > counted+screened {
		t.Fatalf("with s, v stopped %d times (counted %d, screened %d)", n, counted, screened)
	}
	if u.row("screened") == "" {
		t.Fatalf("screened intervals are not shown as such:\n%s", u.text())
	}
}

func isCounted(p *statedb.Predicates, step int) bool {
	for _, v := range p.Violations {
		if v.Step == step && (v.Kind == "safety" || v.Alarm) {
			return true
		}
	}
	return false
}

func itoa(n int) string { return strconv.Itoa(n) }

// Typing into a prompt redraws the status line, not the panels: a
// 2,000-character paste into g's prompt re-rendered every panel per
// character (17 s of CPU). Enter then shows the new step everywhere.
func TestTypingIntoAPromptRedrawsOnlyTheStatusLine(t *testing.T) {
	m, _ := openDemo(t, 0)
	u := startUI(t, m)
	u.keys("g")
	before := u.renders()
	u.keys(strings.Repeat("0", 60) + "9")
	u.press(tcell.KeyBackspace2, 0, 0)
	u.keys("72")
	// Only a background task's update (indexing's progress) renders
	// them now: far fewer than the six panels per key of before.
	if got := u.renders() - before; got >= 64 {
		t.Fatalf("typing 64 keys into the prompt rendered panels %d times, want fewer than one per key", got)
	}
	if s := u.statusText(); !strings.Contains(s, strings.Repeat("0", 60)+"72") {
		t.Fatalf("the prompt does not show what was typed:\n%s", s)
	}
	u.keys("\n")
	if u.renders() == before {
		t.Fatal("Enter rendered no panel")
	}
	if s := u.statusText(); !strings.Contains(s, "at #72") {
		t.Fatalf("after Enter the status line is not at #72:\n%s", s)
	}
	if !strings.Contains(u.text(), "▶#72") && !strings.Contains(u.text(), "#72 ") {
		t.Fatalf("the panels do not show #72:\n%s", u.text())
	}
}

// A prompt holds at most maxPrompt characters however many are typed (a
// paste arrives as keys), and shows the end of what was typed.
func TestAPromptIsBounded(t *testing.T) {
	m, _ := openDemo(t, 0)
	u := startUI(t, m)
	u.keys("g")
	u.keys(strings.Repeat("1", maxPrompt+40) + "2")
	var n int
	u.view.queue(func() { n = len(m.prompt.text) }, false)
	if n != maxPrompt {
		t.Fatalf("the prompt holds %d characters after %d keys, want %d", n, maxPrompt+41, maxPrompt)
	}
	if s := u.statusText(); !strings.Contains(s, "…1111") {
		t.Fatalf("the prompt does not show the end of a long answer:\n%s", s)
	}
}

// A popup's title shows a map path with its key: tview read ["k"] in a
// title as a region tag and dropped it (a new user's history of
// Members["n4"].Status was titled Members.Status).
func TestTitlesKeepMapKeys(t *testing.T) {
	m, _, _ := openRun(t, chainrep.System, "", 1, "", 300)
	u := startUI(t, m)
	want := ""
	u.view.queue(func() {
		for _, id := range m.db.Nodes() {
			m.node = id
			for _, r := range m.stateRows() {
				if strings.Contains(r.key, `["`) && r.leaf {
					m.stateSel, m.focus = r.key, PanelState
					m.History()
					want = "history of " + string(id) + " " + r.key
					return
				}
			}
		}
	}, true)
	if want == "" {
		t.Fatal("no map field with a string key in any node's state at #300")
	}
	if !strings.Contains(u.text(), want) {
		t.Fatalf("the popup's title lacks %q:\n%s", want, u.text())
	}
}

// A step's change below the State panel's window is scrolled into view
// (and selected) when the cursor moves; while the panel has the focus,
// the row the user selected stays.
func TestStatePanelShowsWhatTheStepChanged(t *testing.T) {
	m, _ := openDemo(t, 268)
	visible := func(lines []Line) string {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(l.String() + "\n")
		}
		return b.String()
	}
	m.State(80, 4)                 // n1 at #268
	m.stateSel, m.stateTop = "", 0 // the window at the top
	if err := m.Seek(269); err != nil {
		t.Fatal(err)
	}
	got := visible(m.State(80, 4))
	if !strings.Contains(got, "Promised = 82  ◀ changed") {
		t.Fatalf("n7's changed Promised is not in view at #269 (4 rows):\n%s", got)
	}
	if m.stateSel != "Agent.Promised" {
		t.Fatalf("the selection is %q, want the first changed field Agent.Promised", m.stateSel)
	}

	m.focus = PanelState
	m.stateSel, m.stateTop = "Self", 0
	if err := m.Seek(268); err != nil {
		t.Fatal(err)
	}
	if err := m.Seek(269); err != nil {
		t.Fatal(err)
	}
	got = visible(m.State(80, 4))
	if m.stateSel != "Self" || strings.Contains(got, "changed") {
		t.Fatalf("with the State panel focused the selection moved to %q:\n%s", m.stateSel, got)
	}
}

// The focused panel is named in its title, not by colour alone.
func TestTheFocusedPanelIsMarkedInItsTitle(t *testing.T) {
	m, _ := openDemo(t, 269)
	u := startUI(t, m)
	if strings.Contains(u.text(), "● State of") || !strings.Contains(u.text(), "● Timeline") {
		t.Fatalf("the Timeline has the focus but its title is not the one marked:\n%s", u.text())
	}
	u.press(tcell.KeyTab, 0, 0)
	if strings.Contains(u.text(), "● Timeline") || !strings.Contains(u.text(), "● State of n7") {
		t.Fatalf("after Tab the State panel's title is not the one marked:\n%s", u.text())
	}
}

// A step's change already in view is selected when the selection sat on
// the panel's first row, where nobody chose to put it: Tab then h showed
// the history of @status, not of the field marked changed (a new user's
// SWIM trial). A row the user chose stays chosen.
func TestStatePanelSelectsAChangeInView(t *testing.T) {
	m, _ := openDemo(t, 268)
	rows := func() []treeRow { m.State(80, 40); return m.stateRows() }
	first := rows()[0].key
	m.stateSel, m.stateTop = first, 0
	if err := m.Seek(269); err != nil {
		t.Fatal(err)
	}
	m.State(80, 40) // 40 rows: the change is in view
	if m.stateSel != "Agent.Promised" {
		t.Fatalf("the selection stayed on %q, want the changed field Agent.Promised", m.stateSel)
	}
	m.stateSel = "Self"
	if err := m.Seek(268); err != nil {
		t.Fatal(err)
	}
	if err := m.Seek(269); err != nil {
		t.Fatal(err)
	}
	m.State(80, 40)
	if m.stateSel != "Self" {
		t.Fatalf("a chosen row moved to %q", m.stateSel)
	}
}
