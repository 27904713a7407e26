package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gdamore/tcell/v2"

	"github.com/replaycheck/replaycheck/critical"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/statedb"
)

// The session of the issue: open the paxos demo trace, jump to the first
// violation, step back, follow a message to its sender, read a field's
// history, reload the predicates, and check what the screen shows.
func TestDebugSessionOnTheDemoTrace(t *testing.T) {
	m, script := openDemo(t, 0)
	u := startUI(t, m)
	if r := u.row("▶ #0 "); !strings.Contains(r, "n1 init") {
		t.Fatalf("the cursor does not start at #0:\n%s", u.text())
	}

	// v: the first violation.
	u.keys("v")
	if r := u.row("▶!#269 "); !strings.Contains(r, "n7 recv paxos.Begin{Round:82 Value:x7} from n5 (sent #260)") {
		t.Fatalf("v did not go to the violation at #269:\n%s", u.text())
	}
	for _, want := range []string{
		"GlobalConsistency (safety) violated at #269",
		`aux {"decisions": ["x5", "x7"]}`,
		"State of n7 at #269",
	} {
		if !strings.Contains(u.text(), want) {
			t.Fatalf("after v the screen lacks %q:\n%s", want, u.text())
		}
	}
	// The fields the step changed are highlighted.
	if r := u.row(`AcceptedValue = "x7"`); !strings.Contains(r, "◀ changed") {
		t.Fatalf("n7's accepted value is not marked changed at #269:\n%s", u.text())
	}
	if st, _ := u.styleOf(`AcceptedValue = "x7"`); st != styles[StyleChanged] {
		t.Fatalf("a changed field is drawn in %v, want the changed style", st)
	}
	// (The Begin raised n7's Promised too; its leader's proposal stays.)
	if r := u.row(`Proposal = "x7"`); strings.Contains(r, "changed") {
		t.Fatalf("an unchanged field is marked changed: %q", r)
	}

	// ←: one step back.
	u.press(tcell.KeyLeft, 0, 0)
	if r := u.row("▶ #268 "); !strings.Contains(r, "n1 recv paxos.Begin{Round:82 Value:x7}") || !strings.Contains(u.text(), "State of n1 at #268") {
		t.Fatalf("← did not step back to #268:\n%s", u.text())
	}
	if r := u.row("! #269 "); r == "" {
		t.Fatalf("the violation's row is not marked in the timeline:\n%s", u.text())
	}

	// → m: back to the violation, then to the send of the Begin it received.
	u.press(tcell.KeyRight, 0, 0)
	u.keys("m")
	if r := u.row("▶ #260 "); !strings.Contains(r, "n5 recv paxos.Last{Round:82 AcceptedRound:35 AcceptedValue:x7} from n3") {
		t.Fatalf("m did not follow the Begin to its send at #260:\n%s", u.text())
	}
	for _, want := range []string{
		"followed paxos.Begin from n5 back to its send at #260",
		"State of n5 at #260",
		"paxos.Begin received: n5 #263, n1 #268, n4 #261, n6 #271, n7 #269; never received: n2, n3",
	} {
		if !strings.Contains(u.text(), want) {
			t.Fatalf("after m the screen lacks %q:\n%s", want, u.text())
		}
	}
	// The receipts of #260's Begin are marked in the timeline.
	if r := u.row("• #261 "); r == "" {
		t.Fatalf("#261 is not marked as a receipt of #260's message:\n%s", u.text())
	}

	// Tab / h: the history of the field the leader took its value from.
	u.keys("\t/Lasts[3].Last.AcceptedValue\n")
	if !strings.Contains(u.text(), `Leader.Lasts[3].Last.AcceptedValue = "x7"`) {
		t.Fatalf("find field did not select Leader.Lasts[3].Last.AcceptedValue:\n%s", u.text())
	}
	u.keys("h")
	if !strings.Contains(u.text(), "history of n5 Leader.Lasts[3].Last.AcceptedValue") {
		t.Fatalf("h did not open the history:\n%s", u.text())
	}
	cur := u.row(`▶ #260 `, `"x7"`)
	if !strings.Contains(cur, `"x7"`) || !strings.Contains(cur, "n5 recv paxos.Last{Round:82 AcceptedRound:35") {
		t.Fatalf("the history does not show the version written at #260: %q\n%s", cur, u.text())
	}
	// The version before it: Lasts[3] went away when n5 started its
	// round at #152 (Lasts reset).
	prev := u.row("  #152 ")
	if !strings.Contains(prev, "(removed)") || !strings.Contains(prev, "n5 timer round") {
		t.Fatalf("the history lacks the earlier version at #152: %q\n%s", prev, u.text())
	}
	// Enter on an earlier version goes there.
	u.press(tcell.KeyUp, 0, 0)
	u.press(tcell.KeyEnter, 0, 0)
	if r := u.row("▶ #152 "); !strings.Contains(r, "n5 timer round") {
		t.Fatalf("Enter in the history did not go to #152:\n%s", u.text())
	}

	// When was x5 chosen? A watch over every agent, and [ back through
	// its changes: n7's accept at #154 made x5 a majority in round 47.
	u.keys("g260\n")
	u.keys("w[(a.node, a.AcceptedRound, a.AcceptedValue) for a in Agent]\n")
	// (n2 is down at #260: it crashed at #237. The value wraps in the
	// panel after n5's round.)
	for _, want := range []string{`= [("n1", 47, "x5"), ("n3", 35, "x7"), ("n4", 56, "x5"), ("n5", 56,`, `"x5"), ("n6", 0, ""), ("n7", 47, "x5")]`} {
		if !strings.Contains(u.text(), want) {
			t.Fatalf("the watch at #260 lacks %s:\n%s", want, u.text())
		}
	}
	for _, want := range []int{237, 223, 219, 154} {
		u.keys("[")
		u.waitFor(fmt.Sprintf("#%d changes [", want))
	}
	if r := u.row("▶ #154 "); !strings.Contains(r, "n7 recv paxos.Begin{Round:47 Value:x5}") {
		t.Fatalf("[ did not reach #154:\n%s", u.text())
	}

	// r: refine the predicates (Paxos P2b) and re-check the same run; the
	// new predicate catches the first agent that accepted the bad value.
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, append(src, p2b...), 0o644); err != nil {
		t.Fatal(err)
	}
	u.keys("r")
	u.waitFor("re-checked")
	// How many: one per distinct break (each agent that accepted x7), as
	// replay check counts them; the panel's title agrees.
	got := regexp.MustCompile(`re-checked \S+: (\d+) violation\(s\) \(before: 1\)`).FindStringSubmatch(u.text())
	if got == nil || got[1] == "1" {
		t.Fatalf("after r the status line does not count the new violations:\n%s", u.text())
	}
	for _, want := range []string{"Violations (" + got[1] + ")", "AcceptsOnlyTheChosenValue safety #261 n4"} {
		if !strings.Contains(u.text(), want) {
			t.Fatalf("after r the screen lacks %q:\n%s", want, u.text())
		}
	}
	u.keys("v")
	if r := u.row("▶!#261 "); !strings.Contains(r, "n4 recv paxos.Begin{Round:82 Value:x7}") ||
		!strings.Contains(u.text(), "AcceptsOnlyTheChosenValue (safety) violated at #261: n4 recv paxos.Begin from n5; witness n4 Agent") {
		t.Fatalf("v after the re-check:\n%s", u.text())
	}
	// A broken script leaves the results as they were.
	os.WriteFile(script, append(src, "safety(\"broken\", lambda: nosuchname)\n"...), 0o644)
	u.keys("r")
	u.waitFor("re-check failed")
	if !strings.Contains(u.text(), "Violations ("+got[1]+")") || !strings.Contains(u.text(), "replay-demo.star:") {
		t.Fatalf("a failed re-check:\n%s", u.text())
	}
	u.screen.InjectKey(tcell.KeyRune, 'q', 0)
	select {
	case err := <-u.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("q did not quit")
	}
}

func TestHelpListsEveryKey(t *testing.T) {
	m, _ := openDemo(t, 0)
	u := startUI(t, m)
	u.keys("?")
	for _, k := range Keys {
		if r := u.row(k.What); !strings.Contains(r, k.Keys) {
			t.Fatalf("help lacks %q %q:\n%s", k.Keys, k.What, u.text())
		}
	}
	u.press(tcell.KeyEscape, 0, 0)
	if strings.Contains(u.text(), "this help") {
		t.Fatal("Esc did not close the help")
	}
}

func TestEnterOnAViolationJumpsThere(t *testing.T) {
	m, _ := openDemo(t, 0)
	u := startUI(t, m)
	u.keys("\t\t") // Timeline, State, Violations
	if st, ok := u.styleOf("GlobalConsistency safety #269"); !ok || st != styles[StyleSelected] {
		t.Fatalf("the violation is not selected in the focused panel:\n%s", u.text())
	}
	u.press(tcell.KeyEnter, 0, 0)
	if u.row("▶!#269 ") == "" || !strings.Contains(u.text(), "▶ GlobalConsistency safety #269") {
		t.Fatalf("Enter on the violation did not jump to #269:\n%s", u.text())
	}
}

func TestDocsExplainEveryKey(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "debugger.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Keys {
		for _, key := range strings.Fields(k.Keys) {
			if !strings.Contains(string(doc), "`"+key+"`") {
				t.Errorf("docs/debugger.md does not document the key `%s` (%s)", key, k.What)
			}
		}
	}
}

func TestWatchesAndRunUntilAWatchChanges(t *testing.T) {
	m, _ := openDemo(t, 260)
	u := startUI(t, m)
	u.keys("w[a.AcceptedValue for a in Agent]\n")
	// n1, n3, n4, n5, n6, n7: n2 is down at #260.
	if !strings.Contains(u.text(), `= ["x5", "x7", "x5", "x5", "", "x5"]`) {
		t.Fatalf("the watch's value at #260:\n%s", u.text())
	}
	// ]: forward to the next step that changes it: n4 accepts x7 at #261.
	u.keys("]")
	u.waitFor("#261 changes")
	if r := u.row("▶ #261 "); !strings.Contains(r, "n4 recv paxos.Begin{Round:82 Value:x7}") {
		t.Fatalf("] did not stop at #261:\n%s", u.text())
	}
	if !strings.Contains(u.text(), `= ["x5", "x7", "x7", "x5", "", "x5"]`) {
		t.Fatalf("the watch at #261:\n%s", u.text())
	}
	// [: back to the last step before #261 that changed it (n2's crash
	// at #237 took its agent out of the table).
	u.keys("[")
	u.waitFor("#237 changes")
	if r := u.row("▶ #237 "); !strings.Contains(r, "n2 crash") {
		t.Fatalf("[ did not stop at #237:\n%s", u.text())
	}
	// The Watches panel says how, as the status line does (a jump of
	// more than one step wiped it).
	if !strings.Contains(u.text(), "changed by #237:") {
		t.Fatalf("the Watches panel does not tell the change at #237:\n%s", u.text())
	}
	// Without a watch change in the way, ] stops where a predicate flips.
	u.keys("\t\t\tx") // focus Watches, remove the watch
	u.keys("]")
	u.waitFor("GlobalConsistency became false")
	if u.row("▶!#269 ") == "" {
		t.Fatalf("] did not stop at the predicate's flip:\n%s", u.text())
	}
}

// A watch that changes at the step where a predicate flips: ] says both
// (it told only the predicate, hiding the watch's change).
func TestRunUntilTellsAWatchChangingWithAPredicate(t *testing.T) {
	m, _ := openDemo(t, 262)
	u := startUI(t, m)
	u.keys(`w[a.AcceptedValue for a in Agent if a.node == "n7"]` + "\n")
	u.keys("]")
	u.waitFor("GlobalConsistency became false")
	if u.row("▶!#269 ") == "" {
		t.Fatalf("] did not stop at the predicate's flip:\n%s", u.text())
	}
	if !strings.Contains(u.text(), `it changes [0] "x5" → "x7" in [a.AcceptedValue`) || !strings.Contains(u.text(), "changed by #269:") {
		t.Fatalf("] did not tell the watch's change at #269:\n%s", u.text())
	}
}

// A watch whose value is megabytes long shows its start and how much
// more there is: the panel wrapped the whole value (quadratically), and
// the debugger stopped answering.
func TestHugeWatchValueIsClipped(t *testing.T) {
	m, _ := openDemo(t, 260)
	u := startUI(t, m)
	u.keys(`w"ab " * 1000000` + "\n")
	lines := m.Watches(80, 1000)
	if len(lines) > maxShownValue/40 {
		t.Fatalf("the panel has %d lines for one watch", len(lines))
	}
	last := lines[len(lines)-1].String()
	if !strings.Contains(last, "more)") {
		t.Fatalf("the clipped value does not say how much is left out: %q", last)
	}
	if d := reprDiff(strings.Repeat("a", 1<<20), strings.Repeat("b", 1<<20)); len(d) != 1 || !strings.Contains(d[0], "too long") {
		t.Fatalf("a diff of two megabyte values: %q", d)
	}
}

// A violation's line in the Event panel wraps like the event line: its
// aux was cut at the panel's edge.
func TestEventPanelWrapsViolations(t *testing.T) {
	m, _ := openDemo(t, 269)
	startUI(t, m)
	var all []string
	for _, l := range m.EventLines(30, 100) {
		s := l.String()
		if n := utf8.RuneCountInString(s); n > 30 {
			t.Fatalf("a line of %d columns in a 30-column panel: %q", n, s)
		}
		all = append(all, strings.TrimSpace(s))
	}
	if text := strings.Join(all, " "); !strings.Contains(text, `"x7"]`) {
		t.Fatalf("the violation's aux is not all there:\n%s", strings.Join(all, "\n"))
	}
}

func TestDiffFilterAndNodes(t *testing.T) {
	m, _ := openDemo(t, 260)
	u := startUI(t, m)
	u.keys("d\n") // the default: the node's previous step
	for _, want := range []string{"n5: #258 → #260, 5 change(s)", `Leader.Lasts[3].Last.AcceptedValue: (none) → "x7"`, "Leader.Phase: 1 → 2"} {
		if !strings.Contains(u.text(), want) {
			t.Fatalf("the diff lacks %q:\n%s", want, u.text())
		}
	}
	u.press(tcell.KeyEscape, 0, 0)

	// A filter keeps the timeline to n5's receives of Last messages.
	u.keys("/node=n5 type=Last\n")
	u.press(tcell.KeyDown, 0, 0)
	if r := u.row("▶ #262 "); !strings.Contains(r, "n5 recv paxos.Last") {
		t.Fatalf("Down with a filter did not go to n5's next Last at #262:\n%s", u.text())
	}
	for _, l := range strings.Split(u.text(), "\n") {
		if strings.Contains(l, "#26") && strings.Contains(l, " L=") && !strings.Contains(l, "recv paxos.Last") && strings.Contains(l, "│  #") {
			t.Fatalf("the filtered timeline shows %q", l)
		}
	}
	u.keys("/") // Ctrl-U clears the prompt; an empty filter clears the filter
	u.press(tcell.KeyCtrlU, 0, 0)
	u.press(tcell.KeyEnter, 0, 0)
	if strings.Contains(u.text(), "filter: node=n5") {
		t.Fatalf("the filter was not cleared:\n%s", u.text())
	}

	// } pins another node; > steps on it; f follows the cursor again.
	u.keys("}")
	if !strings.Contains(u.text(), "State of n6 at #262 (pinned") {
		t.Fatalf("} did not show n6:\n%s", u.text())
	}
	u.keys(">")
	if r := u.row("▶ #264 "); !strings.Contains(r, "n6 timer round") {
		t.Fatalf("> did not go to n6's next step #264:\n%s", u.text())
	}
	u.keys("f<")
	if !strings.Contains(u.text(), "State of n6 at #256 (follows") {
		t.Fatalf("< did not go to n6's previous step #256:\n%s", u.text())
	}

	// M lists the messages of a step with several (n6's round at #264);
	// lost ones are marked.
	u.keys("g264\nM")
	if !strings.Contains(u.text(), "messages sent at #264") || !strings.Contains(u.text(), "paxos.Collect to n2: never received") {
		t.Fatalf("M at #264:\n%s", u.text())
	}
	u.press(tcell.KeyEnter, 0, 0)
	if !strings.Contains(u.text(), "followed a message from #264 to its receipt") {
		t.Fatalf("Enter in the message list:\n%s", u.text())
	}
}

func TestUnknownStateIsShown(t *testing.T) {
	// A trace cut at two thirds: every node's recording ends early (no end
	// record), so the nodes whose last event comes before the cut's last
	// step have unknown state after it.
	dir := t.TempDir()
	full := simulate(t, filepath.Join(dir, "full.lz4"), "none", 2, 30*time.Second)
	data, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.lz4")
	os.WriteFile(cut, data[:len(data)*2/3], 0o644)
	db, _, err := statedb.Ensure([]string{cut}, "", statedb.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id node.ID
	pos := -1
	for n, us := range db.Meta().Unknown {
		for _, un := range us {
			if un.After+1 < db.Len() && (pos < 0 || n < id) {
				id, pos = n, un.After+1
			}
		}
	}
	if pos < 0 {
		t.Fatalf("no node's state becomes unknown before the end of the cut trace: %+v", db.Meta().Unknown)
	}
	m, err := New(Config{DB: db, Traces: []string{cut}, Registry: registry, At: pos})
	if err != nil {
		t.Fatal(err)
	}
	for m.Node() != id {
		m.SelectNode(+1)
	}
	u := startUI(t, m)
	if !strings.Contains(u.text(), "state unknown:") || !strings.Contains(u.text(), "truncated") {
		t.Fatalf("%s at #%d is not shown as unknown:\n%s", id, pos, u.text())
	}
	// Its column in the message flow shows ? on the rows after its cut.
	lines := strings.Split(u.text(), "\n")
	marked := false
	for i, l := range lines {
		x := strings.Index(l, "n1  n2  n3")
		if x < 0 {
			continue
		}
		col := len([]rune(l[:x])) + slices.Index(db.Nodes(), id)*flowCell + 1
		for _, row := range lines[i+1:] {
			if r := []rune(row); col < len(r) && r[col] == '?' {
				marked = true
			}
		}
		break
	}
	if !marked {
		t.Fatalf("the message flow does not mark %s's state unknown:\n%s", id, u.text())
	}
}

// p2b is the refined predicate of docs/debugger.md's walkthrough.
const p2b = `
def chosen_round():
    majority = len(nodes()) // 2 + 1
    votes = {}
    for a in Agent:
        if a.AcceptedRound > 0:
            key = (a.AcceptedRound, a.AcceptedValue)
            votes[key] = votes.get(key, 0) + 1
    for key, n in votes.items():
        if n >= majority:
            return key
    return None

choice = derived("choice", chosen_round, keep = 10)

def first_choice():
    h = [c for c in choice.history() if c != None]
    return h[0] if h else None

safety("AcceptsOnlyTheChosenValue",
       lambda: first_choice() == None or forall(Agent,
           lambda a: a.AcceptedRound <= first_choice()[0] or a.AcceptedValue == first_choice()[1]))
`

// The Violations panel lists the violations before the liveness
// intervals their stability measures screened: a run with many screened
// intervals early showed only those until scrolled, and Enter on the
// first row went to one of them.
func TestViolationsAreListedBeforeScreenedIntervals(t *testing.T) {
	m, _ := openDemo(t, 0)
	p := *m.preds
	p.Violations = []statedb.Violation{
		{Predicate: "Quiet", Kind: "liveness", Step: 5, EndStep: 40},
		{Predicate: "Quiet", Kind: "liveness", Step: 50, EndStep: 60},
		{Predicate: "GlobalConsistency", Kind: "safety", Step: 269},
	}
	m.setPredicates(&p)
	lines := m.Violations(200, 20)
	if len(lines) < 3 || !strings.Contains(lines[0][0].Text, "GlobalConsistency safety #269") ||
		!strings.Contains(lines[1][0].Text, "Quiet liveness #5..#40 screened") {
		t.Fatalf("panel rows: %v", lines)
	}
	m.focus = PanelViolations
	m.HandleKey(tcell.NewEventKey(tcell.KeyEnter, 0, 0))
	if m.pos != 269 {
		t.Fatalf("Enter on the first row went to #%d, want the violation at #269", m.pos)
	}
	m.HandleKey(tcell.NewEventKey(tcell.KeyDown, 0, 0))
	m.HandleKey(tcell.NewEventKey(tcell.KeyEnter, 0, 0))
	if m.pos != 5 {
		t.Fatalf("Enter on the second row went to #%d, want the screened interval at #5", m.pos)
	}
}

// A derived value of the predicates file, watched called (decision()) or
// by its name alone, shows its value at the cursor as `replay check`
// computes it, and follows the cursor back and forth (a new user's watch
// on raft.star's leaders showed None). In the demo run x5 is chosen at
// #154: decision is None before it and "x5" from there.
func TestWatchOnADerivedValueShowsItsValue(t *testing.T) {
	m, _ := openDemo(t, 154)
	if hint := strings.Join(lineStrings(m.Watches(200, 5)), " "); !strings.Contains(hint, "decision()") {
		t.Errorf("the empty panel's examples leave out the script's derived value: %s", hint)
	}
	u := startUI(t, m)
	u.keys("wdecision()\n")
	u.keys("wdecision\n")
	// The name alone says what it shows.
	if s := u.statusText(); !strings.Contains(s, "decision()") {
		t.Errorf("watching a derived value by name does not say it shows decision():\n%s", s)
	}
	watches := func() string { return strings.Join(lineStrings(m.Watches(60, 20)), "\n") }
	want := func(at string, values ...string) {
		t.Helper()
		var lines []string
		for _, l := range lineStrings(m.Watches(60, 20)) {
			if strings.HasPrefix(l, "  = ") {
				lines = append(lines, strings.TrimPrefix(l, "  = "))
			}
		}
		if !slices.Equal(lines, values) {
			t.Fatalf("the watches at %s show %q, want %q:\n%s", at, lines, values, watches())
		}
	}
	want("#154", `"x5"`, `"x5"`)
	u.keys(",") // back to #153: not chosen yet
	want("#153", `None`, `None`)
	if w := watches(); !strings.Contains(w, `changed by #154: None → "x5"`) {
		t.Errorf("stepping back does not say the derived value changed:\n%s", w)
	}
	u.keys(".")
	want("#154 again", `"x5"`, `"x5"`)
	// ] from before the choice stops where the derived value changes.
	u.keys("g150\n")
	want("#150", `None`, `None`)
	u.keys("]")
	u.waitFor("#154 changes")
	if u.row("▶ #154 ") == "" {
		t.Fatalf("] did not stop at #154, where x5 is chosen:\n%s", u.text())
	}
}

// The critical transition's popup names a message that became lost at the
// critical step, and Enter on it goes to its send.
func TestTransitionNamesAMessageThatBecameLost(t *testing.T) {
	m, _ := openDemo(t, 100)
	m.showTransition(&Transition{Predicate: "P", Critical: 12, LastLive: 11, Walks: 2,
		Probes:     []critical.Probe{{Step: 11, Walks: 2, Recovered: 1}, {Step: 12, Walks: 2}},
		BecameLost: []Lost{{Type: "paxos.Begin", From: "n5", To: "n7", SendStep: 7}}, Recovering: "walk.lz4"}, false)
	v, ok := m.Popup()
	if !ok {
		t.Fatal("no popup")
	}
	at := -1
	for i, l := range v.Lines {
		if strings.Contains(l.String(), "paxos.Begin from n5 to n7, sent at #7, became lost") {
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("the popup does not name the lost message:\n%v", v.Lines)
	}
	// It is selected first, before the recovering walk: Enter goes there.
	if m.popup.sel != at {
		t.Fatalf("the popup selects line %d first, want the lost message's %d:\n%v", m.popup.sel, at, v.Lines)
	}
	m.popup.onEnter(m.popup.items[m.popup.sel])
	if m.pos != 7 {
		t.Fatalf("Enter went to #%d, want the send at #7", m.pos)
	}
}

// A message that became lost because its receiver was down as its window
// closed points at the receiver's crash, not at its send.
func TestTransitionPointsALostMessageToADownReceiverAtTheCrash(t *testing.T) {
	m, _ := openDemo(t, 100)
	m.showTransition(&Transition{Predicate: "P", Critical: 12, LastLive: 11, Walks: 2,
		Probes:     []critical.Probe{{Step: 11, Walks: 2, Recovered: 1}, {Step: 12, Walks: 2}},
		BecameLost: []Lost{{Type: "paxos.Begin", From: "n5", To: "n7", SendStep: 9, ReceiverDown: true, CrashStep: 4}}}, false)
	v, ok := m.Popup()
	if !ok {
		t.Fatal("no popup")
	}
	if !strings.Contains(v.Lines[m.popup.sel].String(), "closed with n7 down; the cause may be its crash") {
		t.Fatalf("the selected line does not blame n7's crash:\n%v", v.Lines)
	}
	m.popup.onEnter(m.popup.items[m.popup.sel])
	if m.pos != 4 {
		t.Fatalf("Enter went to #%d, want n7's crash at #4", m.pos)
	}
}

// The popup says what replay critical notes beside its answer: walks that
// recovered only by restarting a node that was down for good (it said
// nothing, and the answer read as "not doomed").
func TestTransitionShowsTheSearchsNotes(t *testing.T) {
	m, _ := openDemo(t, 100)
	note := "the walks from #20 restarted n6, down there; --keep-down leaves them down"
	m.showTransition(&Transition{Predicate: "P", Critical: -1, LastLive: -1, Walks: 2,
		Probes: []critical.Probe{{Step: 20, Walks: 2, Recovered: 2}}, Notes: []string{note}}, false)
	v, ok := m.Popup()
	if !ok {
		t.Fatal("no popup")
	}
	for _, l := range v.Lines {
		if strings.Contains(l.String(), "note: "+note) {
			return
		}
	}
	t.Fatalf("the popup does not show the note:\n%v", v.Lines)
}

// A liveness interval that closed is not said to be screened by stability
// measures it may not have (a predicate without an alarm function closes
// its intervals by holding again); one open at the end and not raised is
// what an alarm function left so.
func TestDescribeLivenessIntervals(t *testing.T) {
	closed := statedb.Violation{Predicate: "AllResolved", Kind: "liveness", Step: 54, EndStep: 63}
	if got := describeViolation(closed); !strings.Contains(got, "false from #54, until #63, then held again; no alarm, not a violation") || strings.Contains(got, "screened") {
		t.Errorf("closed interval: %s", got)
	}
	open := statedb.Violation{Predicate: "AllResolved", Kind: "liveness", Step: 54, EndStep: -1}
	if got := describeViolation(open); !strings.Contains(got, "still open at the end; not raised by its alarm function") {
		t.Errorf("open, not raised: %s", got)
	}
	open.Unjudged = true
	if got := describeViolation(open); !strings.Contains(got, "not judged") || strings.Contains(got, "alarm function") {
		t.Errorf("open, unjudged: %s", got)
	}
	// An interval's aux is the last one computed (or the alarm's), not
	// its first step's: a new user read a screened one's as #7's.
	closed.Aux = `{"worst_for": 10805000}`
	if got := describeViolation(closed); !strings.Contains(got, `aux (the last computed before it closed) {"worst_for": 10805000}`) {
		t.Errorf("closed interval's aux: %s", got)
	}
	withAux := statedb.Violation{Predicate: "AllResolved", Kind: "liveness", Step: 54, EndStep: -1, Alarm: true, AlarmStep: 70, Aux: `{"worst_for": 3}`}
	if got := describeViolation(withAux); !strings.Contains(got, `aux (at the alarm, #70) {"worst_for": 3}`) {
		t.Errorf("raised interval's aux: %s", got)
	}
	// The event is #54's: after the alarm's step it read as the alarm's
	// event (a new user looked for a timer at #90 that ran at #54).
	raised := statedb.Violation{Predicate: "AllResolved", Kind: "liveness", Step: 54, EndStep: -1, Alarm: true, AlarmStep: 90, Node: "c3", Event: "timer sleep"}
	if got := describeViolation(raised); !strings.Contains(got, "violated from #54 (c3 timer sleep), still open at the end; alarm at #90") || strings.Contains(got, "#90: c3") {
		t.Errorf("raised: %s", got)
	}
}

// A watch that fails at every step, with a message naming the step, is
// no change: ] stopped at the next step with the error's text in the
// status line, hiding the watch that mattered (a new user's trial).
func TestAFailingWatchIsNoChange(t *testing.T) {
	m, _ := openDemo(t, 150)
	u := startUI(t, m)
	u.keys("w[1][event.step]\n")
	u.keys("wdecision()\n")
	if w := strings.Join(lineStrings(m.Watches(80, 20)), "\n"); !strings.Contains(w, "error") {
		t.Fatalf("the first watch does not fail:\n%s", w)
	}
	u.keys("]")
	u.waitFor("#154 changes")
	if u.row("▶ #154 ") == "" {
		t.Fatalf("] did not stop at #154:\n%s", u.text())
	}
	if s := u.statusText(); strings.Contains(s, "out of range") || !strings.Contains(s, "decision()") {
		t.Fatalf("the status line after ]:\n%s", s)
	}
}

// Esc stops a run within about one step's evaluation, even with a slow
// watch: a run evaluated 256 steps between looks at the keyboard, which
// held Esc and q for 50 s with a watch that took 0.2 s a step (a hostile
// pass). Here a run forward from #0 would reach #256 in its first chunk.
func TestEscStopsARunWithASlowWatchSoon(t *testing.T) {
	m, _ := openDemo(t, 0)
	u := startUI(t, m)
	u.keys("wlen([x for x in range(20000)]) * 0\n")
	u.keys("]")
	// Once the run has gone a chunk (Esc before it would stop at #0
	// whatever the chunk's size).
	u.waitFor("running forward: #")
	u.press(tcell.KeyEscape, 0, 0)
	u.waitFor("stopped at #")
	text := u.text()
	i := strings.Index(text, "stopped at #")
	var at int
	fmt.Sscanf(text[i+len("stopped at #"):], "%d", &at)
	if at >= 128 {
		t.Fatalf("Esc stopped the run only at #%d:\n%s", at, text)
	}
	// Backward too: from #1000, [ with the same watch.
	u.keys("g1000\n[")
	u.waitFor("running backward: #")
	u.press(tcell.KeyEscape, 0, 0)
	u.waitFor("stopped; still at #")
	if !strings.Contains(u.text(), "stopped; still at #1000") {
		t.Fatalf("Esc did not stop the run back:\n%s", u.text())
	}
}

// A relative jump further than the trace is long says so: +MaxInt
// wrapped round to a negative step (a hostile pass), and a jump back to
// before #0 said "at #-1".
func TestGoToFarAway(t *testing.T) {
	m, _ := openDemo(t, 100)
	m.GoTo("+9223372036854775807")
	if st := m.status; !strings.Contains(st, "the trace has") || strings.Contains(st, "#-") || m.pos != 100 {
		t.Fatalf("g +MaxInt at #100: %q, at #%d", st, m.pos)
	}
	m.GoTo("-101")
	if st := m.status; st != "at the start, before #0" || m.pos != -1 {
		t.Fatalf("g -101 at #100: %q, at #%d", st, m.pos)
	}
	// A step (#) is never a relative move: #-5 moved 5 steps back.
	m.GoTo("50")
	m.GoTo("#-5")
	if st := m.status; !strings.Contains(st, "a step is #0 or more") || m.pos != 50 {
		t.Fatalf("g #-5 at #50: %q, at #%d", st, m.pos)
	}
}
