package predicates

// Histories of operations and their linearizability check.
//
// history(NAME, FN) accumulates operations across steps (FN runs after
// every step and calls h.call / h.ret); linearizable(H, MODEL) checks the
// history against a sequential model written in Starlark, with
// github.com/anishathalye/porcupine doing the search. The model's step
// function runs on the checker's thread, so it spends the evaluating
// predicate's budgets (steps, memory, time) like any other Starlark code.

import (
	_ "embed"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// History is an operation history declared with history(NAME, FN).
type History struct {
	c    *Checker
	name string
	desc string // "history NAME", for a watch
	pos  syntax.Position
	fn   starlark.Callable
	id   int

	ops  []*linOp
	byID map[string]int // op id (its repr) -> index in ops
	// changes lists the op index of every call and return in order, so a
	// model's cache learns what changed since it last looked.
	changes []int
	// recording: FN is running, so call and ret are allowed.
	recording bool
	// failed: FN failed at that step (reported then); the history is
	// incomplete from there on, so checking it is an error, not a pass.
	failed     bool
	failedStep int
	caches     map[*Model]*linCache
}

// linOp is one operation: invoked by call, completed by ret (or pending).
type linOp struct {
	id       starlark.Value
	client   string
	input    starlark.Value
	output   starlark.Value
	call     int64 // time (ns since the start), or the given call
	ret      int64
	callStep int // -1: not from a trace (a hand-built history)
	retStep  int
	pending  bool
	// inKeys and outKeys are the texts of the input and of the output
	// (each, and its elements), made once: a check asks which pending
	// operations' inputs some output holds (seenInOutputs).
	inKeys, outKeys []string
}

// valueKeys is the text of v and of each of its elements.
func valueKeys(v starlark.Value) []string {
	keys := []string{v.String()}
	if it, ok := v.(starlark.Indexable); ok {
		for i := range it.Len() {
			keys = append(keys, it.Index(i).String())
		}
	}
	return keys
}

// inputKeys are op.input's keys (valueKeys), made at the first use.
func (op *linOp) inputKeys() []string {
	if op.inKeys == nil && op.input != nil {
		op.inKeys = valueKeys(op.input)
	}
	return op.inKeys
}

// outputKeys are op.output's keys, none for a pending operation or an
// output of None.
func (op *linOp) outputKeys() []string {
	if op.pending || op.output == nil || op.output == starlark.None {
		return nil
	}
	if op.outKeys == nil {
		op.outKeys = valueKeys(op.output)
	}
	return op.outKeys
}

// Model is a sequential specification declared with model(...).
type Model struct {
	init      starlark.Value
	step      starlark.Callable
	partition starlark.Callable // nil: one partition
	name      string
}

// depHistory: a history's operations (added or completed).
const depHistory depKind = 100

// history(NAME, FN)
func (c *Checker) declHistory(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := c.declaring("history"); err != nil {
		return nil, err
	}
	var name string
	var fn starlark.Callable
	if err := starlark.UnpackArgs("history", args, kwargs, "name", &name, "fn", &fn); err != nil {
		return nil, err
	}
	if err := c.claimName(thread, "history", name); err != nil {
		return nil, err
	}
	h := &History{c: c, name: name, desc: "history " + name, pos: thread.CallFrame(1).Pos, fn: fn, id: len(c.histories) + 1,
		byID: map[string]int{}, caches: map[*Model]*linCache{}}
	c.histories = append(c.histories, h)
	return h, nil
}

// EarliestOperation is the earliest step at which an operation that a
// history (history()) holds now was called, and that history's name; ok
// is false when no history holds an operation from the trace. A check
// that starts after that step cannot hold the same history: no warm-up
// short of it takes over from this checker.
func (c *Checker) EarliestOperation() (history string, step int, ok bool) {
	for _, h := range c.histories {
		for _, op := range h.ops {
			if op.callStep >= 0 && (!ok || op.callStep < step) {
				history, step, ok = h.name, op.callStep, true
			}
		}
	}
	return history, step, ok
}

// recordHistories runs every history's recorder after a step. Recorders
// run at every step, also outside --from/--to: a history must hold every
// operation of the run to be checked.
func (c *Checker) recordHistories() {
	for _, h := range c.histories {
		if h.failed {
			continue
		}
		f := c.newFrame(frameAux, nil)
		h.recording = true
		n := len(h.changes)
		_, err := c.call(f, h.fn, nil, &h.desc)
		h.recording = false
		c.forget(f)
		if err != nil {
			h.failed, h.failedStep = true, c.step
			c.fail(h.name, "history", err)
			c.changed(dep{depHistory, h.id, 0})
			continue
		}
		if len(h.changes) != n {
			c.changed(dep{depHistory, h.id, 0})
		}
	}
}

func (h *History) String() string        { return fmt.Sprintf("history(%q)", h.name) }
func (h *History) Type() string          { return "history" }
func (h *History) Freeze()               {}
func (h *History) Truth() starlark.Bool  { return true }
func (h *History) Hash() (uint32, error) { return uint32(h.id), nil }
func (h *History) Len() int {
	h.c.read(dep{depHistory, h.id, 0})
	return len(h.ops)
}

// Iterate makes a history a sequence: len(h) and "for op in h" (each op
// a struct, as h.get returns).
func (h *History) Iterate() starlark.Iterator {
	h.c.read(dep{depHistory, h.id, 0})
	return &histIter{ops: h.ops[:len(h.ops):len(h.ops)]}
}

type histIter struct{ ops []*linOp }

func (it *histIter) Next(p *starlark.Value) bool {
	if len(it.ops) == 0 {
		return false
	}
	*p, it.ops = it.ops[0].value(), it.ops[1:]
	return true
}
func (it *histIter) Done() {}

func (h *History) AttrNames() []string { return []string{"call", "get", "name", "ops", "ret"} }
func (h *History) Attr(name string) (starlark.Value, error) {
	switch name {
	case "name":
		return starlark.String(h.name), nil
	case "call":
		return starlark.NewBuiltin(h.name+".call", h.callOp), nil
	case "ret":
		return starlark.NewBuiltin(h.name+".ret", h.retOp), nil
	case "get":
		return starlark.NewBuiltin(h.name+".get", h.getOp), nil
	case "ops":
		return starlark.NewBuiltin(h.name+".ops", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			h.c.read(dep{depHistory, h.id, 0})
			vs := make([]starlark.Value, len(h.ops))
			for i, op := range h.ops {
				vs[i] = op.value()
			}
			l := starlark.NewList(vs)
			l.Freeze()
			return l, nil
		}), nil
	}
	return nil, nil
}

// opKey identifies an op id: ints and strings only, so that ids compare
// as the script means (1 and "1" are different operations).
func opKey(fn string, id starlark.Value) (string, error) {
	switch id.(type) {
	case starlark.Int, starlark.String:
		return id.Type() + ":" + id.String(), nil
	}
	return "", fmt.Errorf("%s: an operation id is an int or a string, not %s", fn, id.Type())
}

func (h *History) recorder(fn string) error {
	if !h.recording {
		return fmt.Errorf("%s: operations are added only by the history's own function (the one given to history(%q, ...)), which runs after every step", fn, h.name)
	}
	return nil
}

// h.call(id, input, client=event.node): an operation is invoked now.
func (h *History) callOp(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := h.recorder(b.Name()); err != nil {
		return nil, err
	}
	var id, input starlark.Value
	client := string(h.c.ev.Node)
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "id", &id, "input", &input, "client?", &client); err != nil {
		return nil, err
	}
	k, err := opKey(b.Name(), id)
	if err != nil {
		return nil, err
	}
	if i, dup := h.byID[k]; dup {
		return nil, fmt.Errorf("%s: operation %s was already invoked at #%d", b.Name(), id, h.ops[i].callStep)
	}
	in, err := freezeChecked(input)
	if err != nil {
		return nil, fmt.Errorf("%s: input: %w", b.Name(), err)
	}
	t := h.c.ev.Time - h.c.start
	h.byID[k] = len(h.ops)
	h.changes = append(h.changes, len(h.ops))
	h.ops = append(h.ops, &linOp{id: id, client: client, input: in, output: starlark.None,
		call: t, ret: math.MaxInt64, callStep: h.c.step, retStep: -1, pending: true})
	return starlark.None, nil
}

// h.ret(id, output=None): the pending operation id returns now.
func (h *History) retOp(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := h.recorder(b.Name()); err != nil {
		return nil, err
	}
	var id starlark.Value
	var output starlark.Value = starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "id", &id, "output?", &output); err != nil {
		return nil, err
	}
	k, err := opKey(b.Name(), id)
	if err != nil {
		return nil, err
	}
	i, ok := h.byID[k]
	if !ok {
		return nil, fmt.Errorf("%s: operation %s was never invoked (call it first)", b.Name(), id)
	}
	op := h.ops[i]
	if !op.pending {
		return nil, fmt.Errorf("%s: operation %s already returned at #%d", b.Name(), id, op.retStep)
	}
	out, err := freezeChecked(output)
	if err != nil {
		return nil, fmt.Errorf("%s: output: %w", b.Name(), err)
	}
	op.output, op.pending, op.outKeys = out, false, nil
	op.ret, op.retStep = h.c.ev.Time-h.c.start, h.c.step
	h.changes = append(h.changes, i)
	return starlark.None, nil
}

// h.get(id): the operation as a struct, or None.
func (h *History) getOp(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var id starlark.Value
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &id); err != nil {
		return nil, err
	}
	h.c.read(dep{depHistory, h.id, 0})
	k, err := opKey(b.Name(), id)
	if err != nil {
		return nil, err
	}
	i, ok := h.byID[k]
	if !ok {
		return starlark.None, nil
	}
	return h.ops[i].value(), nil
}

func (op *linOp) value() starlark.Value {
	opt := func(pending bool, v int64) starlark.Value {
		if pending {
			return starlark.None
		}
		return starlark.MakeInt64(v)
	}
	step := func(s int) starlark.Value {
		if s < 0 {
			return starlark.None
		}
		return starlark.MakeInt(s)
	}
	return starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{
		"id": op.id, "client": starlark.String(op.client), "input": op.input, "output": op.output,
		"call": starlark.MakeInt64(op.call), "ret": opt(op.pending, op.ret),
		"call_step": step(op.callStep), "ret_step": step(op.retStep), "pending": starlark.Bool(op.pending),
	})
}

// describe renders an operation for reports: client, steps (or times
// for a hand-built history), input and output.
func (op *linOp) describe() string {
	var when string
	switch {
	case op.callStep >= 0 && op.pending:
		when = fmt.Sprintf("#%d..", op.callStep)
	case op.callStep >= 0:
		when = fmt.Sprintf("#%d..#%d", op.callStep, op.retStep)
	case op.pending:
		when = fmt.Sprintf("[%d, -]", op.call)
	default:
		when = fmt.Sprintf("[%d, %d]", op.call, op.ret)
	}
	out := op.output.String()
	if op.pending {
		out = "pending"
	}
	id := ""
	if op.callStep >= 0 && op.id != nil && op.id != starlark.None {
		// The id the script gave h.call, to find the request in the trace.
		id = " (id " + op.id.String() + ")"
	}
	return fmt.Sprintf("%s %s %s -> %s%s", op.client, when, op.input, out, id)
}

// model(init, step, partition=None)
func (c *Checker) declModel(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	m := &Model{name: "model"}
	var partition starlark.Value = starlark.None
	if err := starlark.UnpackArgs("model", args, kwargs, "init", &m.init, "step", &m.step, "partition?", &partition, "name?", &m.name); err != nil {
		return nil, err
	}
	if partition != starlark.None {
		fn, ok := partition.(starlark.Callable)
		if !ok {
			return nil, fmt.Errorf("model: partition must be a function of the input, not %s", partition.Type())
		}
		m.partition = fn
	}
	init, err := freezeChecked(m.init)
	if err != nil {
		return nil, fmt.Errorf("model: init: %w", err)
	}
	m.init = init
	return m, nil
}

func (m *Model) String() string        { return fmt.Sprintf("model(%q)", m.name) }
func (m *Model) Type() string          { return "model" }
func (m *Model) Freeze()               {}
func (m *Model) Truth() starlark.Bool  { return true }
func (m *Model) Hash() (uint32, error) { return 0, fmt.Errorf("model is unhashable") }
func (m *Model) AttrNames() []string   { return []string{"init", "name", "partition", "step"} }
func (m *Model) Attr(name string) (starlark.Value, error) {
	switch name {
	case "init":
		return m.init, nil
	case "step":
		return m.step, nil
	case "name":
		return starlark.String(m.name), nil
	case "partition":
		if m.partition == nil {
			return starlark.None, nil
		}
		return m.partition, nil
	}
	return nil, nil
}

//go:embed models.star
var modelsSource string

// bundledModels are models.register and models.kv, written in Starlark
// (models.star) so that they run, and are budgeted, like a user's model,
// and serve as examples of one.
func (c *Checker) bundledModels() (starlark.Value, error) {
	if c.models != nil {
		return c.models, nil
	}
	pre := starlark.StringDict{"model": starlark.NewBuiltin("model", c.declModel)}
	// On a thread of its own: the user's step budget is for the user's
	// script (--max-steps 1 made this load fail), and this file is ours.
	g, err := starlark.ExecFileOptions(&syntax.FileOptions{}, &starlark.Thread{Name: "models"}, "builtin:models.star", modelsSource, pre)
	if err != nil {
		return nil, fmt.Errorf("bundled models: %w", err)
	}
	c.models = starlarkstruct.FromStringDict(starlark.String("models"), starlark.StringDict{
		"register": g["register"], "kv": g["kv"],
	})
	return c.models, nil
}

// linCache remembers, for one history and model, each partition's ops
// and last result: after a step only the partitions whose operations
// changed are checked again (with models.kv, one key's operations).
type linCache struct {
	pos   int              // h.changes consumed
	part  []int            // op index -> partition index
	parts []*linPart       // in order of first operation
	byKey map[string]int   // partition key repr -> index
	keys  []starlark.Value // partition keys
}

type linPart struct {
	ops    []int // op indices, in call order
	dirty  bool
	result *linResult
	// The settled prefix, up to a cut at time end just before the call
	// of the operation at position base: every operation called before
	// it either returned before it, and is linearized before it in every
	// linearization, or is open across it (open). frontier lists the
	// ways the prefix may have gone (the state it ends in, and which open
	// operations it linearized). A check searches only what comes after
	// the cut, from each of them, so that a long history costs its recent
	// operations per step instead of all of them (settle).
	base     int
	open     []int
	frontier []linConfig
	end      int64
	// stuck is the base at which a stretch could not be settled within
	// the bounds below (-1: none): it is not tried again, and the
	// operations from it stay searched at every check.
	stuck int
	// judged is, for a violation, the latest call or return time the
	// check saw: operations called later leave the violation, and its
	// smallest window, as they were (a non-linearizable history stays so
	// whatever follows it), but not the return of one called before.
	judged int64
	// floats are the pending operations the cut passed that no
	// configuration placed, kept apart from open: each configuration
	// may place them anywhere after the cut, or never. floatBy indexes
	// them by the keys of their inputs (isFloat says which entries
	// still are), for the checks that search those an output holds.
	floats  []int
	floatBy map[string][]int
	isFloat map[int]bool
	// patience is how many operations must be called after a pending
	// one before the cut may pass it (0: settleOps). An operation the
	// cut passed that returns after all undoes the settling, and doubles
	// it: a crashed client's operation never returns, and a slow one
	// should not undo the settling more than a few times.
	patience int
}

// linResult is a checked partition: ok, or the violation's report.
type linResult struct {
	ok     bool
	report *starlark.Dict
}

func (c *Checker) linArgs(fn string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, *Model, time.Duration, error) {
	var hv starlark.Value
	var m *Model
	var timeout starlark.Value = starlark.None
	if err := starlark.UnpackArgs(fn, args, kwargs, "history", &hv, "model", &m, "timeout?", &timeout); err != nil {
		return nil, nil, 0, err
	}
	d := time.Duration(0)
	if timeout != starlark.None {
		ns, err := starlark.AsInt32(timeout)
		var n int64
		if err != nil {
			if err := starlark.AsInt(timeout, &n); err != nil {
				return nil, nil, 0, fmt.Errorf("%s: timeout must be an int of nanoseconds (e.g. 2 * SECOND)", fn)
			}
		} else {
			n = int64(ns)
		}
		if n <= 0 {
			return nil, nil, 0, fmt.Errorf("%s: timeout must be positive, got %d", fn, n)
		}
		d = time.Duration(n)
	}
	return hv, m, d, nil
}

// linearizable(history, model, timeout=None) -> bool
func (c *Checker) linearizableBuiltin(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	r, err := c.linCheck(b.Name(), args, kwargs)
	if err != nil {
		return nil, err
	}
	return starlark.Bool(r.ok), nil
}

// linearizability(history, model, timeout=None) -> dict: the report.
func (c *Checker) linearizabilityBuiltin(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	r, err := c.linCheck(b.Name(), args, kwargs)
	if err != nil {
		return nil, err
	}
	if r.ok {
		d := starlark.NewDict(1)
		d.SetKey(starlark.String("linearizable"), starlark.True)
		d.Freeze()
		return d, nil
	}
	return r.report, nil
}

func (c *Checker) linCheck(fn string, args starlark.Tuple, kwargs []starlark.Tuple) (*linResult, error) {
	hv, m, timeout, err := c.linArgs(fn, args, kwargs)
	if err != nil {
		return nil, err
	}
	lc := &linChecker{c: c, fn: fn, m: m, timeout: timeout}
	switch h := hv.(type) {
	case *History:
		c.read(dep{depHistory, h.id, 0})
		if h.failed {
			return nil, fmt.Errorf("%s: history %q is incomplete: its function failed at #%d", fn, h.name, h.failedStep)
		}
		return lc.checkHistory(h)
	case *starlark.List, starlark.Tuple:
		ops, err := handBuilt(fn, hv.(starlark.Indexable))
		if err != nil {
			return nil, err
		}
		return lc.checkOps(ops)
	}
	return nil, fmt.Errorf("%s: want a history (declared with history()) or a list of operations, got %s", fn, hv.Type())
}

// handBuilt reads a list of operations written in the script: dicts or
// structs with client, input, output, call and ret (ret None: pending).
func handBuilt(fn string, xs starlark.Indexable) ([]*linOp, error) {
	ops := make([]*linOp, xs.Len())
	for i := range ops {
		get := func(name string) (starlark.Value, error) {
			switch x := xs.Index(i).(type) {
			case *starlark.Dict:
				v, found, err := x.Get(starlark.String(name))
				if err != nil || !found {
					return starlark.None, err
				}
				return v, nil
			case starlark.HasAttrs:
				v, err := x.Attr(name)
				if err != nil || v == nil {
					return starlark.None, nil
				}
				return v, nil
			}
			return nil, fmt.Errorf("%s: operation %d is a %s; want a dict or struct with client, input, output, call, ret", fn, i, xs.Index(i).Type())
		}
		op := &linOp{id: starlark.MakeInt(i), callStep: -1, retStep: -1, output: starlark.None}
		vals := map[string]starlark.Value{}
		for _, f := range []string{"client", "input", "output", "call", "ret"} {
			v, err := get(f)
			if err != nil {
				return nil, err
			}
			vals[f] = v
		}
		if s, ok := starlark.AsString(vals["client"]); ok {
			op.client = s
		} else if vals["client"] != starlark.None {
			op.client = vals["client"].String()
		} else {
			op.client = "-"
		}
		op.input, op.output = freeze(vals["input"]), freeze(vals["output"])
		if err := starlark.AsInt(vals["call"], &op.call); err != nil {
			return nil, fmt.Errorf("%s: operation %d: call must be an int (a time or a step)", fn, i)
		}
		if vals["ret"] == starlark.None {
			op.pending, op.ret, op.output = true, math.MaxInt64, starlark.None
		} else if err := starlark.AsInt(vals["ret"], &op.ret); err != nil || op.ret < op.call {
			return nil, fmt.Errorf("%s: operation %d: ret must be None (pending) or an int not before call", fn, i)
		}
		ops[i] = op
	}
	return ops, nil
}

// linChecker runs one linearizable() or linearizability() call.
type linChecker struct {
	c       *Checker
	fn      string
	m       *Model
	timeout time.Duration
}

// checkHistory checks a declared history, through its cache for the
// model: only partitions with new or completed operations are checked.
func (lc *linChecker) checkHistory(h *History) (*linResult, error) {
	cache := h.caches[lc.m]
	if cache == nil {
		cache = &linCache{byKey: map[string]int{}}
		h.caches[lc.m] = cache
	}
	for ; cache.pos < len(h.changes); cache.pos++ {
		i := h.changes[cache.pos]
		op := h.ops[i]
		t, isNew := op.ret, i == len(cache.part)
		if isNew { // a new operation: find its partition
			p, err := lc.partitionOf(cache, op)
			if err != nil {
				return nil, err
			}
			cache.part = append(cache.part, p)
			cache.parts[p].ops = append(cache.parts[p].ops, i)
			t = op.call
		}
		part := cache.parts[cache.part[i]]
		part.dirty = true
		if isNew && part.base > 0 && t < part.end {
			// Called before the cut (times out of step order: a merge
			// of hosts' clocks): the settled operations are no longer
			// all before it.
			part.reset()
		}
		if !isNew && part.passed(i) {
			// A pending operation the cut passed returned after all:
			// the configurations placed it with no output.
			part.reset()
			part.patience = 2 * part.pendingPatience()
		}
		if part.result != nil && !part.result.ok && (t <= part.judged || !isNew && op.call <= part.judged) {
			// A time at or before what the check saw may change the
			// smallest window. And an operation pending then that
			// returns may make the history linearizable: a model may
			// refuse a pending operation (output None) that, returned,
			// orders before another (an inc whose value a read saw).
			part.result = nil
		}
	}
	for p, part := range cache.parts {
		if part.dirty {
			r, err := lc.checkPart(h, part, cache.keys[p])
			if err != nil {
				return nil, err
			}
			part.result, part.dirty = r, false
		}
	}
	for _, part := range cache.parts {
		if part.result != nil && !part.result.ok {
			return part.result, nil
		}
	}
	return &linResult{ok: true}, nil
}

// checkPart checks a partition of a declared history whose operations
// changed: from its settled prefix's states when it has one, settling
// more of it after a pass.
func (lc *linChecker) checkPart(h *History, part *linPart, key starlark.Value) (*linResult, error) {
	opsFrom := func(from int) []*linOp {
		ops := make([]*linOp, len(part.ops)-from)
		for j, i := range part.ops[from:] {
			ops[j] = h.ops[i]
		}
		return ops
	}
	if part.result != nil && !part.result.ok {
		// Still the violation found before; only the counts grew.
		return &linResult{report: withCounts(part.result.report, len(h.ops), len(part.ops))}, nil
	}
	if part.frontier == nil {
		part.frontier = []linConfig{{state: lc.m.init}}
	}
	starts := make([]linStart, len(part.frontier))
	for i, c := range part.frontier {
		starts[i] = linStart{part.suffix(h, c), c.state}
	}
	res, err := lc.decideAny(starts)
	if err != nil {
		return nil, err
	}
	if res != porcupine.Ok {
		// The whole partition, for the verdict and its report.
		all := opsFrom(0)
		r, err := lc.checkPartition(all, key, len(h.ops))
		if err != nil || r.ok {
			part.reset()
			return r, err
		}
		for _, op := range all {
			part.judged = max(part.judged, op.call)
			if !op.pending {
				part.judged = max(part.judged, op.ret)
			}
		}
		return r, nil
	}
	return &linResult{ok: true}, lc.settle(h, part)
}

// reset forgets the settled prefix: the next check searches the whole
// partition again and settles it anew.
func (part *linPart) reset() {
	part.base, part.open, part.frontier, part.end, part.stuck = 0, nil, nil, 0, -1
	part.floats, part.floatBy, part.isFloat = nil, nil, nil
}

// float moves the pending operations open at the cut that no
// configuration placed to part.floats, and forgets those that every one
// placed: they are before the cut in every way the prefix may have gone,
// as a returned operation is (a crashed client's write that a read saw
// stays pending, and would otherwise stay open at every later cut).
func (part *linPart) float(op func(int) *linOp) {
	kept := part.open[:0]
	for _, i := range part.open {
		placed := 0
		for _, c := range part.frontier {
			if slices.Contains(c.lin, i) {
				placed++
			}
		}
		if placed == len(part.frontier) && placed > 0 {
			for j := range part.frontier {
				part.frontier[j].lin = slices.DeleteFunc(slices.Clone(part.frontier[j].lin), func(x int) bool { return x == i })
			}
			continue
		}
		if placed > 0 || !op(i).pending {
			kept = append(kept, i)
			continue
		}
		if part.floatBy == nil {
			part.floatBy, part.isFloat = map[string][]int{}, map[int]bool{}
		}
		part.floats = append(part.floats, i)
		part.isFloat[i] = true
		for _, k := range elementKeys(op(i)) {
			part.floatBy[k] = append(part.floatBy[k], i)
		}
	}
	part.open = kept
}

// unfloat takes the positions of walked out of part.floats (a walk
// placed them in some configuration, or may have).
func (part *linPart) unfloat(walked []int) {
	for _, i := range walked {
		delete(part.isFloat, i)
	}
	part.floats = slices.DeleteFunc(part.floats, func(i int) bool { return !part.isFloat[i] })
}

// floatsSeen are the floating operations whose input an output of ops
// holds (a crashed client's write that a read saw), in position order.
func (part *linPart) floatsSeen(ops []*linOp) []int {
	var out []int
	for _, o := range ops {
		for _, k := range o.outputKeys() {
			for _, i := range part.floatBy[k] {
				if part.isFloat[i] && !slices.Contains(out, i) {
					out = append(out, i)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// elementKeys are the keys of op's input that seenInOutputs compares
// with outputs: its elements, or the whole when it has none.
func elementKeys(op *linOp) []string {
	keys := op.inputKeys()
	if _, ok := op.input.(starlark.Indexable); ok {
		return keys[1:]
	}
	return keys
}

// floatsSearched is how many floating operations a check searches
// whatever the outputs: past it, only those an output after the cut
// holds (a check that then fails searches the whole partition).
const floatsSearched = 8

// Bounds on settling: past them the stretch stays in the searched part,
// as every operation did before.
const (
	settleOps     = 24   // operations placed in one move of the cut
	settleConfigs = 64   // ways the settled prefix may have gone
	settleSteps   = 4096 // model steps to find them, per move
)

// linConfig is one way the settled prefix of a partition may have gone:
// the model state its linearization ends in, and which of the
// operations open at the cut (part.open) it linearized before the cut.
type linConfig struct {
	state starlark.Value
	lin   []int // positions in part.ops, sorted; a subset of part.open
}

// suffix is what a check searches after config c: the operations open at
// the cut that c did not linearize, then those called after it.
func (part *linPart) suffix(h *History, c linConfig) []*linOp {
	var ops []*linOp
	for _, i := range part.open {
		if !slices.Contains(c.lin, i) {
			ops = append(ops, h.ops[part.ops[i]])
		}
	}
	for _, i := range part.ops[part.base:] {
		ops = append(ops, h.ops[i])
	}
	floats := part.floats
	if len(floats) > floatsSearched {
		floats = part.floatsSeen(ops)
	}
	for _, i := range floats {
		ops = append(ops, h.ops[part.ops[i]])
	}
	return ops
}

// settle moves the cut of a partition that just passed its check as far
// as it can. A cut is a moment just before an operation's call: the
// operations called before it either returned before it (they are
// linearized before the cut in every linearization) or are open across
// it (linearized on either side); those called after it come after it.
// The cut moves only past operations whose outputs are known, or
// pending ones that many later operations have passed (a client that
// crashed with it open: it may take effect at any later point, or
// never); and never past the last call (the next operation's call may
// come before it).
func (lc *linChecker) settle(h *History, part *linPart) error {
	if part.stuck == part.base {
		return nil
	}
	op := func(i int) *linOp { return h.ops[part.ops[i]] }
	n := len(part.ops)
	patience := part.pendingPatience()
	// The cut before k needs every call before k earlier than op k's,
	// and none after it earlier (times out of step order: no cut there).
	minCall := make([]int64, n+1)
	minCall[n] = math.MaxInt64
	for k := n - 1; k >= part.base; k-- {
		minCall[k] = min(op(k).call, minCall[k+1])
	}
	// The latest call before k. Those before the cut need no looking at
	// (the hot path: the cut would be O(history) per check): they are
	// all earlier than op base's call, which counts from k = base+1.
	maxCall := int64(math.MinInt64)
	for k := part.base; k < n; k++ {
		if k > part.base {
			maxCall = max(maxCall, op(k-1).call)
			if op(k-1).pending && n-k < patience {
				return nil // it may well return soon
			}
		}
		t := op(k).call
		if k == part.base || maxCall >= t || minCall[k] < t {
			continue
		}
		// The operations to place: those open at the old cut, then those
		// called since. Required: those that returned before t.
		region := slices.Clone(part.open)
		for i := part.base; i < k; i++ {
			region = append(region, i)
		}
		if len(region) > settleOps {
			part.stuck = part.base
			return nil
		}
		// The floating operations are left out of the walk (each
		// configuration may still place them after the cut), but for
		// those whose input an output in the region holds; all of them
		// only if the region cannot be placed without.
		regionOps := make([]*linOp, len(region))
		for j, i := range region {
			regionOps[j] = op(i)
		}
		walked := part.floatsSeen(regionOps)
		configs, err := lc.configsAfter(op, part.frontier, append(slices.Clone(region), walked...), t)
		if err == nil && len(configs) == 0 && len(part.floats) > len(walked) && len(region)+len(part.floats) <= 64 {
			walked = slices.Clone(part.floats)
			configs, err = lc.configsAfter(op, part.frontier, append(slices.Clone(region), walked...), t)
		}
		if err != nil {
			return err
		}
		if len(configs) == 0 { // over the bounds (the search above found one)
			part.stuck = part.base
			return nil
		}
		var open []int
		for _, i := range append(region, walked...) {
			if op(i).ret >= t {
				open = append(open, i)
			}
		}
		slices.Sort(open)
		part.unfloat(walked)
		part.frontier, part.open, part.base, part.end = configs, open, k, t
		part.float(op)
	}
	return nil
}

// configsAfter lists the configurations at a cut at time t, from those
// at the previous cut: each way to place, after a configuration's
// linearized operations, the rest of region (positions; their outputs
// known) in an order real time allows, all of those that returned before
// t and any of those that did not. nil when there are more than
// settleConfigs or finding them takes more than settleSteps model steps.
func (lc *linChecker) configsAfter(op func(int) *linOp, from []linConfig, region []int, t int64) ([]linConfig, error) {
	var out []linConfig
	steps := 0
	// The model steps of covers count too: a bound on the walk's alone
	// let a move cost many times it.
	modelBase := lc.c.last.ModelSteps
	add := func(list []linConfig, c linConfig) ([]linConfig, bool) {
		for _, x := range list {
			if slices.Equal(x.lin, c.lin) {
				if eq, err := starlark.Equal(x.state, c.state); err == nil && eq {
					return list, false
				}
			}
		}
		return append(list, c), true
	}
	// addConfig adds c to out unless a configuration there covers it,
	// and drops those c covers.
	addConfig := func(c linConfig) error {
		for _, x := range out {
			if ok, err := lc.covers(op, x, c); ok || err != nil {
				return err
			}
		}
		kept := out[:0]
		for _, x := range out {
			ok, err := lc.covers(op, c, x)
			if err != nil {
				return err
			}
			if !ok {
				kept = append(kept, x)
			}
		}
		out = append(kept, c)
		return nil
	}
	for _, c := range from {
		var todo []int // region less what c linearized
		for _, i := range region {
			if !slices.Contains(c.lin, i) {
				todo = append(todo, i)
			}
		}
		required := uint64(0)
		for j, i := range todo {
			if op(i).ret < t {
				required |= 1 << j
			}
		}
		seen := map[uint64][]linConfig{} // by placed mask: states reached
		var walk func(done uint64, s starlark.Value) (bool, error)
		walk = func(done uint64, s starlark.Value) (bool, error) {
			var fresh bool
			if seen[done], fresh = add(seen[done], linConfig{state: s}); !fresh {
				return true, nil
			}
			if done&required == required {
				// Open at the new cut: what c linearized and this walk
				// placed among the operations that did not return by t.
				var lin []int
				for _, i := range c.lin {
					if op(i).ret >= t {
						lin = append(lin, i)
					}
				}
				for j, i := range todo {
					if done&(1<<j) != 0 && op(i).ret >= t {
						lin = append(lin, i)
					}
				}
				slices.Sort(lin)
				if err := addConfig(linConfig{state: s, lin: lin}); err != nil {
					return false, err
				}
				if len(out) > settleConfigs {
					return false, nil
				}
			}
			for j, i := range todo {
				if done&(1<<j) != 0 {
					continue
				}
				first := true // no other operation left returned before its call
				for l, o := range todo {
					if done&(1<<l) == 0 && l != j && op(o).ret < op(i).call {
						first = false
						break
					}
				}
				if !first {
					continue
				}
				if steps++; steps > settleSteps || lc.c.last.ModelSteps-modelBase > 2*settleSteps {
					return false, nil
				}
				ok, next, err := lc.step(s, op(i))
				if err != nil {
					return false, err
				}
				if !ok {
					continue
				}
				if more, err := walk(done|1<<j, next); err != nil || !more {
					return false, err
				}
			}
			return true, nil
		}
		if more, err := walk(0, c.state); err != nil || !more {
			return nil, err
		}
	}
	return out, nil
}

// covers tells whether configuration a covers b: every way to go on
// from b is one from a. It does when b linearized a's operations and
// pending ones besides, and a is in b's state or reaches it by placing
// those first after the cut: they may take effect at any point after
// their calls, which came before it, first or last (and the settling is
// undone if one returns).
// Without this, every crashed client's write would add a configuration
// that holds its value, and keep it as long as the write stays pending.
func (lc *linChecker) covers(op func(int) *linOp, a, b linConfig) (bool, error) {
	if len(a.lin) > len(b.lin) {
		return false, nil
	}
	var extra []*linOp
	j := 0
	for _, i := range b.lin {
		if j < len(a.lin) && a.lin[j] == i {
			j++
			continue
		}
		if !op(i).pending {
			return false, nil
		}
		extra = append(extra, op(i))
	}
	if j < len(a.lin) {
		return false, nil
	}
	// The same state: a places them last, after everything else.
	if eq, err := starlark.Equal(a.state, b.state); err != nil || eq {
		return eq, err
	}
	s := a.state
	for _, o := range extra {
		ok, next, err := lc.step(s, o)
		if err != nil && lc.c.budget.err == nil {
			// A model that fails on this order of steps (which no walk
			// may have taken): no cover, rather than an error.
			return false, nil
		}
		if err != nil || !ok {
			return false, err
		}
		s = next
	}
	eq, err := starlark.Equal(s, b.state)
	return err == nil && eq, nil
}

// pendingPatience is part.patience, or its default.
func (part *linPart) pendingPatience() int {
	if part.patience == 0 {
		return settleOps
	}
	return part.patience
}

// passed tells whether the cut has passed the operation at h.ops[i].
func (part *linPart) passed(i int) bool {
	pos, found := slices.BinarySearch(part.ops, i)
	return found && pos < part.base
}

// withCounts is a violation's report with the history's and the
// partition's operation counts as they are now.
func withCounts(report *starlark.Dict, total, partOps int) *starlark.Dict {
	d := starlark.NewDict(report.Len())
	for _, kv := range report.Items() {
		d.SetKey(kv[0], kv[1])
	}
	d.SetKey(starlark.String("operations"), starlark.MakeInt(total))
	d.SetKey(starlark.String("partition_operations"), starlark.MakeInt(partOps))
	d.Freeze()
	return d
}

func (lc *linChecker) partitionOf(cache *linCache, op *linOp) (int, error) {
	var key starlark.Value = starlark.None
	if lc.m.partition != nil {
		k, err := starlark.Call(lc.c.thread, lc.m.partition, starlark.Tuple{op.input}, nil)
		if err != nil {
			return 0, err
		}
		key = k
	}
	s := key.Type() + ":" + key.String()
	p, ok := cache.byKey[s]
	if !ok {
		p = len(cache.parts)
		cache.byKey[s] = p
		cache.parts = append(cache.parts, &linPart{stuck: -1})
		cache.keys = append(cache.keys, key)
	}
	return p, nil
}

// checkOps checks a hand-built list (no cache: the list is new each time).
func (lc *linChecker) checkOps(ops []*linOp) (*linResult, error) {
	cache := &linCache{byKey: map[string]int{}}
	for i, op := range ops {
		p, err := lc.partitionOf(cache, op)
		if err != nil {
			return nil, err
		}
		cache.parts[p].ops = append(cache.parts[p].ops, i)
	}
	for p, part := range cache.parts {
		sub := make([]*linOp, len(part.ops))
		for j, i := range part.ops {
			sub[j] = ops[i]
		}
		r, err := lc.checkPartition(sub, cache.keys[p], len(ops))
		if err != nil {
			return nil, err
		}
		if !r.ok {
			return r, nil
		}
	}
	return &linResult{ok: true}, nil
}

// checkPartition checks one partition; on a violation it also finds the
// smallest failing window and the longest partial linearization.
func (lc *linChecker) checkPartition(ops []*linOp, key starlark.Value, total int) (*linResult, error) {
	res, err := lc.decide(ops, lc.m.init)
	if err != nil {
		return nil, err
	}
	if res == porcupine.Ok {
		return &linResult{ok: true}, nil
	}
	// The smallest window: the shortest real-time prefix of the partition
	// that is already not linearizable (the operations invoked by time t,
	// those not returned by then pending). Linearizability of prefixes is
	// monotone (a later operation cannot repair earlier outputs), so a
	// binary search over the partition's call and return times finds it.
	var times []int64
	for _, op := range ops {
		times = append(times, op.call)
		if !op.pending {
			times = append(times, op.ret)
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	var ferr error
	cut := sort.Search(len(times), func(i int) bool {
		if ferr != nil {
			return true
		}
		r, err := lc.decide(prefix(ops, times[i]), lc.m.init)
		if err != nil {
			ferr = err
			return true
		}
		return r == porcupine.Illegal
	})
	if ferr != nil {
		return nil, ferr
	}
	window := ops
	if cut < len(times) {
		window = prefix(ops, times[cut])
	}
	_, info, err := lc.run(window, lc.m.init, true)
	if err != nil {
		return nil, err
	}
	// The longest partial linearization porcupine found: the most
	// operations of the window it could order legally before getting
	// stuck.
	var longest []int
	if pl := info.PartialLinearizations(); len(pl) > 0 {
		for _, l := range pl[0] {
			if len(l) > len(longest) || len(l) == len(longest) && slices.Compare(l, longest) < 0 {
				longest = l
			}
		}
	}
	in := map[int]bool{}
	var partial, rest, win []starlark.Value
	for _, i := range longest {
		in[i] = true
		partial = append(partial, starlark.String(window[i].describe()))
	}
	for i, op := range window {
		win = append(win, starlark.String(op.describe()))
		if !in[i] {
			rest = append(rest, starlark.String(op.describe()))
		}
	}
	list := func(vs []starlark.Value) *starlark.List {
		l := starlark.NewList(vs)
		l.Freeze()
		return l
	}
	d := starlark.NewDict(8)
	set := func(k string, v starlark.Value) { d.SetKey(starlark.String(k), v) }
	set("linearizable", starlark.False)
	set("model", starlark.String(lc.m.name))
	set("partition", key)
	set("operations", starlark.MakeInt(total))
	set("partition_operations", starlark.MakeInt(len(ops)))
	first, last := window[0], window[0]
	for _, op := range window {
		if !op.pending && (last.pending || op.ret > last.ret) {
			last = op
		}
	}
	if first.callStep >= 0 {
		end := last.retStep
		if last.pending {
			end = last.callStep
		}
		set("window_steps", starlark.Tuple{starlark.MakeInt(first.callStep), starlark.MakeInt(end)})
	}
	set("window", list(win))
	set("partial_linearization", list(partial))
	set("not_linearized", list(rest))
	d.Freeze()
	return &linResult{ok: false, report: d}, nil
}

// decide checks one partition, first with only those of its pending
// operations whose input holds a value some returned operation output (a
// write whose value was read). A pending operation may never have taken
// effect, so leaving any of them out is one completion of the history:
// if that is linearizable, so is the history. And it is the cheap
// question: porcupine may place a pending operation anywhere after its
// call, and a liveness bug that leaves fifty writes pending made the
// search run out of its budget. Only when that subset is not
// linearizable are all of them searched, the one answer that can say
// "not linearizable". (Leaving out every pending operation is no
// cheaper: proving that a history needs one is an exhaustive search.)
func (lc *linChecker) decide(ops []*linOp, init starlark.Value) (porcupine.CheckResult, error) {
	return lc.decideAny([]linStart{{ops, init}})
}

// linStart is operations to order and the model state to start from.
type linStart struct {
	ops   []*linOp
	state starlark.Value
}

// decideAny is decide for several starts (the configurations of a
// settled prefix): Ok if the operations of any is linearizable from its
// state. Every start is asked the cheap question before any is asked the
// whole one: a configuration that fails costs a search of every pending
// operation, and a crashed client's stay pending.
func (lc *linChecker) decideAny(starts []linStart) (porcupine.CheckResult, error) {
	// An error of one start (a search that timed out) is returned only
	// if no other start is linearizable.
	var firstErr error
	whole := make([]bool, len(starts))
	for i, st := range starts {
		seen := seenInOutputs(st.ops)
		sub := slices.DeleteFunc(slices.Clone(st.ops), func(op *linOp) bool { return op.pending && !seen(op) })
		if len(sub) == len(st.ops) {
			whole[i] = true // the same question as the whole one
		}
		if len(sub) < len(st.ops) || len(starts) > 1 {
			res, _, err := lc.run(sub, st.state, false)
			if err == nil && res == porcupine.Ok {
				return res, nil
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	res := porcupine.Illegal
	for i, st := range starts {
		if whole[i] && len(starts) > 1 {
			continue // asked above
		}
		r, _, err := lc.run(st.ops, st.state, false)
		if err == nil && r == porcupine.Ok {
			return r, nil
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		res = r
	}
	return res, firstErr
}

// seenInOutputs tells which pending operations have a value in their
// input that a returned operation output (the output itself, or one of
// its elements).
func seenInOutputs(ops []*linOp) func(*linOp) bool {
	seen := map[string]bool{}
	for _, op := range ops {
		for _, k := range op.outputKeys() {
			seen[k] = true
		}
	}
	return func(op *linOp) bool {
		keys := op.inputKeys()
		if _, ok := op.input.(starlark.Indexable); ok {
			keys = keys[1:] // its elements, not the whole
		}
		for _, k := range keys {
			if seen[k] {
				return true
			}
		}
		return false
	}
}

// prefix is the sub-history seen at time t: operations invoked by t, with
// those that return after t pending.
func prefix(ops []*linOp, t int64) []*linOp {
	var out []*linOp
	for _, op := range ops {
		if op.call > t {
			continue
		}
		if !op.pending && op.ret > t {
			cp := *op
			cp.pending, cp.ret, cp.output, cp.retStep, cp.outKeys = true, math.MaxInt64, starlark.None, -1, nil
			op = &cp
		}
		out = append(out, op)
	}
	return out
}

// run checks one partition with porcupine. The model's step runs on the
// checker's thread from porcupine's goroutine while this one waits; the
// mutex and stopped make sure no step runs once porcupine has returned
// (on a timeout porcupine returns without waiting for its search).
func (lc *linChecker) run(ops []*linOp, init starlark.Value, verbose bool) (porcupine.CheckResult, porcupine.LinearizationInfo, error) {
	if len(ops) == 0 && !verbose {
		// Nothing to order (decide leaves out every pending operation
		// no output saw): a search with a short timeout= could still
		// report it unknown on a loaded machine.
		return porcupine.Ok, porcupine.LinearizationInfo{}, nil
	}
	c := lc.c
	var mu sync.Mutex
	stopped, late := false, false
	var stepErr error
	timeout := lc.timeout
	if left := time.Until(c.budget.deadline); timeout == 0 || left < timeout {
		timeout = max(left, time.Millisecond)
	}
	deadline := time.Now().Add(timeout)
	model := porcupine.Model{
		Init: func() any { return init },
		Step: func(state, input, output any) (bool, any) {
			mu.Lock()
			defer mu.Unlock()
			if stopped || stepErr != nil {
				return false, nil
			}
			ok, next, err := lc.step(state.(starlark.Value), input.(*linOp))
			// A step that ends past the deadline makes the answer late
			// whatever porcupine says: on a loaded machine its search
			// can end before its timer is seen, and which one it then
			// reports is chance.
			if time.Now().After(deadline) {
				late = true
			}
			if err != nil {
				stepErr = err
				return false, nil
			}
			return ok, next
		},
		Equal: func(a, b any) bool {
			eq, err := starlark.Equal(a.(starlark.Value), b.(starlark.Value))
			return err == nil && eq
		},
		Hash: func(s any) uint64 {
			h, err := s.(starlark.Value).Hash()
			if err != nil {
				return 0 // dicts and lists: one bucket, told apart by Equal
			}
			return uint64(h)
		},
	}
	pops := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		pops[i] = porcupine.Operation{Input: op, Output: op.output, Call: op.call, Return: op.ret}
	}
	var res porcupine.CheckResult
	var info porcupine.LinearizationInfo
	if verbose {
		res, info = porcupine.CheckOperationsVerbose(model, pops, timeout)
	} else {
		res = porcupine.CheckOperationsTimeout(model, pops, timeout)
	}
	mu.Lock()
	stopped = true
	err := stepErr
	if late {
		res = porcupine.Unknown
	}
	mu.Unlock()
	if err != nil {
		return res, info, err
	}
	if res == porcupine.Unknown {
		return res, info, fmt.Errorf("%s: linearizability unknown: the check of %d operation(s) (model %q) did not finish within %v; raise timeout= or --script-time",
			lc.fn, len(ops), lc.m.name, timeout.Round(time.Millisecond))
	}
	return res, info, nil
}

// step runs the model's step on one operation from state: whether the
// operation may take effect there, and the state after it. A pending
// operation the model refuses is taken as never having taken effect (a
// no-op): porcupine must place every operation somewhere.
func (lc *linChecker) step(state starlark.Value, op *linOp) (bool, starlark.Value, error) {
	c := lc.c
	c.last.ModelSteps++
	v, err := starlark.Call(c.thread, lc.m.step, starlark.Tuple{state, op.input, op.output}, nil)
	if err == nil && c.budget.err != nil {
		err = c.budget.err
	}
	if err != nil {
		return false, nil, err
	}
	t, ok := v.(starlark.Tuple)
	if !ok || len(t) != 2 {
		return false, nil, fmt.Errorf("%s: model %q: step must return (ok, new_state), got %s", lc.fn, lc.m.name, v.Type())
	}
	b, ok := t[0].(starlark.Bool)
	if !ok {
		return false, nil, fmt.Errorf("%s: model %q: step must return (ok, new_state) with ok a bool, got %s", lc.fn, lc.m.name, t[0].Type())
	}
	if !b {
		if op.pending {
			return true, state, nil
		}
		return false, nil, nil
	}
	// States are shared by porcupine's search branches and its cache:
	// frozen, a step cannot change one another branch uses. They are
	// kept and hashed as derived values are, and bounded as they are: a
	// state nested one level deeper at every step overflowed the Go
	// stack in the cache's hash, which ends the process.
	next, err := freezeChecked(t[1])
	if err != nil {
		return false, nil, fmt.Errorf("%s: model %q: the new state: %w", lc.fn, lc.m.name, err)
	}
	return true, next, nil
}
