// Package tui is the time-travel debugger behind `replay debug`: a Model
// that holds the cursor, the selection and what every panel shows, as data,
// reading the trace database (statedb) for the step index, node states,
// field histories and predicate results, and a replay cursor only for
// watches; and a thin tview view that draws the model and feeds it keys.
package tui

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/stall"
	"github.com/replaycheck/replaycheck/statedb"
	"github.com/replaycheck/replaycheck/system"
)

// Panel names a focusable panel.
type Panel int

// The focusable panels, in Tab order.
const (
	PanelTimeline Panel = iota
	PanelState
	PanelViolations
	PanelWatches
	numPanels
)

// Config is what a debugging session opens.
type Config struct {
	DB       *statedb.DB
	Traces   []string         // the trace files (for the replay behind watches and re-checks)
	Registry *system.Registry // knows the trace's system
	Preds    string           // predicates file ("" none: the database's stored results, if any, are shown)
	// PredsName is how the screen names Preds ("" : its path), e.g.
	// builtin:paxos for a bundled script's temporary copy.
	PredsName string
	At        int // initial cursor position (-1: before the first step)
	// Trace is the loaded trace, when the caller has it (saves loading it
	// again for watches).
	Trace *replay.Trace
	// CheckpointEvery is the replay cursor's checkpoint interval (default
	// CheckpointEvery).
	CheckpointEvery int
	// Predict and Critical are the searches behind p and c (nil: not
	// available), given by replay debug, which owns them.
	Predict  PredictFunc
	Critical CriticalFunc
	// Building, if set, is the database being built: the session opens
	// at once on the steps indexed so far (DB is Building.DB), indexes the
	// rest in the background, then reads the complete database. The
	// model closes it.
	Building *statedb.Building
	// Warnings are what loading the trace warned of (a damaged file, a
	// node's recording that stopped early): the session opens on them,
	// since the screen covers the terminal they were printed to.
	Warnings []string
}

// CheckpointEvery is the debugger's default checkpoint interval: a step
// back re-executes at most this many events. Four times denser than
// replay's default: on a 1M-event paxos trace it keeps the worst step back
// with a watch near 2 ms instead of 20 ms, for about 100 MB more memory.
const CheckpointEvery = 250

// Model is the debugger's state and logic, with no terminal in it.
type Model struct {
	cfg Config
	// watchBound is how long the watches' evaluation may take before the
	// one running is switched off (0: predicates.StuckBound of the
	// default time budget).
	watchBound time.Duration
	// stuckScript is a script whose load for the watches did not return
	// within the watch bound: watches run without it.
	stuckScript string
	db          *statedb.DB
	preds       *statedb.Predicates
	// predsOutdated says why the stored results shown may be stale ("":
	// they are the script's as it is, or were checked this session).
	predsOutdated string
	viol          map[int]bool // steps with a violation that counts (as replay check counts)
	// screenedAt holds the steps where a liveness interval opened that
	// its stability measures screened: not a violation, shown as such.
	screenedAt map[int]bool
	// withScreened makes v and V stop at screened intervals too (s).
	withScreened bool
	// recheckErr is why the last re-check failed ("": it did not).
	recheckErr string
	// hint is the empty Watches panel's text for the script hintFor.
	hint, hintFor string

	pos int           // the cursor: steps 0..pos have executed
	cur *statedb.Step // the step at pos (nil at -1)

	node   node.ID // the node whose state is shown
	follow bool    // the shown node follows the cursor's event

	focus    Panel
	filter   *filter
	tlFind   string
	violSel  int // a row of listed
	watchSel int
	// listed is the Violations panel's rows, indexes into preds.Violations:
	// the violations first, then the screened liveness intervals, each in
	// step order (screened intervals opening early hid the findings).
	listed []int

	// sortedNodes is the trace's nodes in natural order (nodes()).
	sortedNodes []node.ID
	flowCell    int // the message flow's column width (flowCellWidth); 0 until known
	// grid shows the cluster grid in place of the message flow; gridCols
	// are its columns, field paths added with + from the State panel.
	grid     bool
	gridCols []string

	stateSel string // selected row of the state tree (its key)
	// stateAuto: stateSel is the panel's own choice (a step's change),
	// which the next step's change replaces; a row the user picks stays.
	stateAuto bool
	stateTop  int
	collapsed map[string]bool
	// stateShown is the node and step the State panel last drew: when
	// either moves, the panel brings what the step changed into view.
	stateShown shownState

	watches []*watch
	sess    *session

	popup  *popup
	prompt *prompt
	// promptEdited: the last key only edited the prompt's text.
	promptEdited bool
	status       string
	err          bool // status is an error
	quit         bool

	// tasks are long jobs started by keys, for the view to run.
	tasks   []*Task
	running *Task // the chunk task that owns the replay cursor and blocks keys
	// indexTask builds the database in the background (Config.Building);
	// indexing is its progress, indexErr why it stopped ("": it did not),
	// pendingAt the --at step it had not reached yet (-1: none).
	indexTask *Task
	indexing  string
	indexErr  string
	pendingAt int
	ownDB     bool   // the model opened db (once built) and closes it
	busy      string // what it is doing
	recheck   *Task  // the re-check running in the background (keys still work)
	checking  string // its progress

	// search is predict, critical or a branch being opened, in the
	// background (keys still work; Esc stops it): searchNote is its
	// progress, stopSearch cancels it.
	search     *Task
	searchNote string
	stopSearch func()
	// predicted and transitions are finished searches, by the step
	// predicted from and by predicate and interval ("P #5..#40"): shown
	// again rather than re-run.
	predicted   map[int]*Predicted
	transitions map[string]*Transition
	// parent is the model this branch was opened from (nil: the trace
	// opened), fork the parent's step the branch continues after;
	// children are the branches opened from here, by trace file;
	// switchTo asks the view to show another model (TakeSwitch).
	parent   *Model
	fork     int
	children map[string]*Model
	switchTo *Model
}

// New opens a debugging session on a database.
func New(cfg Config) (*Model, error) {
	if cfg.CheckpointEvery <= 0 {
		cfg.CheckpointEvery = CheckpointEvery
	}
	if cfg.Building != nil {
		cfg.DB = cfg.Building.DB
		if cfg.Trace == nil {
			cfg.Trace = cfg.Building.Trace()
		}
	}
	m := &Model{cfg: cfg, db: cfg.DB, follow: true, collapsed: map[string]bool{}, pos: -1, pendingAt: -1,
		predicted: map[int]*Predicted{}, transitions: map[string]*Transition{}, children: map[string]*Model{}}
	m.setPredicates(cfg.DB.Predicates())
	at := cfg.At
	if _, total, indexing := m.db.Indexing(); indexing && at >= m.db.Len() && at < total {
		// Shown once indexed.
		m.pendingAt, at = at, m.db.Len()-1
	}
	if at >= m.db.Len() {
		return nil, fmt.Errorf("--at %d: the trace has %d steps (#0..#%d)", at, m.db.Len(), m.db.Len()-1)
	}
	if len(m.nodes()) > 0 {
		m.node = m.nodes()[0]
	}
	if err := m.Seek(max(at, -1)); err != nil {
		return nil, err
	}
	m.status = fmt.Sprintf("%d steps, %d nodes; press ? for help", m.db.Len(), len(m.nodes()))
	if m.preds != nil {
		m.status += fmt.Sprintf("; %s: %s", m.scriptShown(), m.countsText())
	}
	if cfg.Building != nil {
		_, total, _ := m.db.Indexing()
		m.status = fmt.Sprintf("%d steps, %d nodes, indexed in the background: browse what is indexed; press ? for help", total, len(m.nodes()))
		if m.pendingAt >= 0 {
			m.status = fmt.Sprintf("going to #%d once it is indexed; %s", m.pendingAt, m.status)
		}
		m.startIndexing()
	}
	if len(cfg.Warnings) > 0 {
		m.showWarnings()
	}
	return m, nil
}

// showWarnings opens the popup of what loading the trace warned of.
func (m *Model) showWarnings() {
	p := &popup{title: fmt.Sprintf("%d warning(s) about this trace (printed on stderr too; Esc closes)", len(m.cfg.Warnings))}
	for _, w := range m.cfg.Warnings {
		p.items = append(p.items, popupItem{text: w, step: -1, indent: 2, style: StyleViolation})
	}
	m.popup = p
	m.status = fmt.Sprintf("%d warning(s) about the trace; %s", len(m.cfg.Warnings), m.status)
}

// startIndexing queues the task that builds the rest of the database.
func (m *Model) startIndexing() {
	bg := m.cfg.Building
	var err error
	m.indexing = "indexing"
	m.indexTask = &Task{
		Name:       indexTaskName,
		Background: func(progress func(int, int)) { err = bg.Run(progress) },
		Stuck: func() string {
			st, ok := bg.Running()
			if !ok || st.After < stall.WarnAfter {
				return ""
			}
			if st.Own {
				return fmt.Sprintf("indexing stuck at step #%d: %s has run for %v, in one Starlark step past its time budget (--script-time); q ends the session", st.Step, st.What, st.After)
			}
			return fmt.Sprintf("indexing stuck at step #%d: %s, has not returned for %v when replayed (the recorded one returned); q ends the session", st.Step, st.What, st.After)
		},
		Done: func() { m.indexed(err) },
	}
	m.tasks = append(m.tasks, m.indexTask)
}

const indexTaskName = "indexing"

// TaskStuck shows what keeps a background task from going on.
func (m *Model) TaskStuck(t *Task, what string) {
	if t == m.indexTask {
		m.indexing = what
	}
}

// indexProgress shows how far indexing got, and goes to the --at step
// once it is indexed.
func (m *Model) indexProgress(done, total int) {
	m.indexing = fmt.Sprintf("indexing %d of %d steps (%.0f%%)", done, total, 100*float64(done)/float64(max(total, 1)))
	if bg := m.cfg.Building; bg != nil && bg.Phase() == "compacting" {
		m.indexing = "compacting the index"
	}
	if m.pendingAt >= 0 && m.pendingAt < m.db.Len() && m.running == nil {
		at := m.pendingAt
		m.pendingAt = -1
		m.seekOrSay(at)
	}
}

// indexed ends the background build: the complete database replaces the
// one being built, or, when the build failed (the replay diverged), the
// steps indexed stay browsable and the status line says why.
func (m *Model) indexed(err error) {
	bg := m.cfg.Building
	m.indexTask, m.indexing = nil, ""
	if err != nil {
		done, total, _ := m.db.Indexing()
		m.indexErr = fmt.Sprintf("indexing stopped at #%d of %d: %s; steps #0..#%d stay browsable", done, total, oneLine(err.Error()), done-1)
		m.fail("%s", m.indexErr)
		return
	}
	db, err := bg.Finish()
	if err != nil {
		m.indexErr = "indexing could not finish: " + oneLine(err.Error())
		m.fail("%s", m.indexErr)
		return
	}
	m.cfg.Building, m.cfg.DB, m.db, m.ownDB = nil, db, db, true
	m.setPredicates(db.Predicates())
	at := m.pos
	if m.pendingAt >= 0 {
		at, m.pendingAt = m.pendingAt, -1
	}
	if err := m.Seek(at); err != nil {
		m.fail("%v", err)
		return
	}
	meta := db.Meta()
	m.say("indexed %d steps in %.1fs", meta.Steps, meta.IndexSeconds)
	if m.preds != nil {
		m.status += fmt.Sprintf("; %s: %s", m.scriptShown(), m.countsText())
	}
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// resultsPending says so, and returns true, when the predicates' results
// are still being computed with the index (they come at its end).
func (m *Model) resultsPending() bool {
	if m.indexTask == nil || m.script() == "" || m.preds != nil {
		return false
	}
	m.fail("the predicates' results come when indexing ends (%s)", m.indexing)
	return true
}

// outside is the error for a step the cursor cannot reach: past the
// trace, or not indexed yet.
func (m *Model) outside(step int) error {
	if done, total, ok := m.db.Indexing(); ok && step >= done && step < total {
		return fmt.Errorf("step #%d is not indexed yet (#0..#%d of #%d so far)", step, done-1, total-1)
	}
	return fmt.Errorf("step #%d is outside the trace (#0..#%d)", step, m.db.Len()-1)
}

func (m *Model) setPredicates(p *statedb.Predicates) {
	m.preds = p
	// Results stored by an earlier check, shown without --preds: say
	// when the script changed since (read once, not at every draw).
	m.predsOutdated = ""
	if p != nil && m.cfg.Preds == "" {
		m.predsOutdated = p.Outdated()
	}
	m.viol, m.screenedAt, m.listed = map[int]bool{}, map[int]bool{}, nil
	if p != nil {
		var screened []int
		for i, v := range p.Violations {
			if v.Finding() {
				m.viol[v.Step] = true
				m.listed = append(m.listed, i)
			} else {
				m.screenedAt[v.Step] = true
				screened = append(screened, i)
			}
		}
		m.listed = append(m.listed, screened...)
	}
	m.violSel = min(m.violSel, max(0, m.listedCount()-1))
}

// violationCount is how many violations count; screenedCount how many
// liveness intervals were screened.
func (m *Model) violationCount() int {
	n := 0
	if m.preds != nil {
		for _, v := range m.preds.Violations {
			if v.Finding() {
				n++
			}
		}
	}
	return n
}

func (m *Model) screenedCount() int {
	if m.preds == nil {
		return 0
	}
	return len(m.preds.Violations) - m.violationCount()
}

// listedCount is how many rows the Violations panel lists: every finding,
// screened intervals included.
func (m *Model) listedCount() int { return len(m.listed) }

// countsText is "N violation(s)", with the screened intervals if any.
func (m *Model) countsText() string { return m.countsBefore(-1) }

// countsBefore is countsText with, when before >= 0, the count of
// violations before a re-check beside the new one (not after the notes,
// where it read as a count of them).
func (m *Model) countsBefore(before int) string {
	s := fmt.Sprintf("%d violation(s)", m.violationCount())
	if before >= 0 {
		s += fmt.Sprintf(" (before: %d)", before)
	}
	if n := m.screenedCount(); n > 0 {
		s += fmt.Sprintf(", %d liveness interval(s) not raised (s: v stops there too)", n)
	}
	return s + m.notFullyChecked()
}

// notFullyChecked says that some predicates could not be evaluated (and
// were disabled from there on), or is "": without it a count of no
// violations reads as a clean check.
func (m *Model) notFullyChecked() string {
	if m.preds == nil || len(m.preds.Errors) == 0 {
		return ""
	}
	return fmt.Sprintf("; not fully checked: %d predicate error(s) (Violations panel)", len(m.preds.Errors))
}

// Pos is the cursor: the last executed step (-1: before the first).
func (m *Model) Pos() int { return m.pos }

// Node is the node whose state the State panel shows.
func (m *Model) Node() node.ID { return m.node }

// Focus is the focused panel.
func (m *Model) Focus() Panel { return m.focus }

// setFocus focuses panel p. Focused, the Violations panel selects the row
// at the cursor (marked ▶) unless the selected one is there too: the
// selection left from before is stale once the cursor moved (--at, v,
// stepping), and c and Enter act on the selected row, not on the ▶ one
// (a new user at #1818 pressed Tab Tab c, and c traced back the first
// row's alarm).
func (m *Model) setFocus(p Panel) {
	if p == PanelViolations && m.focus != PanelViolations && m.preds != nil {
		at := func(i int) bool { return i < len(m.listed) && m.preds.Violations[m.listed[i]].Step == m.pos }
		if !at(m.violSel) {
			for i := range m.listed {
				if at(i) {
					m.violSel = i
					break
				}
			}
		}
	}
	m.focus = p
}

// Quit reports whether the user asked to quit.
func (m *Model) Quit() bool { return m.quit }

// Status is the message line.
func (m *Model) Status() string { return m.status }

func (m *Model) say(format string, args ...any) {
	m.status, m.err = fmt.Sprintf(format, args...), false
}

func (m *Model) fail(format string, args ...any) {
	m.status, m.err = fmt.Sprintf(format, args...), true
}

// Seek moves the cursor to pos (-1: before the first step).
func (m *Model) Seek(pos int) error {
	if pos < -1 || pos >= m.db.Len() {
		return m.outside(pos)
	}
	var cur *statedb.Step
	if pos >= 0 {
		s, err := m.db.Step(pos)
		if err != nil {
			return err
		}
		cur = s
	}
	if pos != m.pos {
		// What the status line said was about where the cursor was.
		m.status, m.err = "", false
	}
	m.pos, m.cur = pos, cur
	if m.follow && cur != nil {
		m.node = cur.Node
	}
	m.evalWatches()
	return nil
}

func (m *Model) seekOrSay(pos int) {
	if err := m.Seek(pos); err != nil {
		m.fail("%v", err)
	}
}

// Step moves one step forward (+1) or back (-1).
func (m *Model) Step(dir int) {
	target := m.pos + dir
	switch {
	case target >= m.db.Len():
		if _, _, indexing := m.db.Indexing(); indexing {
			m.say("at the last step indexed so far #%d (%s)", m.pos, m.indexing)
			break
		}
		m.say("at the last step #%d", m.pos)
	case target < -1:
		m.say("at the start")
	default:
		m.seekOrSay(target)
	}
}

// lastStepOfNode is the shown node's latest step at or before the cursor
// (nil: none, or not within lastStepLookback steps: a default that is a
// convenience does not read a million steps back).
func (m *Model) lastStepOfNode() *statedb.Step {
	if m.cur != nil && m.cur.Node == m.node {
		return m.cur
	}
	return m.nodeStep(m.pos, max(0, m.pos-lastStepLookback))
}

// lastStepLookback bounds how far back lastStepOfNode looks.
const lastStepLookback = 100_000

// nodeStep is the shown node's first step going from step from to step
// to (backward when to < from), or nil.
func (m *Model) nodeStep(from, to int) *statedb.Step {
	var found *statedb.Step
	m.db.Steps(from, to, func(s *statedb.Step) bool {
		if s.Node == m.node {
			c := *s
			found = &c
			return false
		}
		return true
	})
	return found
}

// StepNode moves to the next (+1) or previous (-1) step of the shown node.
func (m *Model) StepNode(dir int) {
	id := m.node
	// From the cursor's own step the index links the node's steps; from
	// elsewhere, scan.
	if m.cur != nil && m.cur.Node == id {
		next := m.cur.NextOnNode
		if dir < 0 {
			next = m.cur.PrevOnNode
		}
		if next < 0 {
			m.say("no %s step of %s from #%d", dirWord(dir), id, m.pos)
			return
		}
		m.seekOrSay(next)
		return
	}
	to := m.db.Len() - 1
	if dir < 0 {
		to = 0
	}
	found := m.nodeStep(m.pos+dir, to)
	if found == nil {
		m.say("no %s step of %s from #%d", dirWord(dir), id, m.pos)
		return
	}
	m.seekOrSay(found.Step)
}

func dirWord(dir int) string {
	if dir > 0 {
		return "later"
	}
	return "earlier"
}

// NextViolation moves to the next (+1) or previous (-1) violation, and
// to screened liveness intervals too when ToggleScreened asked.
func (m *Model) NextViolation(dir int) {
	if m.indexTask != nil && m.script() != "" && m.preds == nil && m.cfg.Building != nil {
		m.nextFoundSoFar(dir)
		return
	}
	if m.resultsPending() {
		return
	}
	if m.violationCount() == 0 && (!m.withScreened || m.screenedCount() == 0) {
		switch {
		case m.preds == nil:
			m.say("no violations (load predicates with --preds, or r to re-check)")
		case m.screenedCount() > 0:
			m.say("no violations; %d liveness interval(s) were not raised (s: v stops there too)", m.screenedCount())
		default:
			m.say("no violations%s", m.notFullyChecked())
		}
		return
	}
	vs := m.preds.Violations
	best := -1
	for i, v := range vs {
		if !v.Finding() && !m.withScreened {
			continue
		}
		if dir > 0 && v.Step > m.pos && (best < 0 || v.Step < vs[best].Step) ||
			dir < 0 && v.Step < m.pos && (best < 0 || v.Step > vs[best].Step) {
			best = i
		}
	}
	if best < 0 {
		m.say("no %s violation from #%d", dirWord(dir), m.pos)
		return
	}
	m.jumpToViolation(best)
}

// nextFoundSoFar is NextViolation while the predicates are checked with
// the index: it moves among the findings made up to the step indexing
// reached (a new user waited 75 s for v on a 100,000-step trace whose
// first alarm check found in a second).
func (m *Model) nextFoundSoFar(dir int) {
	found := m.cfg.Building.FoundSoFar()
	best := -1
	for i, v := range found {
		if dir > 0 && v.Step > m.pos && (best < 0 || v.Step < found[best].Step) ||
			dir < 0 && v.Step < m.pos && (best < 0 || v.Step > found[best].Step) {
			best = i
		}
	}
	if best < 0 {
		m.say("no %s violation found so far (all when indexing ends)", dirWord(dir))
		return
	}
	v := found[best]
	if v.Step >= m.db.Len() { // checked ahead of what is published
		m.say("%s: not indexed yet (%s)", describeViolationOpen(v, "open so far"), m.indexing)
		return
	}
	m.seekOrSay(v.Step)
	if m.pos == v.Step {
		m.say("%d found so far (all when indexing ends): %s", len(found), describeViolationOpen(v, "open so far"))
	}
}

// ToggleScreened makes v and V stop at the liveness intervals the
// stability measures screened too, or no longer.
func (m *Model) ToggleScreened() {
	m.withScreened = !m.withScreened
	switch {
	case m.screenedCount() == 0:
		m.say("no liveness interval was screened")
	case m.withScreened:
		m.say("v and V stop at the %d screened liveness interval(s) too (s: not any more)", m.screenedCount())
	default:
		m.say("v and V stop at violations only (s: at screened liveness intervals too)")
	}
}

func (m *Model) jumpToViolation(i int) {
	v := m.preds.Violations[i]
	m.violSel = max(0, slices.Index(m.listed, i))
	m.seekOrSay(v.Step)
	m.say("%s", describeViolation(v))
}

// intervalText is a liveness interval as the Violations panel shows it:
// "#S..#E", or "#S..end" when it is open at the end.
func intervalText(v statedb.Violation) string {
	if v.EndStep < 0 {
		return fmt.Sprintf("#%d..end", v.Step)
	}
	return fmt.Sprintf("#%d..#%d", v.Step, v.EndStep)
}

func describeViolation(v statedb.Violation) string {
	return describeViolationOpen(v, "still open at the end")
}

// describeViolationOpen is describeViolation saying open of an interval
// not closed (while indexing, it may close later).
func describeViolationOpen(v statedb.Violation, open string) string {
	s := fmt.Sprintf("%s (%s) violated at #%d: %s %s", v.Predicate, v.Kind, v.Step, v.Node, v.Event)
	if v.Kind == "liveness" {
		end := open
		if v.EndStep >= 0 {
			end = fmt.Sprintf("until #%d", v.EndStep)
		}
		// The event is the interval's first step's, told beside it: after
		// the alarm's step it read as the alarm's event.
		from := fmt.Sprintf("#%d", v.Step)
		if v.Node != "" || v.Event != "" {
			from += fmt.Sprintf(" (%s)", strings.TrimSpace(string(v.Node)+" "+v.Event))
		}
		switch {
		case v.Alarm:
			s = fmt.Sprintf("%s (liveness) violated from %s, %s; alarm at #%d", v.Predicate, from, end, v.AlarmStep)
		case v.EndStep >= 0:
			// Closed: it held again, whether or not it has an alarm
			// function.
			s = fmt.Sprintf("%s (liveness) false from %s, %s, then held again; no alarm, not a violation", v.Predicate, from, end)
		case v.Unjudged:
			s = fmt.Sprintf("%s (liveness) false from %s, still open where checking stopped (the trace is incomplete, or the predicate failed): not judged", v.Predicate, from)
		default:
			// Open at the end and not raised: only an alarm function
			// (or checking that stopped early) leaves one so.
			s = fmt.Sprintf("%s (liveness) false from %s, %s; not raised by its alarm function, not a violation", v.Predicate, from, end)
		}
	}
	s += witnessText("; witness ", v)
	if v.Aux != "" {
		// An interval's aux is recomputed while it is open: the value
		// shown beside its first step is a later one (a new user read
		// a screened interval's aux as its first step's).
		s += "; aux" + predicates.AuxWhen(v.Kind, v.Alarm, v.AlarmStep, v.EndStep) + " " + v.Aux
	}
	return s
}

// FollowMessage follows the message of the cursor's event: a receive to
// the step that sent it; a task's resume to the step that woke it (the
// receive of the message it waited for, ...); an event that sent messages
// to where they were received (a menu when there are several).
func (m *Model) FollowMessage() {
	c := m.cur
	if c == nil {
		m.say("before the first step: no event")
		return
	}
	if c.Kind == node.KindTask && c.WokenAt >= 0 {
		m.seekOrSay(c.WokenAt)
		m.say("followed the task's wake-up back to #%d, which woke it (m again follows that step's message)", c.WokenAt)
		return
	}
	if c.Kind == node.KindRecv {
		if c.SendStep < 0 {
			m.say("the sender %s's trace does not have this message", c.From)
			return
		}
		m.seekOrSay(c.SendStep)
		m.say("followed %s from %s back to its send at #%d", c.MsgType, c.From, c.SendStep)
		return
	}
	m.FollowSends()
}

// FollowSends offers the messages the cursor's event sent and goes to
// where the chosen one was received.
func (m *Model) FollowSends() {
	c := m.cur
	if c == nil || len(c.Sends) == 0 {
		m.say("#%d sent no messages", m.pos)
		return
	}
	from := m.pos
	var items []popupItem
	for _, s := range c.Sends {
		switch len(s.Receipts) {
		case 0:
			if u, ok := replay.UnrecordedAfter(m.db.UnknownStretches(s.To), from); ok {
				items = append(items, popupItem{text: fmt.Sprintf("%s to %s: receipt unknown (%s's recording is missing after #%d)", s.Type, s.To, s.To, u.After), step: -1, style: StyleUnknown})
				continue
			}
			items = append(items, popupItem{text: fmt.Sprintf("%s to %s: never received (lost, or in flight at the end)", s.Type, s.To), step: -1, style: StyleLost})
		default:
			for _, r := range s.Receipts {
				items = append(items, popupItem{text: fmt.Sprintf("%s to %s: received at #%d", s.Type, s.To, r), step: r})
			}
		}
	}
	received := slices.IndexFunc(items, func(it popupItem) bool { return it.step >= 0 })
	if len(items) == 1 && received == 0 {
		m.seekOrSay(items[0].step)
		m.say("followed %s from #%d to its receipt at #%d", c.Sends[0].Type, from, items[0].step)
		return
	}
	p := &popup{title: fmt.Sprintf("messages sent at #%d (Enter: go to the receipt)", from), items: items, sel: max(received, 0)}
	p.onEnter = func(it popupItem) {
		if it.step < 0 {
			m.say("that message has no receipt in the trace")
			return
		}
		m.popup = nil
		m.seekOrSay(it.step)
		m.say("followed a message from #%d to its receipt at #%d", from, it.step)
	}
	m.popup = p
}

// GoTo parses a step ("273", "#273", "+10", "-10", "end") and moves there.
func (m *Model) GoTo(s string) {
	s = strings.TrimSpace(s)
	step := strings.HasPrefix(s, "#") // a step: never relative
	s = strings.TrimSpace(strings.TrimPrefix(s, "#"))
	target := 0
	switch {
	case step && (strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-")):
		m.fail("go to #%s: a step is #0 or more (+N and -N move, without #)", s)
		return
	case s == "end" || s == "$":
		target = m.db.Len() - 1
	case strings.HasPrefix(s, "+") || strings.HasPrefix(s, "-"):
		n, err := strconv.Atoi(s)
		if err != nil {
			m.fail("go to %q: want a step number, +N or -N", s)
			return
		}
		if n > m.db.Len() || n < -m.db.Len() {
			// Further than the trace is long (and m.pos + n could wrap).
			m.fail("go to %s: the trace has %d steps (#0..#%d)", s, m.db.Len(), m.db.Len()-1)
			return
		}
		target = m.pos + n
	default:
		n, err := strconv.Atoi(s)
		if err != nil {
			m.fail("go to %q: want a step number, +N or -N", s)
			return
		}
		target = n
	}
	if err := m.Seek(target); err != nil {
		m.fail("%v", err)
		return
	}
	if target < 0 {
		m.say("at the start, before #0")
		return
	}
	m.say("at #%d", target)
}

// SelectNode shows another node's state (dir +1/-1 through the nodes) and
// stops following the cursor's event.
func (m *Model) SelectNode(dir int) {
	nodes := m.nodes()
	if len(nodes) == 0 {
		return
	}
	i := slices.Index(nodes, m.node)
	i = (i + dir + len(nodes)) % len(nodes)
	m.node, m.follow = nodes[i], false
	m.stateSel, m.stateTop = "", 0
	m.say("showing %s (f: follow the cursor's node again)", m.node)
	m.evalWatches()
}

// Follow makes the State panel follow the cursor's node again.
func (m *Model) Follow() {
	m.follow = true
	if m.cur != nil {
		m.node = m.cur.Node
	}
	m.say("the State panel follows the node of the cursor's step")
}

// filter selects timeline rows.
type filter struct {
	text  string
	nodes map[node.ID]bool
	kinds map[node.Kind]bool
	types []string
	re    *regexp.Regexp
	memo  filterMemo // the steps tried, for scanFiltered
}

// parseFilter reads "node=n1,n2 kind=recv type=Last REGEX...".
func parseFilter(text string, nodes []node.ID) (*filter, error) {
	f := &filter{text: text}
	var words []string
	for _, w := range strings.Fields(text) {
		k, v, ok := strings.Cut(w, "=")
		switch {
		case ok && k == "node":
			f.nodes = map[node.ID]bool{}
			for _, n := range strings.Split(v, ",") {
				if !slices.Contains(nodes, node.ID(n)) {
					return nil, fmt.Errorf("node=%s: no such node", n)
				}
				f.nodes[node.ID(n)] = true
			}
		case ok && k == "kind":
			f.kinds = map[node.Kind]bool{}
			for _, s := range strings.Split(v, ",") {
				kind, err := node.ParseKind(s)
				if err != nil {
					return nil, err
				}
				f.kinds[kind] = true
			}
		case ok && k == "type":
			f.types = strings.Split(v, ",")
		default:
			words = append(words, w)
		}
	}
	if len(words) > 0 {
		re, err := regexp.Compile(strings.Join(words, " "))
		if err != nil {
			return nil, fmt.Errorf("filter: %v", err)
		}
		f.re = re
	}
	return f, nil
}

func (f *filter) match(s *statedb.Step) bool {
	if f == nil {
		return true
	}
	if f.nodes != nil && !f.nodes[s.Node] || f.kinds != nil && !f.kinds[s.Kind] {
		return false
	}
	if f.types != nil {
		ok := false
		for _, t := range f.types {
			if s.MsgType != "" && (t == s.MsgType || strings.HasSuffix(s.MsgType, "."+t)) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return f.re == nil || f.re.MatchString(s.Line)
}

// SetFilter filters the timeline ("" clears).
func (m *Model) SetFilter(text string) {
	if strings.TrimSpace(text) == "" {
		m.filter = nil
		m.say("timeline filter cleared")
		return
	}
	f, err := parseFilter(text, m.nodes())
	if err != nil {
		m.fail("%v", err)
		return
	}
	m.filter = f
	m.say("timeline filter: %s (Up/Down in the timeline move between matching steps)", text)
}

// maxScan bounds how far the timeline looks for filtered rows.
const maxScan = 200_000

// TimelineStep moves the cursor to the next (+1) or previous (-1) step the
// timeline shows.
func (m *Model) TimelineStep(dir int, count int) {
	target := -2
	to := m.db.Len() - 1
	if dir < 0 {
		to = 0
	}
	left := count
	m.scanFiltered(m.pos+dir, to, func(s *statedb.Step) bool {
		target = s.Step
		left--
		return left > 0
	})
	if target < -1 {
		m.say("no %s step matches the filter", dirWord(dir))
		return
	}
	m.seekOrSay(target)
}

// witnessText names a violation's witness after prefix ("" for none), as
// replay check does.
func witnessText(prefix string, v statedb.Violation) string {
	if wt := predicates.WitnessText(v.Witness, v.Alarm, v.AlarmWitness, v.AlarmStep); wt != "" {
		return prefix + wt
	}
	return ""
}

// scriptShown names the script whose results are shown: as the user
// named it (Config.PredsName), else by the path they were checked with.
func (m *Model) scriptShown() string {
	if m.cfg.PredsName != "" && sameScript(m.preds.Script, m.cfg.Preds) {
		return m.cfg.PredsName
	}
	return m.preds.Script
}

// sameScript says whether two paths name one script file: results stored
// by a build name it as the build was given it (a bundled script's copy
// in the user's cache, reached by another path than this session's).
func sameScript(a, b string) bool {
	if a == b {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}
