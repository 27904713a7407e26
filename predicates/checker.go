package predicates

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"

	"github.com/replaycheck/replaycheck/internal/printable"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/stall"
)

// Options tune a check.
type Options struct {
	// MaxSteps bounds the Starlark execution steps of one evaluation
	// (and of the script's load); 0: DefaultMaxSteps.
	MaxSteps uint64
	// MemoryBudget bounds, in bytes, how much the load and each
	// evaluation may grow the heap; 0: DefaultMemoryBudget.
	MemoryBudget int64
	// TimeBudget bounds how long the load and each evaluation may run;
	// 0: DefaultTimeBudget.
	TimeBudget time.Duration
	// From and To restrict evaluation to steps From..To (To < 0: the end;
	// the zero value checks step 0 alone, so a whole run needs To: -1).
	// Replay still runs from the start; tables, derived values and
	// ordered indexes are kept up to date throughout, so a derived value
	// that fails before From is an evaluation error as in a whole check.
	From, To int
	// CutShort says the trace ends before the run did (a damaged file
	// lost its tail): reaching its last step is an early stop, so
	// liveness intervals still open there are left unjudged and the
	// report is not complete.
	CutShort bool
	// Slow, if set, hears of each derived value and predicate once: the
	// first time one evaluation of a derived value (with freezing and
	// comparing its value) takes SlowAfter (0: SlowDerivedAfter) or
	// more, or once the evaluations of one of them have taken about
	// SlowShare of a check that has run ShareAfter (0: SlowShareAfter)
	// or more. A value that grows every step, or a predicate that scans
	// every row for every row, makes a check crawl within every budget,
	// with nothing to say which.
	Slow       func(SlowEvaluation)
	SlowAfter  time.Duration
	ShareAfter time.Duration
	// Watch, if set, watches the load and each evaluation through a slot
	// of its own, bounded at StuckBound(TimeBudget), for its owner
	// (stall.Watch.Run) to give up on a check that one built-in call
	// keeps running past every budget. Given up on, the checker fails
	// every evaluation after. Nil: the replay's watch (Replayer.Watch),
	// whose owner watches its handler calls.
	Watch *stall.Watch
}

// SlowEvaluation is a derived value or predicate that makes the check
// slow: one evaluation of a derived value took Took at Step, or (Took 0)
// its evaluations took about Spent of the Elapsed time the check had run
// by Step, over Evals evaluations (Spent is estimated from the
// evaluations at one step in costSample, drawn by the step's number).
// Size is how many elements a derived value holds at the top (a list,
// tuple or dict), or -1.
type SlowEvaluation struct {
	Name string
	Kind string // "derived", "safety" or "liveness"
	Step int
	Took time.Duration
	Size int

	Spent, Elapsed time.Duration
	Evals          int
}

// SlowDerived is the name SlowEvaluation had when only derived values
// were told of.
//
// Deprecated: use SlowEvaluation.
type SlowDerived = SlowEvaluation

// SlowShare and SlowShareAfter: Options.Slow hears of a derived value or
// predicate whose evaluations took SlowShare of a check that has run
// SlowShareAfter or more.
const (
	SlowShare      = 0.4
	SlowShareAfter = 10 * time.Second
)

// costSample: evaluations are timed at one step in costSample only, so
// that timing them costs next to nothing; minSamples: no share is judged
// on fewer sampled steps.
const (
	costSample = 8
	minSamples = 16
)

// sampledStep draws, from the step's number alone, whether its
// evaluations are timed: one step in costSample, but not every
// costSample-th, which a predicate costly at every other step (or at
// every eighth) would alias with, never timed or always.
func sampledStep(step int) bool {
	z := uint64(step) + 0x9e3779b97f4a7c15 // splitmix64's finaliser
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return (z^z>>31)%costSample == 0
}

// SlowDerivedAfter is how long one evaluation of a derived value may take
// before Options.Slow hears of it.
const SlowDerivedAfter = 250 * time.Millisecond

// DefaultMaxSteps is the default Starlark step budget per evaluation.
const DefaultMaxSteps = 10_000_000

// Checker holds a loaded predicates script and evaluates it over a replay.
type Checker struct {
	path     string
	r        *replay.Replayer
	opts     Options
	thread   *starlark.Thread
	budget   *budget
	globals  starlark.StringDict
	loading  bool
	printed  int       // bytes print() wrote (maxPrintBytes)
	printTo  io.Writer // where print() writes: os.Stderr unless a test says
	watching bool      // evaluating a watch: table() serves watchTable
	// watchGen counts a watcher's Syncs (0: not a watcher): a derived
	// value is computed for a watch once per Sync (watchDerived).
	watchGen int

	tables []*Table
	// types are the state types, kept while a table's type is still to
	// be seen (an interface field may hold it): the scan adds those it
	// meets inside interfaces (noteHeld).
	types *stateTypes
	// unseen counts the tables types is kept for that have had no row:
	// at 0 the scan stops noting types (a lookup per interface value).
	unseen  int
	derived []*Derived
	ordered []*Ordered
	preds   []*Predicate
	// histories accumulate operations (history()); models holds the
	// bundled models (models.register, models.kv), built once.
	histories []*History
	models    starlark.Value
	names     map[string]syntax.Position

	index     index
	indexAdds int // readers added since the last sweep of the index
	indexLive int // readers live at the last sweep
	cur       *frame
	// computing is the derived value being computed (or settled), which
	// may read only those declared before it.
	computing *Derived
	nextFrame int
	nextRow   int
	dropped   int // rows taken out of their tables so far (Table.drop)
	quants    map[quantKey]*quant
	scan      *scanner
	plain     plainTypes // column types hashed as raw bytes

	step    int
	ev      *node.Event
	codec   *node.Codec // decodes event.msg; nil when the system is unknown
	system  string
	msgStep int            // the step msgVal was decoded at
	msgVal  starlark.Value // event.msg, decoded once per step
	start   int64
	now     int64 // time frontier: the latest event time seen, since start
	nodeNow map[node.ID]int64
	msgs    msgWindow
	unknown map[node.ID]bool
	flips   map[int][]node.ID // steps at which a node's state becomes unknown or known
	// down is down_nodes()'s value at step downAt, carried to the next
	// step observed when that step is no crash or restart. Watches and
	// matches set the step without observing it: the value is then of
	// another step, and made again.
	down     *starlark.Dict
	downAt   int
	nodeIdx  map[node.ID]int
	evaluate bool // first evaluated step: everything is dirty
	// began is when the first step was observed, and sampling whether
	// evaluations are timed at this step (Options.Slow; costSample).
	began    time.Time
	sampling bool
	samples  int // steps sampled so far

	report Report
	last   StepStats
	// track follows history-like state while a segment of a parallel
	// check is not yet known to continue the sequential run (segment.go).
	track    *seamTrack
	usesMsgs bool // some loaded source names msgs
	// auxMemo holds aux and alarm results by function and argument:
	// predicates that share a stability measure (chord's stability(),
	// replicastore's) compute it once per step, and a result is kept
	// across steps until something it read changes (an open interval
	// asks at every step; most steps change nothing its measures read).
	auxMemo map[auxKey]*auxResult
}

// auxResult is one memoised aux or alarm result and the frame that
// tracks what it read.
type auxResult struct {
	f    *frame
	v    starlark.Value
	arg  starlark.Value // an alarm's argument (nil for an aux)
	used int            // the last step it answered at
	// warm: computed while a segment's state was not yet known to be
	// the sequential run's; it is not kept past the step.
	warm bool
}

type auxKey struct {
	fn  starlark.Callable
	arg starlark.Value
}

// StepStats says what the last step re-evaluated: the measure of
// incremental evaluation.
type StepStats struct {
	Derived    []string // derived values recomputed
	Predicates []string // predicates re-evaluated
	Bodies     int      // quantifier bodies re-evaluated
	Keys       int      // ordered indexes' row keys re-evaluated
	// Settled lists the predicates and derived values found unchanged
	// without running: only bodies of their quantifiers ran, and the
	// quantifiers answered as before.
	Settled []string
	Aux     int // aux and alarm functions run (not answered from memo)
	Rows    int // rows of tables and ordered indexes iterated whole (for r in T)
	// ModelSteps: calls of a model's step by linearizability checks
	// (linearizable, linearizability), their searches included.
	ModelSteps int
}

// Found lists the violations recorded so far, in the order recorded:
// safety violations, and liveness intervals, open or closed (Alarm says
// whether one was raised yet). Read it between calls of Observe, on
// their goroutine; neither keep nor change its elements.
func (c *Checker) Found() []*Violation { return c.report.Violations }

// LastStep reports what the last observed step re-evaluated.
func (c *Checker) LastStep() StepStats { return c.last }

// Predicate is one declared safety or liveness property.
type Predicate struct {
	Name  string
	Kind  string // "safety" or "liveness"
	Pos   syntax.Position
	fn    starlark.Callable
	aux   starlark.Callable
	alarm starlark.Callable
	desc  string // "predicate NAME", for a watch (Options.Watch)

	frame    *frame
	holding  bool
	open     *Violation
	disabled bool
	// auxFailed, alarmFailed: the stability measure or alarm function
	// failed once (reported then) and is not run again.
	auxFailed, alarmFailed bool
	// breaks are a safety predicate's open breaks, by witness: reported
	// once, until the witness is seen satisfying the predicate.
	breaks map[breakKey]bool
	Evals  int // how many times the predicate ran
	// spent is its evaluations' time at sampled steps (aux and alarm
	// included); slowSaid: Options.Slow heard of it.
	spent    time.Duration
	slowSaid bool
}

// Derived is a value recomputed when what it read changed.
type Derived struct {
	c     *Checker
	name  string
	desc  string // "derived value NAME", for a watch
	pos   syntax.Position
	fn    starlark.Callable
	keep  int
	id    int
	frame *frame
	value starlark.Value
	hist  []starlark.Value
	since int64
	Evals int
	err   bool
	// slowSaid: Options.Slow heard of it.
	slowSaid bool
	spent    time.Duration // its evaluations' time at sampled steps
	// In a watcher: the Sync the value was computed for, and whether it
	// is being computed (watchDerived).
	watchGen  int
	watchBusy bool
}

// Load reads and runs the script at path (declarations happen at load) and
// binds it to a replay that has not started.
//
// The script must be a regular file of at most MaxScriptBytes inside its
// folder once symlinks are resolved (as must every module it loads).
func Load(path string, r *replay.Replayer, opts Options) (*Checker, error) {
	src, err := readScript(filepath.Dir(path), path)
	if err != nil {
		return nil, &ScriptError{Err: fmt.Errorf("read predicates: %w", err)}
	}
	return LoadSource(path, src, r, opts)
}

// LoadSource is Load with the script's text given.
func LoadSource(path string, src []byte, r *replay.Replayer, opts Options) (*Checker, error) {
	if opts.MaxSteps == 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	if opts.MemoryBudget <= 0 {
		opts.MemoryBudget = DefaultMemoryBudget
	}
	if opts.TimeBudget <= 0 {
		opts.TimeBudget = DefaultTimeBudget
	}
	c := &Checker{
		path: path, r: r, opts: opts, names: map[string]syntax.Position{},
		index: index{}, quants: map[quantKey]*quant{}, nodeNow: map[node.ID]int64{},
		unknown: map[node.ID]bool{}, start: r.Trace().Header.Start, step: -1, evaluate: true,
		codec: r.System().Codec, system: r.Trace().Header.System, msgStep: -1,
		plain: plainTypes{},
	}
	c.scan = newScanner(c)
	c.report.Predicates = map[string]*PredicateStats{}
	modules := map[string]*loadEntry{}
	c.thread = &starlark.Thread{Name: "predicates", Load: c.loader(filepath.Dir(path), modules), Print: c.print}
	c.budget = newBudget(c.thread, opts)
	if opts.Watch == nil {
		opts.Watch = r.Watch()
	}
	c.budget.slot = opts.Watch.BoundedSlot(StuckBound(opts.TimeBudget))
	loading := "the load of " + path
	c.budget.begin("load", -1, &loading)
	c.loading = true
	globals, err := c.exec(path, src)
	c.loading = false
	c.budget.end()
	if err == nil {
		err = c.budget.err
	}
	if err != nil {
		return nil, &ScriptError{Err: scriptError(err)}
	}
	c.globals = globals
	// Tables first: a mistyped column, not the script's incompleteness,
	// is what its author is working on.
	if err := c.checkTableTypes(); err != nil {
		return nil, &ScriptError{Err: err}
	}
	if len(c.preds) == 0 {
		return nil, &ScriptError{Err: fmt.Errorf("%s: declares no predicates (call safety(...) or liveness(...))", path)}
	}
	c.flips, c.nodeIdx = map[int][]node.ID{}, map[node.ID]int{}
	for i, id := range r.Trace().Nodes {
		c.nodeIdx[id] = i
		if r.Instance(id) == nil {
			c.unknown[id] = true // not replayed: nothing is known of it
		}
		for _, u := range r.Trace().Unknown[id] {
			c.flips[u.After+1] = append(c.flips[u.After+1], id)
			if u.Until >= 0 {
				c.flips[u.Until] = append(c.flips[u.Until], id)
			}
		}
	}
	return c, nil
}

// ScriptError is a problem with the script itself (syntax, a declaration,
// an error at load time), with its file:line:col.
type ScriptError struct{ Err error }

func (e *ScriptError) Error() string { return e.Err.Error() }
func (e *ScriptError) Unwrap() error { return e.Err }

var fileOptions = &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}

// scriptError turns a Starlark error into "file:line:col: message".
func scriptError(err error) error {
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		// The innermost frame with a place in the script: errors raised
		// by built-ins point at the call.
		msg := clipMessage(ee.Msg)
		for i := len(ee.CallStack) - 1; i >= 0; i-- {
			if fr := ee.CallStack[i]; fr.Pos.Filename() != "<builtin>" {
				return fmt.Errorf("%s: %s", fr.Pos, msg)
			}
		}
		return errors.New(msg)
	}
	var se syntax.Error
	if errors.As(err, &se) {
		return fmt.Errorf("%s: %s", se.Pos, se.Msg)
	}
	return err
}

// maxMessageBytes bounds an error message a script makes (fail(),
// a value in an error): it is one line of a report, and fail("y" * 10**8)
// put 100 MB on stderr.
const maxMessageBytes = 4096

// clipMessage cuts a message to maxMessageBytes, saying how much was cut.
func clipMessage(msg string) string {
	if len(msg) <= maxMessageBytes {
		return msg
	}
	head := printable.Cut(msg, maxMessageBytes)
	return fmt.Sprintf("%s... (%d more bytes)", head, len(msg)-len(head))
}

// maxPrintBytes bounds what a script's print() writes in one check: a
// print at every step of a long trace wrote gigabytes.
const maxPrintBytes = 1 << 20

// print is print() for scripts: a line on stderr, as starlark-go's own,
// until maxPrintBytes are written; then one line says the rest is dropped.
func (c *Checker) print(_ *starlark.Thread, msg string) {
	var w io.Writer = os.Stderr
	if c.printTo != nil {
		w = c.printTo
	}
	dropped := func() {
		fmt.Fprintf(w, "print: the script printed %s; what it prints from step #%d on is dropped\n", humanize.IBytes(maxPrintBytes), c.step)
		c.printed = maxPrintBytes + 1
	}
	left := maxPrintBytes - c.printed
	switch {
	case left < 0: // said so
	case len(msg)+1 > left:
		dropped() // whole lines only: this one is the first dropped
	default:
		c.printed += len(msg) + 1
		fmt.Fprintln(w, msg)
	}
}

type loadEntry struct {
	globals starlark.StringDict
	err     error
}

// loader allows load() of files beside the script only.
func (c *Checker) loader(dir string, modules map[string]*loadEntry) func(*starlark.Thread, string) (starlark.StringDict, error) {
	return func(t *starlark.Thread, module string) (starlark.StringDict, error) {
		if module != filepath.Base(module) || strings.HasPrefix(module, ".") || !strings.HasSuffix(module, ".star") {
			return nil, fmt.Errorf("load(%q): only .star files beside the script can be loaded", module)
		}
		if e, ok := modules[module]; ok {
			if e == nil {
				return nil, fmt.Errorf("load(%q): cycle in load graph", module)
			}
			return e.globals, e.err
		}
		modules[module] = nil
		p := filepath.Join(dir, module)
		src, err := readScript(dir, p)
		if err != nil {
			return nil, fmt.Errorf("load(%q): %w", module, err)
		}
		g, err := c.exec(p, src)
		modules[module] = &loadEntry{g, err}
		return g, err
	}
}

// Tables, Derived and Predicates list the declarations.
func (c *Checker) Tables() []*Table          { return c.tables }
func (c *Checker) Predicates() []*Predicate  { return c.preds }
func (c *Checker) DerivedValues() []*Derived { return c.derived }

// SafetyReadingNow names the safety predicates that compared with the
// time frontier (now(), not now(node)) in an evaluation so far, in
// declaration order. On a trace in causal order a real-time overlap
// between nodes can fall between the cuts checked, which such a
// predicate then misses (docs/predicates.md).
func (c *Checker) SafetyReadingNow() []string {
	var out []string
	for _, p := range c.preds {
		if p.Kind == "safety" && p.frame.readNow {
			out = append(out, p.Name)
		}
	}
	return out
}

// noteNowRead marks the predicate being evaluated, if any, as reading
// the time frontier.
func (c *Checker) noteNowRead() {
	f := c.cur
	for f != nil && f.parent != nil {
		f = f.parent
	}
	if f != nil && f.kind == framePredicate {
		f.readNow = true
	}
}

// Observe evaluates the script after the replayer executed a step.
func (c *Checker) Observe() error {
	step := c.r.Pos()
	ev := c.r.Recorded()
	c.dropAux(c.step)
	if c.opts.Slow != nil {
		if c.began.IsZero() {
			c.began = time.Now()
		}
		if c.sampling = sampledStep(step); c.sampling {
			c.samples++
		}
	}
	if ev.Kind == node.KindCrash || ev.Kind == node.KindRestart || step != c.step+1 {
		c.down = nil
		c.changed(downDep)
	} else if c.down != nil && c.downAt == c.step {
		c.downAt = step // nobody went down or came back
	}
	c.step, c.ev = step, ev
	c.last = StepStats{}
	t := ev.Time - c.start
	if t > c.now {
		c.now = t
		c.changed(timeDep)
	}
	c.nodeNow[ev.Node] = max(c.nodeNow[ev.Node], t)
	c.changed(evDep)
	if ev.Kind == node.KindRecv && c.usesMsgs { // nothing else can read the window
		c.msgs.add(t, ev.MsgType)
		c.changed(msgsDep)
	}
	if inst := c.r.Instance(ev.Node); inst != nil && c.r.Replayed() != nil {
		c.changed(dep{depNode, c.nodeIndex(ev.Node), 0})
		c.scanNode(ev.Node, inst.Handler())
	}
	// Nodes whose state became unknown (or known again) with this step.
	for _, id := range c.flips[step] {
		if c.r.Instance(id) == nil {
			continue // not replayed (--nodes): unknown throughout, whatever its file says
		}
		_, unknown := c.r.Unknown(id)
		if unknown != c.unknown[id] {
			c.unknown[id] = unknown
			c.changed(unknownDep)
			c.down = nil // down_nodes() leaves unknown nodes out
			if unknown {
				c.scanNode(id, nil)
			}
		}
	}
	c.recordHistories()
	if step < c.opts.From {
		// Derived values run before --from as in a whole check, so their
		// histories and change times at FROM are the whole check's.
		c.refreshDerived()
		return nil
	}
	if c.opts.To >= 0 && step > c.opts.To {
		return nil
	}
	c.report.Steps++
	err := c.evaluateStep()
	if c.sampling {
		c.judgeCosts()
	}
	return err
}

// judgeCosts tells Options.Slow of a derived value or predicate whose
// evaluations have taken SlowShare of the check so far, once it has run
// SlowShareAfter.
func (c *Checker) judgeCosts() {
	elapsed := time.Since(c.began)
	if elapsed < cmp.Or(c.opts.ShareAfter, SlowShareAfter) || c.samples < minSamples {
		return
	}
	heavy := func(spent time.Duration) (time.Duration, bool) {
		est := spent * costSample
		return min(est, elapsed), float64(est) >= SlowShare*float64(elapsed)
	}
	for _, d := range c.derived {
		if est, ok := heavy(d.spent); ok && !d.slowSaid && !d.err {
			d.slowSaid = true
			c.opts.Slow(SlowEvaluation{Name: d.name, Kind: "derived", Step: c.step, Size: topSize(d.value),
				Spent: est, Elapsed: elapsed, Evals: d.Evals})
		}
	}
	for _, p := range c.preds {
		if est, ok := heavy(p.spent); ok && !p.slowSaid {
			p.slowSaid = true
			c.opts.Slow(SlowEvaluation{Name: p.Name, Kind: p.Kind, Step: c.step, Size: -1,
				Spent: est, Elapsed: elapsed, Evals: p.Evals})
		}
	}
}

func (c *Checker) nodeIndex(id node.ID) int { return c.nodeIdx[id] }

// tableChanged: node id gained or lost rows of t.
func (c *Checker) tableChanged(t *Table, id node.ID) {
	t.changed = c.now
	c.trackTable(t)
	c.changed(dep{depTable, t.id, 0})
	c.changed(dep{depTableAny, t.id, 0})
	c.changed(dep{depNodeRows, t.id, c.nodeIndex(id)})
}

// rowChanged: the row's columns numbered cols changed.
func (c *Checker) rowChanged(rs *rowState, cols []int) {
	rs.table.changed = c.now
	c.trackTable(rs.table)
	c.changed(dep{depRow, rs.id, 0})
	c.changed(dep{depTableAny, rs.table.id, 0})
	for _, n := range cols {
		c.changed(dep{depCol, rs.id, n})
		// Appending to a chained list leaves its elements as they were.
		if !slices.Contains(rs.table.grown, n) {
			c.changed(dep{depElems, rs.id, n})
		}
	}
}

func (c *Checker) evaluateStep() error {
	c.last = StepStats{}
	c.refreshDerived()
	for _, p := range c.preds {
		if p.disabled {
			continue
		}
		var t0 time.Time
		if c.sampling {
			t0 = time.Now()
		}
		if err := c.stepPredicate(p); err != nil {
			return err
		}
		if c.sampling {
			p.spent += time.Since(t0)
		}
	}
	return nil
}

// stepPredicate brings p up to the step: settled, evaluated again, or its
// open interval measured.
func (c *Checker) stepPredicate(p *Predicate) error {
	// A safety predicate settles only while it holds with no open
	// breaks: otherwise its witnesses may change with the same result.
	settles := p.Kind == "liveness" || p.holding && len(p.breaks) == 0
	if !p.frame.dirty && p.frame.stale && settles && c.settleTop(p.Name, &p.desc, p.frame) {
		p.Evals++ // checked, if not run: Evals counts the steps that had to look at it
	}
	if p.frame.dirty || p.frame.stale {
		return c.evalPredicate(p)
	}
	if p.open != nil {
		c.updateOpen(p)
	}
	return nil
}

// refreshDerived brings ordered indexes and derived values up to the
// step: what predicates read, and what keeps histories and change times.
func (c *Checker) refreshDerived() {
	if c.evaluate {
		for _, d := range c.derived {
			d.frame.dirty = true
		}
		for _, p := range c.preds {
			p.frame.dirty = true
		}
		c.evaluate = false
	}
	c.refreshOrdered()
	defer func() { c.computing = nil }()
	for _, d := range c.derived {
		if d.err || !d.frame.dirty && !d.frame.stale {
			continue
		}
		c.computing = d
		// One clock for both notes (Options.Slow): every evaluation
		// until one was slow, and the sampled steps' share.
		timed := c.opts.Slow != nil && (c.sampling || !d.slowSaid)
		var t0 time.Time
		if timed {
			t0 = time.Now()
		}
		evaluated := false
		if !d.frame.dirty && c.settleTop(d.name, &d.desc, d.frame) {
			d.Evals++
		} else {
			c.evalDerived(d)
			evaluated = true
		}
		if timed {
			took := time.Since(t0)
			if c.sampling {
				d.spent += took
			}
			if evaluated {
				c.slowDerived(d, took)
			}
		}
	}
}

// settleTop settles a stale predicate or derived value (see settle)
// within an evaluation's budget; a failure leaves it to run again, where
// the failure is met and reported as usual.
func (c *Checker) settleTop(name string, desc *string, f *frame) bool {
	saved := c.cur
	c.cur = f
	c.budget.begin("evaluation", c.step, desc)
	ok := c.settle(c.thread, f)
	ok = c.budget.end() && ok
	c.cur = saved
	if ok = ok && c.budget.err == nil; ok {
		c.last.Settled = append(c.last.Settled, name)
	}
	return ok
}

// call runs a Starlark callable in a frame with the per-evaluation step
// budget; desc says what it evaluates (kept: it must not change).
func (c *Checker) call(f *frame, fn starlark.Callable, args starlark.Tuple, desc *string) (starlark.Value, error) {
	saved := c.cur
	c.cur = f
	c.budget.begin("evaluation", c.step, desc)
	v, err := starlark.Call(c.thread, fn, args, nil)
	c.budget.end()
	c.cur = saved
	if err == nil && c.budget.err != nil {
		err = c.budget.err // a budgeted iterator was cut short
	}
	return v, err
}

func (c *Checker) evalDerived(d *Derived) {
	c.forget(d.frame)
	d.frame.witness = nil
	v, err := c.call(d.frame, d.fn, nil, &d.desc)
	d.frame.dirty, d.frame.stale = false, false
	d.Evals++
	c.last.Derived = append(c.last.Derived, d.name)
	if err != nil {
		c.derivedFailed(d, err)
		return
	}
	if d.value != nil && sameObject(v, d.value) {
		// Its last value itself, as an accumulator returns when nothing
		// is new: unchanged, with nothing to freeze or compare (that
		// cost as much as the value is long, at every step).
		return
	}
	// Freezing copies a row's columns into the value: those are reads.
	// The rest is frozen where it is: the evaluation that made it is
	// over and a script's globals are frozen, so nothing changes it.
	saved := c.cur
	c.cur = d.frame
	v, weight, err := freezeWeighed(v)
	c.cur = saved
	if err == nil && d.keep > 1 && weight > maxKeptHistory/d.keep {
		// Each version is bounded so that keep of them are: a bound on
		// their sum would read the whole history, which a --jobs
		// segment's warm-up has only part of.
		err = fmt.Errorf("with keep = %d, each value kept may weigh at most %d, and this one weighs %d (each element counts one for every place it appears, a string once more per 64 bytes): keep fewer, or smaller values", d.keep, maxKeptHistory/d.keep, weight)
	}
	if err != nil {
		c.derivedFailed(d, fmt.Errorf("%s: derived(%q): %w", d.pos, d.name, err))
		return
	}
	if d.value != nil {
		if eq, err := starlark.Equal(v, d.value); err == nil && eq {
			return
		}
	}
	d.value = v
	d.since = c.now
	c.trackDerived(d)
	d.hist = append(d.hist, v)
	if len(d.hist) > d.keep {
		d.hist = d.hist[len(d.hist)-d.keep:]
	}
	c.changed(dep{depDerived, d.id, 0})
}

// slowDerived tells Options.Slow of d if its evaluation, which took
// took, was slow.
func (c *Checker) slowDerived(d *Derived, took time.Duration) {
	if d.slowSaid || took < cmp.Or(c.opts.SlowAfter, SlowDerivedAfter) || d.err {
		return
	}
	d.slowSaid = true
	c.opts.Slow(SlowEvaluation{Name: d.name, Kind: "derived", Step: c.step, Took: took, Size: topSize(d.value)})
}

// topSize is how many elements a list, tuple or dict holds at the top,
// or -1 for other values.
func topSize(v starlark.Value) int {
	switch v := v.(type) {
	case *starlark.List:
		return v.Len()
	case starlark.Tuple:
		return len(v)
	case *starlark.Dict:
		return v.Len()
	}
	return -1
}

// derivedFailed reports d's failure. It has no value from now on, and
// what read its last one reads it again, and fails: left alone, a reader
// would keep a result of a value that no longer holds (a liveness
// interval open until the end, then raised).
func (c *Checker) derivedFailed(d *Derived, err error) {
	d.err = true
	c.fail(d.name, "derived", err)
	c.changed(dep{depDerived, d.id, 0})
}

func (c *Checker) fail(name, what string, err error) {
	c.report.Errors = append(c.report.Errors, EvalFailure{
		Name: name, Kind: what, Step: c.step, Message: scriptError(err).Error(), Process: c.budget.process,
	})
}

func (c *Checker) evalPredicate(p *Predicate) error {
	c.forget(p.frame)
	p.frame.witness = nil
	v, err := c.call(p.frame, p.fn, nil, &p.desc)
	p.frame.dirty, p.frame.stale = false, false
	p.Evals++
	c.last.Predicates = append(c.last.Predicates, p.Name)
	if err != nil {
		p.disabled = true
		c.forget(p.frame)
		c.fail(p.Name, p.Kind, err)
		return nil
	}
	b, ok := v.(starlark.Bool)
	if !ok {
		p.disabled = true
		c.fail(p.Name, p.Kind, fmt.Errorf("%s: %s %q returned %s, want True or False", funcPos(p.fn, p.Pos), p.Kind, p.Name, v.Type()))
		return nil
	}
	holds := bool(b)
	switch {
	case p.Kind == "safety":
		c.safetyBreaks(p, holds)
	case p.Kind == "liveness" && !holds && p.open == nil:
		p.open = c.violation(p, p.frame.witness.witnessRow())
		c.updateOpen(p)
	case p.Kind == "liveness" && !holds:
		c.updateOpen(p)
	case p.Kind == "liveness" && holds && p.open != nil:
		p.open.open = false
		p.open.EndStep = c.step
		p.open.EndTime = c.ev.Time - c.start
		p.open.Duration = c.now - p.open.opened
		// Without its alarm function (failed, so disabled), an interval
		// was not screened: nothing judged it.
		p.open.unjudged = p.alarmFailed && !p.open.Alarm
		p.open = nil
	}
	p.holding = holds
	return nil
}

// breakKey identifies one break of a safety predicate: its witness row
// (table, node, path: where the object lives, not its values), or the
// zero key for a violation that names no row.
type breakKey struct {
	table int
	row   rowKey
}

// safetyBreaks reports each distinct break of a safety predicate once.
// The witnesses of a violation are all the rows that decide its last
// quantifier (a forall's failing rows, an exists' or a count's holding
// rows: two leaders counted by `count(...) <= 1` are two witnesses); a
// violation without them is one break of the predicate as a whole. A
// break ends when its witness is present and not failing (or the
// predicate holds while it is present). A witness that disappears (its
// node crashed, the object was removed) and comes back still failing is
// the same break: rows are identified by node and path, so nothing tells
// a restored row from a new one.
func (c *Checker) safetyBreaks(p *Predicate, holds bool) {
	var rows []*rowState
	failing := map[breakKey]bool{}
	if !holds {
		rows = p.frame.witness.witnessRows()
		for _, rs := range rows {
			failing[breakKey{rs.table.id, rs.key}] = true
		}
		if len(rows) == 0 {
			failing[breakKey{}] = true
		}
	}
	for k := range p.breaks {
		if !failing[k] && c.present(k) {
			delete(p.breaks, k)
		}
	}
	if holds {
		return
	}
	if p.breaks == nil {
		p.breaks = map[breakKey]bool{}
	}
	if len(rows) == 0 {
		if !p.breaks[breakKey{}] {
			p.breaks[breakKey{}] = true
			c.violation(p, nil)
		}
		return
	}
	for _, rs := range rows {
		if k := (breakKey{rs.table.id, rs.key}); !p.breaks[k] {
			p.breaks[k] = true
			c.violation(p, rs)
		}
	}
}

// present reports whether a break's witness row exists now.
func (c *Checker) present(k breakKey) bool {
	if k.table == 0 {
		return true
	}
	return c.tables[k.table-1].rows[k.row] != nil
}

// updateOpen re-evaluates an open liveness interval's stability measures
// and alarm at this step.
func (c *Checker) updateOpen(p *Predicate) {
	v := p.open
	if p.aux != nil && !p.auxFailed {
		if aux, ok := c.evalAux(p, p.aux, nil, &p.auxFailed); ok {
			v.auxNow = aux
			v.auxSet++
			if !v.Alarm {
				v.Aux = aux
			}
		}
	}
	if p.alarm != nil && !p.alarmFailed && !v.Alarm {
		arg := v.auxNow
		if arg == nil {
			arg = starlark.NewDict(0) // made only when needed: a step's worth of garbage otherwise
		}
		r, ok := c.evalAux(p, p.alarm, starlark.Tuple{arg}, &p.alarmFailed)
		b, isBool := r.(starlark.Bool)
		switch {
		case ok && !isBool:
			// A forgotten return (None) would otherwise screen every
			// interval: a liveness violation hidden as a false alarm.
			c.fail(p.Name, "liveness alarm", fmt.Errorf("%s: the alarm of %q returned %s, want True or False", funcPos(p.alarm, p.Pos), p.Name, r.Type()))
			p.alarmFailed = true
		case ok && bool(b):
			c.raise(p, v)
			v.Aux = v.auxNow
		}
	}
}

// funcPos is where a script function is defined (a def or a lambda), to
// name in an error about what it returned; decl (the declaration) for a
// built-in.
func funcPos(fn starlark.Callable, decl syntax.Position) syntax.Position {
	if f, ok := fn.(*starlark.Function); ok {
		return f.Position()
	}
	return decl
}

// evalAux runs a predicate's aux or alarm function; a failure is reported
// once and sets *failed, so the function is not run again.
func (c *Checker) evalAux(p *Predicate, fn starlark.Callable, args starlark.Tuple, failed *bool) (starlark.Value, bool) {
	// These functions cannot change anything: the same function with the
	// same argument answers the same until something it read changes,
	// which its frame tracks as a derived value's does. Only functions
	// and frozen arguments are memoised.
	// An alarm's memo is kept by function: its argument is the aux value,
	// new whenever the aux ran again (at every step of an open interval
	// whose aux reads the time), so a memo by argument would be a new
	// entry and frame per step. It answers for the argument it was run
	// on.
	key, memo := auxKey{fn: fn}, false
	var arg starlark.Value
	if _, ok := fn.(*starlark.Function); ok && len(args) <= 1 {
		memo = true
		if len(args) == 1 {
			arg = args[0]
			switch arg.(type) {
			case *starlark.Dict, *starlark.List, starlarkStruct, *frozenStruct:
			default:
				memo = false
			}
		}
	}
	if c.auxMemo == nil {
		c.auxMemo = map[auxKey]*auxResult{}
	}
	m := c.auxMemo[key]
	if m != nil && memo && !m.f.dirty && m.arg == arg {
		m.used = c.step
		return m.v, true
	}
	var f *frame
	if m != nil {
		// Run again in the same frame: the reads it repeats (most, when
		// only the time moved) keep their places in the index.
		f = m.f
		c.rerun(f)
	} else {
		f = c.newFrame(frameAux, nil)
		c.forget(f)
	}
	v, err := c.call(f, fn, args, &p.desc)
	c.endRun(f)
	f.dirty = false
	c.last.Aux++
	if err == nil {
		if v, err = freezeResult(v); err != nil {
			err = fmt.Errorf("%s: %w", p.Pos, err)
		}
	}
	if err == nil && failed == &p.auxFailed {
		// Shown beside each violation, in every report: a value that
		// prints to gigabytes is refused, not printed.
		if n, perr := c.printSize(v); perr != nil || n > maxAuxBytes {
			err = cmp.Or(perr, fmt.Errorf("%s: the aux value prints to more than %s (at most %s): a stability measure is shown beside every violation; keep it to what tells a reader why", p.Pos, humanize.IBytes(n), humanize.IBytes(maxAuxBytes)))
		}
	}
	if !memo || err != nil {
		c.forget(f)
		if m != nil {
			delete(c.auxMemo, key)
		}
	}
	if err != nil {
		what := p.Kind + " aux"
		if failed == &p.alarmFailed {
			what = "liveness alarm"
		}
		c.fail(p.Name, what, err)
		*failed = true
		return nil, false
	}
	if memo {
		if m == nil {
			m = &auxResult{f: f}
			c.auxMemo[key] = m
		}
		m.v, m.arg, m.used, m.warm = v, arg, c.step, c.track != nil
	}
	return v, true
}

// maxAuxBytes bounds how long an aux value may print.
const maxAuxBytes = 1 << 20

// dropAux forgets the memoised aux and alarm results that did not answer
// at step last (their intervals closed, or the alarm's argument is a new
// value), and those computed in a segment's warm-up, so that the memo
// holds only what open intervals ask for.
func (c *Checker) dropAux(last int) {
	for k, m := range c.auxMemo {
		if m.used != last || m.warm || c.track != nil {
			c.forget(m.f)
			delete(c.auxMemo, k)
		}
	}
}

// starlarkStruct is the type struct() makes, for auxKey.
type starlarkStruct = *starlarkstruct.Struct
