package predicates

import (
	"fmt"
	"slices"
	"strings"

	"go.starlark.net/starlark"

	"github.com/replaycheck/replaycheck/replay"
)

// Holds reports each enabled predicate's value after the last observed
// step (true: holding), by name.
func (c *Checker) Holds() map[string]bool {
	out := make(map[string]bool, len(c.preds))
	for _, p := range c.preds {
		if !p.disabled {
			out[p.Name] = p.holding
		}
	}
	return out
}

// Watcher evaluates Starlark expressions (watches) against the replayed
// state at wherever a cursor stands, with the same built-ins as predicates
// and the globals of a predicates script (its tables, derived values and
// helpers), if one is given. Tables are rebuilt from the nodes' states by
// Sync; rows keep no history there, so prev() returns its default and
// history() only the current value. Derived values are computed from the
// state at the cursor when a watch first reads them after a Sync (by
// calling their function, as a check does after every step), so they
// hold the check's value whenever that function reads the current state
// only; like rows, they keep no history there: history() is the current
// value alone and since_change() is 0. A watch that is a derived value
// itself (its name alone) shows the value, as calling it would.
type Watcher struct {
	c *Checker
}

// NewWatcher loads script (optional: "" for none) for its declarations
// and binds the watcher to the replayer a cursor drives.
func NewWatcher(r *replay.Replayer, script string) (*Watcher, error) {
	src := []byte("safety(\"_watch\", lambda: True)\n")
	path := "watch.star"
	var c *Checker
	var err error
	if script != "" {
		c, err = Load(script, r, Options{To: -1})
	} else {
		c, err = LoadSource(path, src, r, Options{To: -1})
	}
	if err != nil {
		return nil, err
	}
	c.watchGen = 1
	return &Watcher{c: c}, nil
}

// Derived reports whether expr is the name of one of the script's derived
// values, alone: such a watch shows its value, as NAME() does.
func (w *Watcher) Derived(expr string) bool {
	d, ok := w.c.globals[strings.TrimSpace(expr)].(*Derived)
	return ok && d != nil
}

// Tables lists the tables the watcher knows (the script's and those
// watches declared).
func (w *Watcher) Tables() []*Table { return w.c.tables }

// Sync rebuilds the tables from the replayer's current position. Call it
// after every cursor move before evaluating.
func (w *Watcher) Sync() {
	c := w.c
	c.step = c.r.Pos()
	c.ev = c.r.Recorded()
	// The time frontier: the latest event time among the steps so far.
	c.now = 0
	for _, id := range c.r.Trace().Nodes {
		if s, ok := c.r.Trace().LastStepOf(id, c.step); ok {
			c.now = max(c.now, c.r.Trace().Event(s).Time-c.start)
		}
	}
	// Derived values are computed again when a watch reads them.
	c.watchGen++
	for _, d := range c.derived {
		d.value, d.hist = nil, nil
	}
	for _, t := range c.tables {
		for _, rs := range t.rows {
			t.drop(rs)
		}
		clear(t.byNode)
		t.history = map[rowKey]*rowHistory{}
	}
	tr := c.r.Trace()
	for _, id := range tr.Nodes {
		c.nodeNow[id] = 0
		if s, ok := tr.LastStepOf(id, c.step); ok {
			c.nodeNow[id] = tr.Event(s).Time - c.start
		}
		inst := c.r.Instance(id)
		_, unknown := c.r.Unknown(id)
		c.unknown[id] = inst == nil || unknown
		if inst != nil && !unknown && inst.Handler() != nil {
			c.scanNode(id, inst.Handler())
		}
	}
}

// Eval evaluates one expression and returns its value as Starlark prints
// it.
func (w *Watcher) Eval(expr string) (string, error) {
	c := w.c
	env := starlark.StringDict{}
	for k, v := range c.builtins() {
		env[k] = v
	}
	for k, v := range c.globals {
		env[k] = v
	}
	if err := noNUL("watch", expr); err != nil {
		return "", err
	}
	e, err := fileOptions.ParseExpr("watch", expr, 0)
	if err != nil {
		return "", fmt.Errorf("%w", scriptError(err))
	}
	e = guardExpr(e)
	desc := "the watch " + expr
	c.budget.begin("evaluation", c.step, &desc)
	c.watching = true // table() may be called: it returns a filled table
	v, err := starlark.EvalExprOptions(fileOptions, c.thread, e, env)
	c.watching = false
	if d, ok := v.(*Derived); ok && err == nil {
		// A derived value's name alone: its value, not derived("NAME").
		if err = c.watchDerived(d); err == nil {
			v = d.Value()
		}
	}
	c.budget.end()
	if err == nil {
		err = c.budget.err
	}
	if err == nil {
		// The value is shown: printing it must stay within the budgets.
		var n uint64
		if n, err = c.printSize(v); err == nil {
			err = c.budget.reserve(n)
		}
	}
	if err != nil {
		return "", fmt.Errorf("%w", scriptError(err))
	}
	return v.String(), nil
}

// watchDerived brings a derived value to the watcher's step before a watch
// reads it: the watcher's checker observes no steps, so nothing else
// computes it (a watch read None). The function runs once per Sync, in the
// budget of the watch that reads it first; a derived value it reads is
// brought to the step in turn. Outside a watcher it does nothing.
func (c *Checker) watchDerived(d *Derived) error {
	if c.watchGen == 0 || d.watchGen == c.watchGen {
		return nil
	}
	if d.watchBusy {
		return fmt.Errorf("derived(%q) reads itself (an accumulator): a watch evaluates at the cursor alone and knows no earlier value of it; watch what it accumulates instead", d.name)
	}
	d.watchBusy = true
	v, err := starlark.Call(c.thread, d.fn, nil, nil)
	d.watchBusy = false
	if err == nil {
		v, err = freezeChecked(v)
	}
	if err != nil {
		return fmt.Errorf("derived(%q) at this step: %w", d.name, scriptError(err))
	}
	d.value, d.hist, d.since, d.watchGen = v, []starlark.Value{v}, c.now, c.watchGen
	return nil
}

// watchTable serves table() inside a watch: the table with the same type,
// columns and keep if one exists (so repeated watches do not pile tables
// up), else a new one filled from the current state at once.
func (c *Checker) watchTable(t *Table) *Table {
	for _, old := range c.tables {
		if old.name == t.name && old.keep == t.keep && slices.Equal(old.columns, t.columns) && slices.Equal(old.views, t.views) && slices.Equal(old.chained, t.chained) {
			return old
		}
	}
	t.id = len(c.tables) + 1
	c.tables = append(c.tables, t)
	c.scan = newScanner(c) // a new type to look for
	for _, id := range c.r.Trace().Nodes {
		inst := c.r.Instance(id)
		if inst != nil && !c.unknown[id] && inst.Handler() != nil {
			c.scanNode(id, inst.Handler())
		}
	}
	return t
}
