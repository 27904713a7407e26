package tui

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/stall"
	"github.com/replaycheck/replaycheck/statedb"
	"github.com/replaycheck/replaycheck/system"
)

// session is the replay behind watches: the database answers everything
// else, so the trace is loaded and replayed only once a watch needs it.
type session struct {
	tr   *replay.Trace
	r    *replay.Replayer
	cur  *replay.Cursor
	w    *predicates.Watcher
	warm int // the cursor has checkpoints up to this step
}

// warmChunk is how many steps one warm-up chunk replays.
const warmChunk = 4096

func (m *Model) openSession() error {
	if m.sess != nil {
		return nil
	}
	tr := m.cfg.Trace
	if tr == nil {
		var err error
		if tr, err = replay.Load(m.cfg.Traces...); err != nil {
			return fmt.Errorf("load the trace for watches: %w", err)
		}
		m.cfg.Trace = tr
	}
	// The database build compared state hashes over the whole run: seeks
	// need not compare them again.
	r, err := replay.New(tr, m.cfg.Registry, replay.Options{SkipStateHashes: true})
	if err != nil {
		return err
	}
	c, err := replay.NewCursor(r, m.cfg.CheckpointEvery)
	if err != nil {
		return err
	}
	m.sess = &session{tr: tr, r: r, cur: c, warm: -1}
	// Checkpoints are taken as the cursor first passes each stretch:
	// replay the whole run in chunks while the user reads, so that any
	// later jump replays at most one checkpoint interval.
	m.tasks = append(m.tasks, &Task{Name: "warm-up", Chunk: m.warmUp, Quiet: true})
	return nil
}

// warmUp replays one chunk ahead of the checkpoints taken so far.
func (m *Model) warmUp() bool {
	s := m.sess
	if s == nil || s.warm >= m.db.Len()-1 {
		return true
	}
	if m.running != nil {
		return false // the running task owns the cursor
	}
	target := min(s.warm+warmChunk, m.db.Len()-1)
	if s.cur.Pos() < s.warm {
		if err := s.cur.Seek(s.warm); err != nil {
			return true
		}
	}
	if err := s.cur.Seek(target); err != nil {
		return true
	}
	s.warm = target
	return s.warm >= m.db.Len()-1
}

// watcher returns the session's watcher, loading the predicates file for
// its tables and helpers (or nothing, if it does not load).
func (m *Model) watcher() (*predicates.Watcher, error) {
	if err := m.openSession(); err != nil {
		return nil, err
	}
	if m.sess.w != nil {
		return m.sess.w, nil
	}
	script := m.script()
	if script == m.stuckScript {
		script = "" // its load did not return: watches run without it
	}
	// Loaded off the event loop and waited for up to the watch bound, as
	// the watches are evaluated (values): a script edited into one whose
	// load is stuck in one Starlark step froze the debugger for good.
	var w *predicates.Watcher
	var err error
	r := m.sess.r
	if !m.within(func() { w, err = predicates.NewWatcher(r, script) }) {
		m.stuckScript, m.sess = script, nil // the session is the stuck load's now
		return nil, fmt.Errorf("loading %s for the watches did not return within %v (one Starlark step ran on past the time budget): watches run without it from now on", script, m.stuckAfter())
	}
	if err != nil && script != "" {
		m.fail("watches run without %s: %v", script, err)
		w, err = predicates.NewWatcher(m.sess.r, "")
	}
	if err != nil {
		return nil, err
	}
	m.sess.w = w
	return w, nil
}

// within runs work on a goroutine of its own and waits for it up to
// stuckAfter, reporting whether it returned. When it did not, what work
// writes to is the goroutine's, left running: the caller must not read
// it, nor touch again what work uses (the watches' session).
func (m *Model) within(work func()) bool {
	done := make(chan struct{})
	go func() {
		work()
		close(done)
	}()
	timer := time.NewTimer(m.stuckAfter())
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

// recheckWatched re-checks the script under a watch of its own: a load
// or an evaluation stuck in one Starlark step (or a handler stuck in a
// call) is given up on, and the re-check fails, so that r works again
// once the script is mended. Before, it said "already re-checking" for
// good, and a CPU spun. The stuck goroutine is left behind: Go cannot
// stop it, and nothing reads what it writes.
func (m *Model) recheckWatched(tr *replay.Trace, reg *system.Registry, script string, progress func(int, int)) (*statedb.Predicates, []statedb.Flip, error) {
	var (
		res   *statedb.Predicates
		flips []statedb.Flip
		err   error
	)
	w := stall.NewWatch()
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, flips, err = statedb.CheckPredicatesWatched(tr, reg, script, func(_ string, done, total int) { progress(done, total) }, w)
	}()
	// One bound for every call, the script's and the handlers' (this
	// replay's calls are the ones already indexed): the watches' bound.
	bound := m.stuckAfter()
	tick := time.NewTicker(stall.Tick)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return res, flips, err
		case now := <-tick.C:
			st, gaveUp := w.GiveUp(now, bound)
			if !gaveUp {
				continue
			}
			what := "a handler call"
			if st.Own {
				what = fmt.Sprintf("%s of the script (one Starlark step: a built-in call, or freezing or hashing a value)", st.What)
			}
			return nil, nil, fmt.Errorf("given up on %s at step #%d after %v", what, st.Step, st.After)
		}
	}
}

// stuckAfter is how long a watch's evaluation, or the load of the
// script for them, may run before the debugger gives up on it.
func (m *Model) stuckAfter() time.Duration {
	if m.watchBound > 0 {
		return m.watchBound
	}
	return predicates.StuckBound(predicates.DefaultTimeBudget)
}

func (m *Model) script() string {
	if m.cfg.Preds != "" {
		return m.cfg.Preds
	}
	if m.preds != nil {
		return m.preds.Script
	}
	return ""
}

// scriptName is script as the user named it (builtin:raft, not the copy
// of the bundled script it is read from), for messages.
func (m *Model) scriptName() string {
	if s := m.script(); m.cfg.PredsName == "" || s != m.cfg.Preds {
		return s
	}
	return m.cfg.PredsName
}

// watch is one Starlark expression evaluated at the cursor.
type watch struct {
	expr    string
	value   string
	err     bool
	at      int  // the position of the last evaluation
	changed bool // differs from the evaluation one step away
	// delta says element by element how step deltaStep changed the value
	// (reprDiff), when changed.
	delta     []string
	deltaStep int
	// off says why the watch is no longer evaluated ("": it is).
	off string
}

// values evaluates every watch at the session cursor's position; false
// when one did not return within watchBound (one Starlark step that runs
// on: set() over integers alike in their low 32 bits), which froze the
// debugger for good, deaf to q. Such a watch is switched off, and the
// session (its replay, cursor and watcher) is left to the goroutine still
// running it: the next use opens another. Callers stop what they were
// doing with w.
func (m *Model) values(w *predicates.Watcher) ([]string, bool) {
	exprs := make([]string, len(m.watches))
	out := make([]string, len(m.watches))
	for i, wt := range m.watches {
		exprs[i] = wt.expr
		if wt.off != "" {
			out[i] = "error: " + wt.off
		}
	}
	var at atomic.Int64 // the watch being evaluated
	vals := slices.Clone(out)
	if m.within(func() {
		w.Sync()
		for i, expr := range exprs {
			if vals[i] != "" {
				continue // off
			}
			at.Store(int64(i))
			v, err := w.Eval(expr)
			if err != nil {
				v = "error: " + err.Error()
			}
			vals[i] = v
		}
	}) {
		return vals, true
	}
	bound := m.stuckAfter()
	stuck := m.watches[at.Load()]
	stuck.off = fmt.Sprintf("did not return within %v (one Starlark step ran on past the time budget): switched off; add it again to retry", bound)
	m.sess = nil
	m.fail("watch %s did not return within %v: switched off; the cursor's replay starts again", stuck.expr, bound)
	for i, wt := range m.watches {
		if out[i] == "" {
			out[i] = "error: not evaluated: watch " + stuck.expr + " did not return"
		}
		if wt.off != "" {
			out[i] = "error: " + wt.off
		}
	}
	return out, false
}

// isWatchError tells a watch's value that is its evaluation's error.
func isWatchError(v string) bool { return strings.HasPrefix(v, "error: ") }

// sameWatchValue tells whether a watch did not change between two
// values: a watch failing at both (whatever the message, which may name
// the step) did not.
func sameWatchValue(a, b string) bool { return a == b || isWatchError(a) && isWatchError(b) }

func sameWatchValues(a, b []string) bool {
	return slices.EqualFunc(a, b, sameWatchValue)
}

// evalWatches evaluates the watches at the cursor.
func (m *Model) evalWatches() {
	if len(m.watches) == 0 {
		return
	}
	w, err := m.watcher()
	if err == nil {
		err = m.sess.cur.Seek(m.pos)
	}
	if err != nil {
		for _, wt := range m.watches {
			wt.value, wt.err = err.Error(), true
		}
		return
	}
	vals, _ := m.values(w)
	for i, wt := range m.watches {
		near := wt.at == m.pos-1 || wt.at == m.pos+1
		wt.changed = near && !sameWatchValue(wt.value, vals[i])
		wt.delta = nil
		if wt.changed {
			// Said as the change the later of the two steps made.
			before, after, step := wt.value, vals[i], m.pos
			if wt.at > m.pos {
				before, after, step = vals[i], wt.value, wt.at
			}
			wt.delta, wt.deltaStep = reprDiff(before, after), step
		}
		wt.value, wt.at = vals[i], m.pos
		wt.err = isWatchError(vals[i])
	}
}

// AddWatch adds a watch expression.
func (m *Model) AddWatch(expr string) {
	if expr == "" {
		return
	}
	m.watches = append(m.watches, &watch{expr: expr, at: -2})
	m.watchSel = len(m.watches) - 1
	m.evalWatches()
	if m.sess != nil && m.sess.w != nil && m.sess.w.Derived(expr) {
		// Its value, not the object derived("NAME"): said, as predicates
		// read it with NAME().
		name := strings.TrimSpace(expr)
		m.say("watching %s: a derived value, shown as %s() (its value at the cursor)", name, name)
		return
	}
	m.say("watching %s", expr)
}

// RemoveWatch removes the selected watch.
func (m *Model) RemoveWatch() {
	if len(m.watches) == 0 {
		return
	}
	m.watches = slices.Delete(m.watches, m.watchSel, m.watchSel+1)
	m.watchSel = max(0, min(m.watchSel, len(m.watches)-1))
}

// Task is long work a key started, for the view to run. Chunk tasks run
// on the UI goroutine a chunk at a time until Chunk returns true;
// background tasks run Background off the UI goroutine (it must not touch
// the model) and then Done on it.
type Task struct {
	Name       string
	Chunk      func() bool
	Background func(progress func(done, total int))
	// Text is background work whose progress is a sentence (predict,
	// critical): like Background, it must not touch the model.
	Text func(progress func(string))
	// Stuck, if set, is asked every second while Background runs what
	// keeps it from going on ("": nothing), for the status line: a
	// handler that does not return when replayed stops a background
	// index without a word otherwise.
	Stuck func() string
	Done  func()
	// Quiet tasks (the warm-up) neither block keys nor show in the status.
	Quiet    bool
	canceled bool
}

// TakeTasks hands the tasks started since the last call to the view.
func (m *Model) TakeTasks() []*Task {
	t := m.tasks
	m.tasks = nil
	return t
}

// Progress records a background task's progress for the status line.
func (m *Model) Progress(name string, done, total int) {
	if name == indexTaskName {
		m.indexProgress(done, total)
		return
	}
	m.checking = fmt.Sprintf("%s: step %d of %d (%.0f%%)", name, done, total, 100*float64(done)/float64(max(total, 1)))
}

// RunTasks runs tasks to completion on the calling goroutine (tests and
// non-interactive use).
func (m *Model) RunTasks() {
	for {
		ts := m.TakeTasks()
		if len(ts) == 0 {
			return
		}
		// The warm-up waits for the task that owns the cursor.
		slices.SortStableFunc(ts, func(a, b *Task) int { return boolInt(a.Quiet) - boolInt(b.Quiet) })
		for _, t := range ts {
			if t.Chunk != nil {
				for !t.Chunk() {
				}
			}
			if t.Background != nil {
				t.Background(func(int, int) {})
			}
			if t.Text != nil {
				t.Text(func(string) {})
			}
			if t.Done != nil {
				t.Done()
			}
			m.Finished(t)
		}
	}
}

// runChunk is how many steps a run-until task evaluates per chunk, at
// most; a chunk also ends after chunkTime, so that Esc and q, read
// between chunks, answer within about one step's evaluation even when
// a watch is slow (256 steps of a watch that takes 0.2 s each held the
// keys for 50 s).
const (
	runChunk  = 256
	chunkTime = 50 * time.Millisecond
	// maxBackWindow bounds a backward run's window (see backWindow).
	maxBackWindow = 1 << 14
)

// backWindow is the size of a backward run's next window after the seek
// to this one's start took seek and stepping through its window steps
// took steps: sized so that stepping takes about as long as the seek
// did, or chunkTime when the seek was quicker (from one window to the
// next it shrinks to no less than half, and grows to maxBackWindow at
// most). A node whose tasks
// are always live cannot be copied into a checkpoint and is rebuilt
// from its last restart at every seek, so a seek can cost a second where
// a step costs milliseconds; sizing on the whole chunk's time, seek
// included, kept the window at one step, and a run back over N steps
// cost N rebuilds. With cheap seeks a window still takes about chunkTime,
// so that Esc is read often even when a watch is slow.
func backWindow(window int, seek, steps time.Duration) int {
	if steps <= 0 {
		return min(maxBackWindow, window*2)
	}
	budget := max(chunkTime, seek)
	next := int(float64(window) * float64(budget) / float64(steps))
	return max(1, window/2, min(maxBackWindow, next))
}

// RunUntilChange moves forward (+1) or back (-1) to the nearest step that
// changes a predicate's value (from the stored results) or a watch's
// value: a conditional breakpoint.
func (m *Model) RunUntilChange(dir int) {
	if m.resultsPending() {
		return
	}
	flip, flips, hasFlip, err := m.db.NextFlip(m.pos, dir > 0)
	if err != nil {
		m.fail("%v", err)
		return
	}
	// flipSay goes to flip and tells the predicates that changed there,
	// and the watches that changed with them (also, when a watch changed
	// too: the caller has moved the cursor there already).
	flipSay := func(also string) {
		if also == "" {
			m.seekOrSay(flip)
		}
		var parts []string
		for _, f := range flips {
			state := "holds again"
			if !f.Holds {
				state = "became false"
			}
			parts = append(parts, f.Predicate+" "+state)
		}
		if also != "" {
			m.say("#%d: %s; it changes %s", flip, joinComma(parts), also)
			return
		}
		m.say("#%d: %s", flip, joinComma(parts))
	}
	if len(m.watches) == 0 {
		if hasFlip {
			flipSay("")
		} else {
			m.say("no predicate changes %s #%d (add watches with w to stop on them too)", map[bool]string{true: "after", false: "before"}[dir > 0], m.pos)
		}
		return
	}
	w, err := m.watcher()
	if err != nil {
		m.fail("%v", err)
		return
	}
	cur := m.sess.cur
	limit := m.db.Len() - 1
	if dir < 0 {
		limit = 0
	}
	if hasFlip {
		limit = flip
	}
	found := func(step int, before, after []string) {
		// The cursor first: moving it evaluates the watches again, which
		// would wipe the change recorded below.
		m.seekOrSay(step)
		// Element by element, the change first: a whole value does not fit
		// a status line. The Watches panel shows the same.
		var changed []string
		for i, wt := range m.watches {
			wt.changed, wt.delta = !sameWatchValue(before[i], after[i]), nil
			switch {
			case !wt.changed:
			case isWatchError(after[i]):
				// Its error is in the Watches panel; a status line of
				// it hid the change that mattered.
				changed = append(changed, fmt.Sprintf("%s fails from here", wt.expr))
			case isWatchError(before[i]):
				changed = append(changed, fmt.Sprintf("%s = %s", wt.expr, after[i]))
			default:
				wt.delta, wt.deltaStep = reprDiff(before[i], after[i]), step
				changed = append(changed, fmt.Sprintf("%s in %s", strings.Join(wt.delta, ", "), wt.expr))
			}
		}
		if hasFlip && step == flip {
			// A predicate changed here too: both are told.
			flipSay(strings.Join(changed, "; "))
			return
		}
		m.say("#%d changes %s", step, strings.Join(changed, "; "))
	}
	task := &Task{Name: "running"}
	if dir > 0 {
		if m.pos >= limit && !hasFlip {
			m.say("at the last step")
			return
		}
		if err := cur.Seek(m.pos); err != nil {
			m.fail("%v", err)
			return
		}
		prev, ok := m.values(w)
		if !ok {
			return
		}
		task.Chunk = func() bool {
			began := time.Now()
			for i := 0; i < runChunk && (i == 0 || time.Since(began) < chunkTime); i++ {
				if task.canceled {
					m.seekOrSay(cur.Pos())
					m.say("stopped at #%d", cur.Pos())
					return true
				}
				if cur.Pos() >= limit {
					if hasFlip {
						flipSay("")
					} else {
						m.seekOrSay(limit)
						m.say("no predicate or watch changes after #%d", m.pos)
					}
					return true
				}
				if err := cur.Step(); err != nil {
					m.fail("%v", err)
					return true
				}
				vals, ok := m.values(w)
				if !ok {
					return true // the session is gone, said so
				}
				if !sameWatchValues(vals, prev) {
					found(cur.Pos(), prev, vals)
					return true
				}
			}
			m.busy = fmt.Sprintf("running forward: #%d (Esc stops)", cur.Pos())
			return false
		}
	} else {
		if m.pos <= 0 {
			m.say("at the start")
			return
		}
		// Backward, a chunk reads a window of steps forward to find the
		// last change in it. The first window is one step; backWindow
		// sizes the next from how long stepping through this one took.
		from, hi, window := m.pos, m.pos-1, 1
		task.Chunk = func() bool {
			if task.canceled {
				m.say("stopped; still at #%d", m.pos)
				return true
			}
			lo := max(limit, hi-window+1)
			sought := time.Now()
			if err := cur.Seek(lo - 1); err != nil {
				m.fail("%v", err)
				return true
			}
			began := time.Now()
			defer func() { window = backWindow(window, began.Sub(sought), time.Since(began)) }()
			prev, ok := m.values(w)
			if !ok {
				return true
			}
			last, lastBefore, lastAfter := -1, []string(nil), []string(nil)
			for t := lo; t <= hi; t++ {
				if err := cur.Step(); err != nil && !errors.Is(err, io.EOF) {
					m.fail("%v", err)
					return true
				}
				vals, ok := m.values(w)
				if !ok {
					return true
				}
				if !sameWatchValues(vals, prev) {
					last, lastBefore, lastAfter = t, prev, vals
				}
				prev = vals
			}
			switch {
			case last >= 0:
				found(last, lastBefore, lastAfter)
			case lo == limit && hasFlip:
				flipSay("")
			case lo == limit:
				m.seekOrSay(0)
				m.say("no predicate or watch changes before #%d", from)
			default:
				hi = lo - 1
				m.busy = fmt.Sprintf("running backward: #%d (Esc stops)", lo)
				return false
			}
			return true
		}
	}
	m.start(task)
	m.busy = "running (Esc stops)"
}

// start queues a chunk task that owns the cursor and blocks other keys
// until it finishes.
func (m *Model) start(t *Task) {
	m.tasks = append(m.tasks, t)
	m.running = t
}

// Finished tells the model a task ended.
func (m *Model) Finished(t *Task) {
	switch t {
	case m.running:
		m.running, m.busy = nil, ""
	case m.recheck:
		m.recheck, m.checking = nil, ""
	case m.search:
		m.search, m.searchNote, m.stopSearch = nil, "", nil
	case m.indexTask:
		m.indexTask, m.indexing = nil, ""
	}
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// Reload re-reads the predicates file and re-checks the same run (in the
// background), then shows the new results and stores them in the database.
func (m *Model) Reload() {
	script := m.script()
	if script == "" {
		m.fail("no predicates file: start with --preds FILE")
		return
	}
	if m.recheck != nil {
		m.say("already %s", m.checking)
		return
	}
	if m.indexTask != nil {
		m.fail("re-check once indexing is done (%s)", m.indexing)
		return
	}
	tr := m.cfg.Trace
	traces, reg := m.cfg.Traces, m.cfg.Registry
	var (
		res   *statedb.Predicates
		flips []statedb.Flip
		err   error
	)
	before := m.violationCount()
	m.checking = "re-checking " + m.scriptName()
	m.recheck = &Task{
		Name: "re-checking",
		Background: func(progress func(int, int)) {
			if tr == nil {
				if tr, err = replay.Load(traces...); err != nil {
					return
				}
			}
			res, flips, err = m.recheckWatched(tr, reg, script, progress)
		},
		Done: func() {
			if m.cfg.Trace == nil {
				m.cfg.Trace = tr
			}
			if err == nil && len(res.Errors) > 0 && m.preds != nil && len(m.preds.Errors) == 0 {
				// A predicate that could not be evaluated leaves a check
				// that is not whole: it would replace whole results with
				// ones that read as clean. It fails like a script that did
				// not load, and the previous results stay. Over results
				// that were not whole either, the new ones are no worse
				// and show the script as it is now.
				err = errors.New(predicateErrors(res))
			}
			if err != nil {
				// Said now, and kept in the Violations panel (the status
				// line speaks of the cursor and clears when it moves).
				m.recheckErr = err.Error()
				m.fail("re-check failed; the previous results stay: %v", err)
				return
			}
			m.recheckErr = ""
			storeErr := m.db.SetPredicates(res, flips)
			m.setPredicates(res)
			if m.sess != nil && m.running == nil {
				m.sess.w = nil // the watches see the new script's tables too
				m.evalWatches()
			}
			m.say("re-checked %s: %s%s", m.scriptName(), m.countsBefore(before), firstError(res))
			if storeErr != nil {
				m.fail("re-checked %s: %s; %v", m.scriptName(), m.countsText(), storeErr)
			}
		},
	}
	m.tasks = append(m.tasks, m.recheck)
}

// firstError is the first predicate error, for a message whose counts
// (countsText) already say how many there are.
func firstError(p *statedb.Predicates) string {
	if len(p.Errors) == 0 {
		return ""
	}
	return "; the first: " + p.Errors[0]
}

// predicateErrors counts p's predicate errors and says the first.
func predicateErrors(p *statedb.Predicates) string {
	return fmt.Sprintf("%d predicate error(s): %s", len(p.Errors), p.Errors[0])
}

// Cancel asks the running task to stop (chunk tasks stop at their next
// chunk; a background re-check runs to its end but keeps its result).
func (m *Model) Cancel() {
	if m.running != nil {
		m.running.canceled = true
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
