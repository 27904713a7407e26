package tui

import (
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"

	"github.com/replaycheck/replaycheck/state"
)

// KeyHelp is one line of the help: keys and what they do.
type KeyHelp struct {
	Keys string
	What string
}

// Keys lists every key, as `?` shows them (and docs/debugger.md
// documents them).
var Keys = []KeyHelp{
	{"→  .", "step forward"},
	{"←  ,", "step back"},
	{"Shift-→  >", "forward to the shown node's next step"},
	{"Shift-←  <", "back to the shown node's previous step"},
	{"v  V", "next / previous violation"},
	{"s", "v and V stop at liveness intervals that closed or were not raised too (or not)"},
	{"m", "follow the message of this event: a receive to its send; a task's resume to what woke it; a send to its receipt"},
	{"M", "list the messages this event sent and go to a receipt"},
	{"g", "go to a step (273, #273, +10, -10, end)"},
	{"]  [", "run forward / backward until a predicate or a watch changes"},
	{"r", "reload the predicates file and re-check the same run"},
	{"p", "predict: list the violations the futures of the cursor's step reach; Enter opens a branch trace"},
	{"c", "critical transition of the liveness alarm selected in the Violations panel, else at the cursor: go to where it became doomed"},
	{"b  Backspace", "back from a branch trace (opened by p or c) to its parent, at the step you left"},
	{"w", "add a watch (a Starlark expression, as in predicates)"},
	{"x", "remove the selected watch (Watches panel; Enter edits it)"},
	{"/", "filter the timeline (node=n1,n2 kind=recv type=Last REGEX); in State: find a field"},
	{"{  }", "show the previous / next node's state"},
	{"f", "the State panel follows the cursor's node again"},
	{"h", "history of the selected field (State panel): every version, Enter goes there"},
	{"d", "diff the shown node's state against another step"},
	{"y", "why: where the selected State field's value came from (steps and messages back to an input); Enter goes to a step"},
	{"G", "cluster grid in place of the message flow: one row per node (natural order), chosen fields as columns"},
	{"+", "add the selected State field to the cluster grid as a column, or remove it"},
	{"Tab  Shift-Tab", "focus the next / previous panel"},
	{"↑ ↓ PgUp PgDn", "Timeline: move between (filtered) steps; other panels: select"},
	{"Home  End", "Timeline: first / last step"},
	{"Enter", "Violations: jump there; State: fold or unfold; History: go to that step"},
	{"Esc", "close a popup (any key it has no use for closes it and acts), cancel a prompt, stop a run or a search (p, c)"},
	{"?", "this help"},
	{"q  Ctrl-C", "quit"},
}

// popup is a list over the panels: help, a field's history, a diff, the
// messages of an event. A popup whose lines are selectable scrolls with
// its selection; another scrolls by its first shown line.
type popup struct {
	title   string
	items   []popupItem
	sel     int
	top     int             // the first shown line (of the wrapped lines when not selectable)
	rows    int             // how many lines the last draw showed (for PgUp/PgDn and clamping)
	onEnter func(popupItem) // nil: lines are not selectable
}

type popupItem struct {
	text  string
	step  int
	style Style
	// indent is where a wrapped line's continuation starts (lines of
	// selectable popups are not wrapped).
	indent int
	// act is what Enter on the line does, for popups whose lines act
	// differently (nil: nothing).
	act func()
}

// prompt is a line of text being typed.
type prompt struct {
	label  string
	text   []rune
	onDone func(string)
}

// HandleKey applies one key press.
func (m *Model) HandleKey(ev *tcell.EventKey) {
	key, r := ev.Key(), ev.Rune()
	m.promptEdited = false
	if key == tcell.KeyCtrlC {
		m.quit = true
		return
	}
	if m.running != nil {
		if key == tcell.KeyEscape {
			m.Cancel()
		}
		return
	}
	if m.prompt != nil {
		m.promptKey(key, r)
		return
	}
	if m.popup != nil && m.popupKey(key, r) {
		return
	}
	shift := ev.Modifiers()&tcell.ModShift != 0
	switch key {
	case tcell.KeyRight:
		if shift {
			m.StepNode(+1)
		} else {
			m.Step(+1)
		}
		return
	case tcell.KeyLeft:
		if shift {
			m.StepNode(-1)
		} else {
			m.Step(-1)
		}
		return
	case tcell.KeyTab:
		m.setFocus((m.focus + 1) % numPanels)
		return
	case tcell.KeyBacktab:
		m.setFocus((m.focus + numPanels - 1) % numPanels)
		return
	case tcell.KeyEscape:
		if m.search != nil {
			m.StopSearch()
			return
		}
		m.say("")
		return
	case tcell.KeyBackspace, tcell.KeyBackspace2:
		m.Back()
		return
	case tcell.KeyUp, tcell.KeyDown, tcell.KeyPgUp, tcell.KeyPgDn, tcell.KeyHome, tcell.KeyEnd, tcell.KeyEnter, tcell.KeyDelete:
		m.panelKey(key)
		return
	case tcell.KeyRune:
	default:
		return
	}
	switch r {
	case 'q':
		m.quit = true
	case '?':
		m.showHelp()
	case '.':
		m.Step(+1)
	case ',':
		m.Step(-1)
	case '>':
		m.StepNode(+1)
	case '<':
		m.StepNode(-1)
	case 'v':
		m.NextViolation(+1)
	case 'V':
		m.NextViolation(-1)
	case 's':
		m.ToggleScreened()
	case 'm':
		m.FollowMessage()
	case 'M':
		m.FollowSends()
	case 'g':
		m.ask("go to step: ", "", m.GoTo)
	case ']':
		m.RunUntilChange(+1)
	case '[':
		m.RunUntilChange(-1)
	case 'r':
		m.Reload()
	case 'p':
		m.Predict()
	case 'c':
		m.Critical()
	case 'b':
		m.Back()
	case 'w':
		m.ask("watch: ", "", m.AddWatch)
	case 'x':
		switch {
		case len(m.watches) == 0:
			m.say("no watch to remove (w adds one; x removes the one selected in the Watches panel)")
		case m.focus == PanelWatches:
			m.RemoveWatch()
		default:
			m.say("x removes the watch selected in the Watches panel: Tab there, select it with ↑↓, then x")
		}
	case '/':
		if m.focus == PanelState {
			m.ask("find field: ", "", m.FindField)
		} else {
			current := ""
			if m.filter != nil {
				current = m.filter.text
			}
			m.ask("filter (node=.. kind=.. type=.. regex; empty clears): ", current, m.SetFilter)
		}
	case '{':
		m.SelectNode(-1)
	case '}':
		m.SelectNode(+1)
	case 'f':
		m.Follow()
	case 'h':
		if m.focus != PanelState {
			m.say("h shows the history of the field selected in the State panel: Tab there and select a field (/ finds one)")
			return
		}
		m.History()
	case 'y':
		m.Why()
	case 'G':
		m.ToggleGrid()
	case '+':
		m.GridColumn()
	case 'd':
		// The step before the shown node's latest event (at or before the
		// cursor): the diff shows what that event changed, also when the
		// node is pinned and the cursor's event is another node's.
		def := ""
		if last := m.lastStepOfNode(); last != nil && last.PrevOnNode >= 0 {
			def = fmt.Sprint(last.PrevOnNode)
		} else if last != nil {
			def = fmt.Sprint(last.Step - 1)
		} else if m.pos > 0 {
			def = fmt.Sprint(m.pos - 1)
		}
		m.ask(fmt.Sprintf("diff %s at #%d against step: ", m.node, m.pos), def, m.Diff)
	case ' ':
		m.panelKey(tcell.KeyEnter)
	}
}

func (m *Model) ask(label, initial string, done func(string)) {
	m.prompt = &prompt{label: label, text: []rune(initial), onDone: done}
}

func (m *Model) promptKey(key tcell.Key, r rune) {
	p := m.prompt
	switch key {
	case tcell.KeyEscape:
		m.prompt = nil
	case tcell.KeyEnter:
		m.prompt = nil
		p.onDone(string(p.text))
	case tcell.KeyBackspace, tcell.KeyBackspace2:
		if len(p.text) > 0 {
			p.text = p.text[:len(p.text)-1]
		}
		m.promptEdited = true
	case tcell.KeyCtrlU:
		p.text = nil
		m.promptEdited = true
	case tcell.KeyRune:
		if len(p.text) < maxPrompt {
			p.text = append(p.text, r)
		}
		m.promptEdited = true
	default:
		m.promptEdited = true // ignored: nothing changed
	}
}

// maxPrompt bounds what a prompt holds: no answer is longer, and a
// paste of a whole file (it arrives as keys) must not grow it without
// end.
const maxPrompt = 1024

// PromptEdited reports whether the last key only edited the text of the
// open prompt (or was ignored by it): nothing but the status line changed.
func (m *Model) PromptEdited() bool { return m.promptEdited }

// popupKey applies a key to the open popup and reports whether the popup
// used it. Any other key closes the popup and is not swallowed: the
// caller applies it as if no popup had been open (a key typed before the
// popup showed does what it was typed for).
func (m *Model) popupKey(key tcell.Key, r rune) bool {
	p := m.popup
	page := max(1, p.rows-1)
	move := map[tcell.Key]int{tcell.KeyUp: -1, tcell.KeyDown: 1, tcell.KeyPgUp: -page, tcell.KeyPgDn: page,
		tcell.KeyHome: -1 << 30, tcell.KeyEnd: 1 << 30}[key]
	switch {
	case key == tcell.KeyEscape || key == tcell.KeyRune && (r == 'q' || r == '?'):
		m.popup = nil
	case move != 0 && p.onEnter != nil:
		p.sel = min(max(0, p.sel+move), len(p.items)-1)
	case move != 0:
		p.top = max(0, p.top+move) // clamped when drawn, to the wrapped lines
	case key == tcell.KeyEnter && p.onEnter != nil && len(p.items) > 0:
		p.onEnter(p.items[p.sel])
	case key == tcell.KeyEnter:
		m.popup = nil
	default:
		m.popup = nil
		return false
	}
	return true
}

func (m *Model) panelKey(key tcell.Key) {
	move := map[tcell.Key]int{tcell.KeyUp: -1, tcell.KeyDown: 1, tcell.KeyPgUp: -10, tcell.KeyPgDn: 10}[key]
	switch m.focus {
	case PanelTimeline:
		switch {
		case move != 0:
			dir := 1
			if move < 0 {
				dir = -1
			}
			m.TimelineStep(dir, move*dir)
		case key == tcell.KeyHome:
			m.seekOrSay(0)
		case key == tcell.KeyEnd:
			m.seekOrSay(m.db.Len() - 1)
		}
	case PanelState:
		rows := m.stateRows()
		i := 0
		for j, r := range rows {
			if r.key == m.stateSel {
				i = j
			}
		}
		switch {
		case move != 0 && len(rows) > 0:
			i = min(max(0, i+move), len(rows)-1)
			m.stateSel, m.stateAuto = rows[i].key, false
		case key == tcell.KeyHome && len(rows) > 0:
			m.stateSel, m.stateAuto = rows[0].key, false
		case key == tcell.KeyEnd && len(rows) > 0:
			m.stateSel, m.stateAuto = rows[len(rows)-1].key, false
		case key == tcell.KeyEnter && len(rows) > 0 && !rows[i].leaf:
			m.collapsed[rows[i].key] = !m.collapsed[rows[i].key]
		}
	case PanelViolations:
		n := m.listedCount()
		switch {
		case move != 0 && n > 0:
			m.violSel = min(max(0, m.violSel+move), n-1)
		case key == tcell.KeyEnter && n > 0:
			m.jumpToViolation(m.listed[m.violSel])
		}
	case PanelWatches:
		switch {
		case move != 0 && len(m.watches) > 0:
			m.watchSel = min(max(0, m.watchSel+move), len(m.watches)-1)
		case key == tcell.KeyDelete:
			m.RemoveWatch()
		case key == tcell.KeyEnter && len(m.watches) > 0:
			w := m.watches[m.watchSel]
			m.ask("watch: ", w.expr, func(expr string) {
				w.expr, w.at = expr, -2
				m.evalWatches()
			})
		}
	}
}

func (m *Model) showHelp() {
	p := &popup{title: "keys (↑↓ PgUp PgDn scroll, Esc closes)"}
	for _, k := range Keys {
		p.items = append(p.items, popupItem{text: fmt.Sprintf("%-16s %s", k.Keys, k.What), step: -1, indent: 17})
	}
	p.items = append(p.items,
		popupItem{step: -1},
		popupItem{text: "Message flow: one column per node; ● an event, ○───▶ a message from its sender, ✗ a message of this step never received (beside a ○ when it was to the sender), ? state unknown (recording ended early), blank: node down or not started.", step: -1, indent: 2},
		popupItem{text: "Timeline marks: ▶ the cursor, ! a violation, ~ a liveness interval that closed or that its alarm function did not raise (not a violation), • the send or receipts of the cursor's messages.", step: -1, indent: 2},
		popupItem{text: "State: fields the cursor's step changed are highlighted; @status and @timers are the runtime's view of the node; times are since the start of the run.", step: -1, indent: 2})
	m.popup = p
}

// FindField selects the first field of the shown state whose path
// contains text, unfolding what hides it.
func (m *Model) FindField(text string) {
	ns, err := m.db.State(m.node, m.pos)
	if err != nil {
		m.fail("%v", err)
		return
	}
	for _, l := range ns.Leaves {
		if strings.Contains(l.Path, text) {
			for k := range m.collapsed {
				if isAncestor(k, l.Path) {
					delete(m.collapsed, k)
				}
			}
			m.stateSel, m.stateAuto = l.Path, false
			m.focus = PanelState
			m.say("%s = %s", l.Path, m.showValue(l.Value))
			return
		}
	}
	m.fail("no field of %s at #%d contains %q", m.node, m.pos, text)
}

// History shows the selected field's versions around the cursor.
func (m *Model) History() {
	path := m.stateSel
	if path == "" {
		m.say("select a field in the State panel first (Tab to focus it)")
		return
	}
	rows := m.stateRows()
	leaf := false
	for _, r := range rows {
		if r.key == path {
			leaf = r.leaf
		}
	}
	// A container has versions of its own where it was nil or empty,
	// where it filled up, where it stopped existing (deleted, or its node
	// crashed) and where it came back filled, as replay history shows
	// them.
	vs, err := m.db.History(m.node, path, m.pos, 200, 200)
	if err == nil {
		vs, err = m.db.Composites(m.node, path, vs)
	}
	if err != nil {
		m.fail("%v", err)
		return
	}
	if len(vs) == 0 && !leaf {
		m.say("%s was never nil or empty, so it has no versions of its own: select a value below it", path)
		return
	}
	p := &popup{title: fmt.Sprintf("history of %s %s (%d versions around #%d; Enter goes there)", m.node, path, len(vs), m.pos)}
	if done, total, ok := m.db.Indexing(); ok && done < total {
		// Versions after the index's frontier are not there yet: the
		// list ends there, not where the field stops changing.
		p.title = fmt.Sprintf("history of %s %s (%d versions around #%d, of #0..#%d indexed so far; Enter goes there)", m.node, path, len(vs), m.pos, done-1)
	}
	for i, v := range vs {
		text := m.showValue(v.Value)
		step, err := m.db.Step(v.Step)
		switch {
		case v.Removed && m.db.Crashed(m.node, v.Step):
			text = fmt.Sprintf("(removed: %s crashed)", m.node)
		case v.Removed:
			text = "(removed)"
		}
		what := ""
		if err == nil {
			what = "  " + strings.TrimPrefix(step.Line, fmt.Sprintf("#%d ", v.Step))
		}
		mark := "  "
		if v.Step <= m.pos && (i == len(vs)-1 || vs[i+1].Step > m.pos) {
			mark = "▶ "
			p.sel = i
		}
		st := StyleNormal
		if v.Step > m.pos {
			st = StyleDim
		}
		p.items = append(p.items, popupItem{text: fmt.Sprintf("%s#%-7d %-24s%s", mark, v.Step, text, what), step: v.Step, style: st})
	}
	p.onEnter = func(it popupItem) {
		m.popup = nil
		m.seekOrSay(it.step)
	}
	m.popup = p
}

// Diff shows how the shown node's state at another step differs from its
// state at the cursor.
func (m *Model) Diff(other string) {
	other = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(other), "#"))
	var step int
	if _, err := fmt.Sscan(other, &step); err != nil {
		m.fail("diff against %q: want a step number", other)
		return
	}
	if step < -1 || step >= m.db.Len() {
		m.fail("%v", m.outside(step))
		return
	}
	a, err := m.db.State(m.node, step)
	if err == nil {
		var b *stateAt
		b, err = m.stateAt(m.pos)
		if err == nil {
			m.showDiff(step, a.Leaves, b.leaves)
			return
		}
	}
	m.fail("%v", err)
}

func (m *Model) showDiff(other int, a, b []state.Leaf) {
	changes := state.Diff(a, b)
	p := &popup{title: fmt.Sprintf("%s: #%d → #%d, %d change(s)", m.node, other, m.pos, len(changes))}
	for _, c := range changes {
		old, now := m.showValue(c.Old), m.showValue(c.New)
		if old == "" {
			old = "(none)"
		}
		if now == "" {
			now = "(none)"
		}
		p.items = append(p.items, popupItem{text: fmt.Sprintf("%s: %s → %s", c.Path, old, now), step: -1})
	}
	if len(changes) == 0 {
		p.items = append(p.items, popupItem{text: "(no difference)", step: -1})
	}
	m.popup = p
}
