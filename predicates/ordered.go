package predicates

import (
	"fmt"
	"sort"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/replaycheck/replaycheck/node"
)

// Ordered is ordered(NAME, TABLE, by=FN): the rows of a table whose key
// by(row) is not None, sorted by that key (ties by node, then path), kept
// up to date incrementally. A row's key is recomputed only when what it
// read changed (tracked per column, like a quantifier's body); moving a
// row costs a binary search and a copy of the row pointers.
//
// Lookups record narrow dependencies: ceiling(k) answering row r depends
// on "the gap before r" (no row may enter between k and r), so an
// evaluation is re-run only when a row enters or leaves next to the answer
// it got, not whenever any row of the index moves. len(), iteration and
// indexing depend on the whole index.
type Ordered struct {
	c     *Checker
	name  string
	desc  string // "ordered index NAME", for a watch
	pos   syntax.Position
	id    int
	table *Table
	by    starlark.Callable

	inst  map[*rowState]*frame // one key evaluation per row of the table
	key   map[*rowState]starlark.Value
	rows  []*rowState // included rows, in order
	keys  []starlark.Value
	dirty []*frame
	epoch int
	ready bool  // rows synced with the table at least once
	since int64 // time of the last change of rows, keys or order
	err   error // a key failed: every later read fails with it

	methods map[string]*starlark.Builtin
	Evals   int // key evaluations, for tests
}

var (
	_ starlark.Sequence  = (*Ordered)(nil)
	_ starlark.Indexable = (*Ordered)(nil)
	_ starlark.HasAttrs  = (*Ordered)(nil)
)

func (o *Ordered) String() string        { return fmt.Sprintf("ordered(%q)", o.name) }
func (o *Ordered) Type() string          { return "ordered" }
func (o *Ordered) Freeze()               {}
func (o *Ordered) Truth() starlark.Bool  { return true }
func (o *Ordered) Hash() (uint32, error) { return uint32(o.id), nil }

// ordered(NAME, TABLE, by)
func (c *Checker) declOrdered(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := c.declaring("ordered"); err != nil {
		return nil, err
	}
	var name string
	var t *Table
	var by starlark.Callable
	if err := starlark.UnpackArgs("ordered", args, kwargs, "name", &name, "table", &t, "by", &by); err != nil {
		return nil, err
	}
	if err := c.claimName(thread, "ordered index", name); err != nil {
		return nil, err
	}
	o := &Ordered{c: c, name: name, desc: "ordered index " + name, pos: thread.CallFrame(1).Pos, id: len(c.ordered) + 1, table: t, by: by,
		inst: map[*rowState]*frame{}, key: map[*rowState]starlark.Value{}}
	c.ordered = append(c.ordered, o)
	return o, nil
}

// refreshOrdered brings every ordered index up to date with the tables;
// it runs before derived values and predicates, so that the dependencies
// it fires reach them in the same step.
func (c *Checker) refreshOrdered() {
	for _, o := range c.ordered {
		if !o.stale() {
			continue // most steps move no key: no budget to start
		}
		top := c.cur == nil
		if top {
			c.budget.begin("evaluation", c.step, &o.desc)
		}
		err := o.refresh()
		if top && !c.budget.end() && err == nil {
			err = c.budget.err
		}
		if err != nil && o.err == nil {
			o.failed(err)
		}
	}
}

// failed records that a key could not be computed: the failure is
// reported once, and everything that read the index is re-run, to fail
// in turn, rather than keep an answer it can no longer check.
func (o *Ordered) failed(err error) {
	c := o.c
	o.err = err
	c.fail(o.name, "ordered", err)
	for d := range c.index {
		if d.id == o.id && (d.kind == depOrdered || d.kind == depGapBefore || d.kind == depGapAfter) {
			c.changed(d)
		}
	}
}

// stale reports whether the index needs a refresh.
func (o *Ordered) stale() bool {
	return o.err == nil && (!o.ready || o.epoch != o.table.epoch || len(o.dirty) > 0)
}

func (o *Ordered) refresh() error {
	if !o.stale() {
		return nil
	}
	c := o.c
	if !o.ready || o.epoch != o.table.epoch {
		o.syncRows()
	}
	for len(o.dirty) > 0 {
		f := o.dirty[len(o.dirty)-1]
		o.dirty = o.dirty[:len(o.dirty)-1]
		if !f.dirty || o.inst[f.row] != f {
			continue
		}
		c.forget(f)
		saved := c.cur
		c.cur = f
		k, err := starlark.Call(c.thread, o.by, starlark.Tuple{&Row{rs: f.row}}, nil)
		if err == nil {
			err = c.budget.err
		}
		if err == nil && k != starlark.None {
			if k, err = freezeChecked(k); err != nil {
				err = fmt.Errorf("%s: ordered(%q): the key of %s: %w", o.pos, o.name, &Row{rs: f.row}, err)
			}
		}
		c.cur = saved
		o.Evals++
		c.last.Keys++
		f.dirty = false
		if err != nil {
			return err
		}
		if k == starlark.None {
			k = nil
		}
		if err := o.move(f.row, k); err != nil {
			return err
		}
	}
	return nil
}

// syncRows adds a key evaluation for each new row of the table and takes
// out rows that are gone.
func (o *Ordered) syncRows() {
	c, t := o.c, o.table
	add := func(rs *rowState) {
		if _, ok := o.inst[rs]; ok || t.rows[rs.key] != rs {
			return
		}
		f := c.newFrame(frameKey, nil)
		f.ord, f.row, f.dirty = o, rs, false
		o.inst[rs] = f
		c.markDirty(f)
	}
	drop := func(rs *rowState) {
		f, ok := o.inst[rs]
		if !ok || t.rows[rs.key] == rs {
			return
		}
		c.forget(f)
		delete(o.inst, rs)
		if err := o.move(rs, nil); err != nil && o.err == nil {
			o.err = err // cannot happen: taking a row out compares known keys
		}
	}
	if !t.replayChanges(o.epoch, o.ready, add, drop) {
		for rs := range o.inst {
			drop(rs)
		}
		for _, rs := range t.sortedRows() {
			add(rs)
		}
	}
	o.epoch, o.ready = t.epoch, true
}

// move sets a row's key (nil: not in the index) and fires the
// dependencies of the lookups whose answer may change.
func (o *Ordered) move(rs *rowState, k starlark.Value) error {
	old := o.key[rs]
	if old == nil && k == nil {
		return nil
	}
	if old != nil && k != nil {
		if eq, err := starlark.Equal(old, k); err == nil && eq {
			return nil
		}
	}
	c := o.c
	if old != nil {
		i, err := o.search(old, rs)
		if err != nil {
			return err
		}
		// Lookups that answered rs: their answer is gone.
		c.changed(dep{depGapBefore, o.id, rs.id})
		c.changed(dep{depGapAfter, o.id, rs.id})
		o.rows = append(o.rows[:i], o.rows[i+1:]...)
		o.keys = append(o.keys[:i], o.keys[i+1:]...)
		delete(o.key, rs)
	}
	if k != nil {
		i, err := o.search(k, rs)
		if err != nil {
			return err
		}
		o.rows = append(o.rows, nil)
		o.keys = append(o.keys, nil)
		copy(o.rows[i+1:], o.rows[i:])
		copy(o.keys[i+1:], o.keys[i:])
		o.rows[i], o.keys[i] = rs, k
		o.key[rs] = k
		// A ceiling answered by the next row, or a floor answered by the
		// previous one, may now be answered by rs.
		next, prev := 0, 0
		if i+1 < len(o.rows) {
			next = o.rows[i+1].id
		}
		if i > 0 {
			prev = o.rows[i-1].id
		}
		c.changed(dep{depGapBefore, o.id, next})
		c.changed(dep{depGapAfter, o.id, prev})
	}
	o.since = c.now
	c.trackOrdered(o)
	c.changed(dep{depOrdered, o.id, 0})
	return nil
}

// compareKeys is -1, 0 or 1.
func compareKeys(a, b starlark.Value) (int, error) {
	// The common keys, without Starlark's generic comparison.
	if x, ok := a.(starlark.Int); ok {
		if y, ok := b.(starlark.Int); ok {
			return x.Cmp(y, 0)
		}
	}
	if x, ok := a.(starlark.String); ok {
		if y, ok := b.(starlark.String); ok {
			return strings.Compare(string(x), string(y)), nil
		}
	}
	lt, err := starlark.Compare(syntax.LT, a, b)
	if err != nil {
		return 0, fmt.Errorf("keys %s and %s cannot be ordered: %w", a.Type(), b.Type(), err)
	}
	if lt {
		return -1, nil
	}
	if gt, _ := starlark.Compare(syntax.GT, a, b); gt {
		return 1, nil
	}
	return 0, nil
}

// search finds where (k, rs) sits in the order: the index of rs if it is
// there with key k, else where it would go.
func (o *Ordered) search(k starlark.Value, rs *rowState) (int, error) {
	var err error
	i := sort.Search(len(o.rows), func(i int) bool {
		if err != nil {
			return true
		}
		c, e := compareKeys(o.keys[i], k)
		if e != nil {
			err = fmt.Errorf("%s: ordered(%q): %w", o.pos, o.name, e)
			return true
		}
		if c != 0 {
			return c > 0
		}
		r := o.rows[i]
		if r.key.node != rs.key.node {
			return r.key.node >= rs.key.node
		}
		return node.CompareNatural(r.key.path, rs.key.path) >= 0 // as tables iterate
	})
	return i, err
}

// lower is the index of the first row whose key is >= k (strict: > k).
func (o *Ordered) lower(k starlark.Value, strict bool) (int, error) {
	var err error
	i := sort.Search(len(o.keys), func(i int) bool {
		if err != nil {
			return true
		}
		c, e := compareKeys(o.keys[i], k)
		if e != nil {
			err = e
			return true
		}
		return c > 0 || (c == 0 && !strict)
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", o.name, err)
	}
	return i, nil
}

// use brings the index up to date for a read and fails if a key failed.
func (o *Ordered) use(what string) error {
	c := o.c
	if c.cur != nil && c.cur.kind == frameKey {
		return fmt.Errorf("%s: the key of an ordered index cannot read another ordered index", what)
	}
	if c.cur == nil || o.stale() {
		if err := o.refresh(); err != nil && o.err == nil {
			o.failed(err)
		}
	}
	if o.err != nil {
		return fmt.Errorf("%s: ordered index %q failed: %w", what, o.name, o.err)
	}
	return nil
}

// failRead stops the evaluation that read a failed index: len() and
// iteration cannot return an error, so the evaluation is cancelled with
// it (as a budget is), and fails with that error.
func (o *Ordered) failRead(err error) {
	o.c.budget.fail(err)
}

// Len implements starlark.Sequence.
func (o *Ordered) Len() int {
	if err := o.use("len"); err != nil {
		o.failRead(err)
		return 0
	}
	o.c.read(dep{depOrdered, o.id, 0})
	return len(o.rows)
}

// Iterate implements starlark.Iterable: the rows in order.
func (o *Ordered) Iterate() starlark.Iterator {
	if err := o.use("iterate"); err != nil {
		o.failRead(err)
		return &rowIter{}
	}
	o.c.read(dep{depOrdered, o.id, 0})
	o.c.last.Rows += len(o.rows)
	return &rowIter{rows: append([]*rowState(nil), o.rows...)}
}

// Index implements starlark.Indexable.
func (o *Ordered) Index(i int) starlark.Value {
	o.c.read(dep{depOrdered, o.id, 0})
	return &Row{rs: o.rows[i]}
}

func (o *Ordered) AttrNames() []string {
	return []string{"ceiling", "first", "floor", "higher", "last", "lower", "name"}
}

func (o *Ordered) Attr(name string) (starlark.Value, error) {
	if b := o.methods[name]; b != nil {
		return b, nil
	}
	b, err := o.method(name)
	if b, ok := b.(*starlark.Builtin); ok && err == nil {
		if o.methods == nil {
			o.methods = map[string]*starlark.Builtin{}
		}
		o.methods[name] = b // made once: lookups run in bodies at every step
	}
	return b, err
}

func (o *Ordered) method(name string) (starlark.Value, error) {
	switch name {
	case "name":
		return starlark.String(o.name), nil
	case "first", "last":
		return starlark.NewBuiltin(o.name+"."+name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 0); err != nil {
				return nil, err
			}
			if err := o.use(b.Name()); err != nil {
				return nil, err
			}
			if name == "first" {
				return o.at(0, true), nil
			}
			return o.at(len(o.rows)-1, false), nil
		}), nil
	case "ceiling", "higher", "floor", "lower":
		return starlark.NewBuiltin(o.name+"."+name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var k starlark.Value
			wrap := false
			if err := starlark.UnpackArgs(b.Name(), args, kwargs, "key", &k, "wrap?", &wrap); err != nil {
				return nil, err
			}
			if err := o.use(b.Name()); err != nil {
				return nil, err
			}
			return o.lookup(name, k, wrap)
		}), nil
	}
	return nil, nil
}

// at answers the row at index i, recording the gap a lookup that landed
// there depends on: before it for a search upward (ceiling, higher,
// first), after it for one downward. An index out of range is the end
// (upward) or the start (downward): id 0.
func (o *Ordered) at(i int, up bool) starlark.Value {
	var id int
	var v starlark.Value = starlark.None
	if i >= 0 && i < len(o.rows) {
		id, v = o.rows[i].id, &Row{rs: o.rows[i]}
	}
	if up {
		o.c.read(dep{depGapBefore, o.id, id})
	} else {
		o.c.read(dep{depGapAfter, o.id, id})
	}
	return v
}

// lookup: ceiling (first key >= k), higher (> k), floor (last key <= k),
// lower (< k); with wrap, a search that runs off one end continues from
// the other (the successor of k on a ring).
func (o *Ordered) lookup(op string, k starlark.Value, wrap bool) (starlark.Value, error) {
	up := op == "ceiling" || op == "higher"
	var i int
	var err error
	if up {
		i, err = o.lower(k, op == "higher")
	} else {
		i, err = o.lower(k, op == "floor")
		i--
	}
	if err != nil {
		return nil, fmt.Errorf("%s.%s(%s): %w", o.name, op, k, err)
	}
	v := o.at(i, up)
	if v == starlark.None && wrap {
		if up {
			return o.at(0, true), nil
		}
		return o.at(len(o.rows)-1, false), nil
	}
	return v, nil
}

// keyReadError refuses, in an ordered key, reads of values computed
// during evaluation (derived values): keys are brought up to date before
// those are, so the key would see last step's value.
func (c *Checker) keyReadError(what string) error {
	if c.cur != nil && c.cur.kind == frameKey {
		return fmt.Errorf("the key of ordered index %q cannot read %s: keys are computed before derived values; read the row's columns", c.cur.ord.name, what)
	}
	return nil
}
