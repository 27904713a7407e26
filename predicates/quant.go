package predicates

import (
	"fmt"
	"slices"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/replaycheck/replaycheck/node"
)

type quantKind uint8

const (
	qForall quantKind = iota + 1
	qExists
	qCount
)

func (k quantKind) String() string { return [...]string{"", "forall", "exists", "count"}[k] }

// quant is the memo of one quantifier call site over a table, within one
// parent evaluation: the body's result for every row, re-evaluated only for
// rows whose reads changed, rows added, or when the body's captured
// variables changed.
type quant struct {
	kind    quantKind
	table   *Table
	parent  *frame
	inst    map[*rowState]*frame
	epoch   int
	free    []starlark.Value
	dirty   []*frame
	nTrue   int
	started bool
	// deciding holds the rows whose body result decides the quantifier
	// against its neutral answer: a forall's failing rows, an exists' or
	// count's holding rows. Kept up to date so that a violation's
	// witnesses cost the number of such rows, not of all rows.
	deciding map[*rowState]struct{}
	// fn is the body of the last call, for settle. gen is the parent's
	// runs at that call; multi: it was called more than once in that
	// evaluation (in a loop, say), so that the memo holds only the last
	// call's answer and cannot settle the parent.
	fn    starlark.Callable
	gen   uint32
	multi bool
}

type quantKey struct {
	parent int
	body   syntax.Position
	table  int
	kind   quantKind
}

// quantify implements forall, exists and count. Over a table it is
// incremental; over any other iterable it simply loops.
func (c *Checker) quantify(kind quantKind, thread *starlark.Thread, xs starlark.Value, fn starlark.Callable) (starlark.Value, error) {
	t, isTable := xs.(*Table)
	// Aux and alarm evaluations run once per step; memoising them would
	// only accumulate memos.
	if !isTable || c.cur == nil || c.cur.kind == frameAux {
		return c.loop(kind, thread, xs, fn)
	}
	var pos syntax.Position
	if f, ok := fn.(*starlark.Function); ok {
		pos = f.Position()
	}
	key := quantKey{parent: c.cur.id, body: pos, table: t.id, kind: kind}
	q := c.quants[key]
	if q == nil {
		q = &quant{kind: kind, table: t, parent: c.cur, inst: map[*rowState]*frame{}, deciding: map[*rowState]struct{}{}}
		c.quants[key] = q
		c.cur.quants = append(c.cur.quants, key)
	}
	c.read(dep{depTable, t.id, 0})

	// Captured variables changed: every row's body may answer differently.
	if free := freeVars(fn); !q.started || !sameValues(free, q.free) {
		q.free = free
		for _, f := range q.inst {
			c.markDirty(f)
		}
	}
	if !q.started || q.epoch != t.epoch {
		c.syncRows(q)
	}
	q.multi = q.started && q.gen == c.cur.runs
	q.started, q.gen, q.fn = true, c.cur.runs, fn
	if err := c.refresh(thread, q); err != nil {
		return nil, err
	}
	c.cur.witness = q
	switch kind {
	case qForall:
		return starlark.Bool(q.nTrue == len(q.inst)), nil
	case qExists:
		return starlark.Bool(q.nTrue > 0), nil
	}
	return starlark.MakeInt(q.nTrue), nil
}

// answer is what the quantifier returns, as a number.
func (q *quant) answer() int {
	switch {
	case q.kind == qForall && q.nTrue == len(q.inst), q.kind == qExists && q.nTrue > 0:
		return 1
	case q.kind == qCount:
		return q.nTrue
	}
	return 0
}

// refresh brings the quantifier's queued instances up to date with its
// body q.fn: a dirty instance runs again, a stale one first tries settle.
func (c *Checker) refresh(thread *starlark.Thread, q *quant) error {
	for len(q.dirty) > 0 {
		f := q.dirty[len(q.dirty)-1]
		q.dirty = q.dirty[:len(q.dirty)-1]
		if (!f.dirty && !f.stale) || q.inst[f.row] != f {
			continue
		}
		if !f.dirty && c.settle(thread, f) {
			continue
		}
		if err := c.evalInstance(thread, q, f, q.fn); err != nil {
			q.dirty = append(q.dirty, f) // still to do
			return err
		}
	}
	return nil
}

// settle brings the quantifiers memoised under a stale frame up to date
// without running the frame. If none of them answers differently, the
// frame's result is what it was: its own reads did not change, and what
// it runs is deterministic. It reports whether the frame was settled so;
// if not, it must run again (its quantifiers then answer from their
// memos). A quantifier whose rows changed, or that was called more than
// once in the frame's last run, cannot be settled: the frame runs.
//
// A body that fails here is left to fail when the frame runs: the frame
// may give it other captured values then.
func (c *Checker) settle(thread *starlark.Thread, f *frame) bool {
	for _, k := range f.quants {
		q := c.quants[k]
		if q == nil || len(q.dirty) == 0 {
			continue
		}
		if !q.started || q.multi || q.epoch != q.table.epoch {
			return false
		}
		before := q.answer()
		if c.refresh(thread, q) != nil || q.answer() != before {
			return false
		}
	}
	f.stale = false
	return true
}

// syncRows adds instances for new rows and drops those of removed rows:
// from the table's journal of changes when it reaches back to the last
// sync, else by looking at every row.
func (c *Checker) syncRows(q *quant) {
	t := q.table
	add := func(rs *rowState) {
		if _, ok := q.inst[rs]; !ok && t.rows[rs.key] == rs {
			f := c.newFrame(frameInstance, q.parent)
			f.q, f.row = q, rs
			f.dirty = false
			q.inst[rs] = f
			c.markDirty(f)
		}
	}
	drop := func(rs *rowState) {
		if f, ok := q.inst[rs]; ok && t.rows[rs.key] != rs {
			if f.result {
				q.nTrue--
			}
			c.dropFrame(f)
			delete(q.inst, rs)
			delete(q.deciding, rs)
		}
	}
	if !t.replayChanges(q.epoch, q.started, add, drop) {
		for _, rs := range t.sortedRows() {
			add(rs)
		}
		for rs := range q.inst {
			drop(rs)
		}
	}
	q.epoch = t.epoch
}

func (c *Checker) evalInstance(thread *starlark.Thread, q *quant, f *frame, fn starlark.Callable) error {
	// Nested quantifiers keep their memos: they are keyed by this frame.
	c.rerun(f)
	c.last.Bodies++
	saved := c.cur
	c.cur = f
	// The body reads the row's columns through the Row it is given, each
	// read tracked: a change to a column it did not read does not re-run
	// it.
	v, err := starlark.Call(thread, fn, starlark.Tuple{&Row{rs: f.row}}, nil)
	c.cur = saved
	c.endRun(f)
	if err != nil {
		return err
	}
	f.stale = false
	res := bool(v.Truth())
	if res != f.result {
		if res {
			q.nTrue++
		} else {
			q.nTrue--
		}
	}
	f.result = res
	f.dirty = false
	if res == q.want() {
		q.deciding[f.row] = struct{}{}
	} else {
		delete(q.deciding, f.row)
	}
	return nil
}

// want is the body result that decides the quantifier: false for forall,
// true for exists and count.
func (q *quant) want() bool { return q.kind != qForall }

// dropFrame forgets a frame and everything memoised under it.
func (c *Checker) dropFrame(f *frame) {
	c.forget(f)
	c.dropQuants(f)
}

func (c *Checker) dropQuants(f *frame) {
	for _, k := range f.quants {
		if q := c.quants[k]; q != nil {
			for _, inst := range q.inst {
				c.dropFrame(inst)
			}
			delete(c.quants, k)
		}
	}
	f.quants = nil
}

// witnessRow is the row that decided a quantifier: the first failing row
// of a false forall, the first holding row of a true exists or of a count.
func (q *quant) witnessRow() *rowState {
	if rows := q.witnessRows(); len(rows) > 0 {
		return rows[0]
	}
	return nil
}

// witnessRows are all the rows that decided the quantifier, by node, then
// path.
func (q *quant) witnessRows() []*rowState {
	if q == nil || len(q.deciding) == 0 {
		return nil
	}
	rows := make([]*rowState, 0, len(q.deciding))
	for rs := range q.deciding {
		rows = append(rows, rs)
	}
	slices.SortFunc(rows, func(a, b *rowState) int {
		if c := strings.Compare(string(a.key.node), string(b.key.node)); c != 0 {
			return c
		}
		return node.CompareNatural(a.key.path, b.key.path)
	})
	return rows
}

// loop evaluates a quantifier over a plain iterable.
func (c *Checker) loop(kind quantKind, thread *starlark.Thread, xs starlark.Value, fn starlark.Callable) (starlark.Value, error) {
	it, ok := xs.(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf("%s: want a table or an iterable, got %s", kind, xs.Type())
	}
	iter := it.Iterate()
	defer iter.Done()
	n := 0
	var x starlark.Value
	for iter.Next(&x) {
		v, err := starlark.Call(thread, fn, starlark.Tuple{x}, nil)
		if err != nil {
			return nil, err
		}
		t := bool(v.Truth())
		switch {
		case kind == qForall && !t:
			return starlark.False, nil
		case kind == qExists && t:
			return starlark.True, nil
		case t:
			n++
		}
	}
	switch kind {
	case qForall:
		return starlark.True, nil
	case qExists:
		return starlark.False, nil
	}
	return starlark.MakeInt(n), nil
}

func freeVars(fn starlark.Callable) []starlark.Value {
	f, ok := fn.(*starlark.Function)
	if !ok {
		return []starlark.Value{fn}
	}
	vals := make([]starlark.Value, f.NumFreeVars())
	for i := range vals {
		_, vals[i] = f.FreeVar(i)
	}
	return vals
}

func sameValues(a, b []starlark.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		eq, err := starlark.Equal(a[i], b[i])
		if err != nil || !eq {
			return false
		}
	}
	return true
}
