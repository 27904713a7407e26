package predicates

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// The budgeted replacements of Starlark's allocating built-ins, operators
// and methods. Each estimates what it is about to allocate, checks it
// against the memory budget, then does what the original does. Scripts
// reach the operators and methods through the rewriting in rewrite.go.

// Names of the hidden built-ins the rewritten syntax calls. A middle dot
// cannot start a Starlark identifier, so no script can name them.
const (
	opPlus       = "·+"
	opStar       = "·*"
	opPercent    = "·%"
	opAugPlus    = "·+="
	opAugStar    = "·*="
	opAugPercent = "·%="
	opAttr       = "·."
)

// guardedMethods are the methods ·. wraps: those whose result can be far
// larger than their receiver and arguments.
var guardedMethods = map[string]bool{
	"join": true, "replace": true, "format": true, "split": true, "rsplit": true, "splitlines": true,
	"elems": true, "elem_ords": true, "codepoints": true, "codepoint_ords": true,
	"extend": true, "union": true, "update": true, "symmetric_difference": true,
}

// sandboxBuiltins are the predeclared names that shadow Starlark's
// universe and serve the rewritten syntax.
func (c *Checker) sandboxBuiltins(d starlark.StringDict) {
	b := c.budget
	perElem := func(size uint64) func(starlark.Tuple, []starlark.Tuple) (uint64, error) {
		return func(args starlark.Tuple, _ []starlark.Tuple) (uint64, error) {
			if len(args) == 0 {
				return 0, nil
			}
			n, made := elemCount(args[0])
			return mul(n, size+made), nil
		}
	}
	d["list"] = c.guard("list", perElem(16))
	d["tuple"] = c.guard("tuple", perElem(16))
	d["reversed"] = c.guard("reversed", perElem(16))
	d["sorted"] = c.guard("sorted", perElem(32)) // values and keys
	d["set"] = c.guard("set", perElem(80))
	d["dict"] = c.guard("dict", perElem(80))
	d["enumerate"] = c.guard("enumerate", perElem(48))
	d["bytes"] = c.guard("bytes", perElem(1))
	d["zip"] = c.guard("zip", func(args starlark.Tuple, _ []starlark.Tuple) (uint64, error) {
		rows := uint64(math.MaxUint64)
		for _, a := range args {
			n, _ := elemCount(a)
			rows = min(rows, n)
		}
		if len(args) == 0 {
			return 0, nil
		}
		return mul(rows, 16+16*uint64(len(args))), nil
	})
	printed := func(args starlark.Tuple, kwargs []starlark.Tuple) (uint64, error) {
		var n uint64
		for _, a := range args {
			if _, ok := a.(starlark.String); ok {
				n += uint64(len(a.(starlark.String)))
				continue
			}
			s, err := c.printSize(a)
			if err != nil {
				return 0, err
			}
			n += s
		}
		return n, nil
	}
	d["str"] = c.guard("str", func(args starlark.Tuple, kwargs []starlark.Tuple) (uint64, error) {
		if len(args) == 1 {
			if _, ok := args[0].(starlark.String); ok {
				return 0, nil // str of a string is itself
			}
		}
		return printed(args, kwargs)
	})
	d["repr"] = c.guard("repr", func(args starlark.Tuple, _ []starlark.Tuple) (uint64, error) {
		var n uint64
		for _, a := range args {
			s, err := c.printSize(a)
			if err != nil {
				return 0, err
			}
			n += s
		}
		return n, nil
	})
	d["print"] = c.guard("print", func(args starlark.Tuple, kwargs []starlark.Tuple) (uint64, error) {
		n, err := printed(args, kwargs)
		return 2 * n, err // the line and its buffer
	})
	d["fail"] = c.guard("fail", printed)
	d["int"] = c.guard("int", func(args starlark.Tuple, _ []starlark.Tuple) (uint64, error) {
		if len(args) > 0 {
			if s, ok := starlark.AsString(args[0]); ok && len(s) > maxIntChars {
				return 0, fmt.Errorf("a string of %d characters is too long to convert (at most %d)", len(s), maxIntChars)
			}
		}
		return 0, nil
	})
	d["range"] = starlark.NewBuiltin("range", func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		v, err := starlark.Universe["range"].(*starlark.Builtin).CallInternal(thread, args, kwargs)
		if err != nil {
			return nil, err
		}
		return &lazyRange{r: v.(starlark.Sliceable), b: b}, nil
	})
	d[opPlus] = c.binary(syntax.PLUS, false)
	d[opStar] = c.binary(syntax.STAR, false)
	d[opPercent] = c.binary(syntax.PERCENT, false)
	d[opAugPlus] = c.binary(syntax.PLUS, true)
	d[opAugStar] = c.binary(syntax.STAR, true)
	d[opAugPercent] = c.binary(syntax.PERCENT, true)
	d[opAttr] = starlark.NewBuiltin(opAttr, c.attr)
}

// guard wraps the universe built-in name: estimate, check, call.
func (c *Checker) guard(name string, estimate func(starlark.Tuple, []starlark.Tuple) (uint64, error)) *starlark.Builtin {
	orig := starlark.Universe[name].(*starlark.Builtin)
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return c.guarded(name, thread, orig, args, kwargs, estimate)
	})
}

func (c *Checker) guarded(name string, thread *starlark.Thread, orig *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple,
	estimate func(starlark.Tuple, []starlark.Tuple) (uint64, error)) (starlark.Value, error) {
	n, err := estimate(args, kwargs)
	if err == nil {
		err = c.budget.reserve(n)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	v, err := orig.CallInternal(thread, args, kwargs)
	if err == nil && c.budget.err != nil {
		// A budgeted iterator stopped early: the result is cut short.
		return nil, fmt.Errorf("%s: %w", name, c.budget.err)
	}
	return v, err
}

// mul multiplies sizes, saturating.
func mul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}

// elemCount is how many elements iterating v yields (0 if unknown) and
// the bytes each costs if it is made on the fly (a string's elements),
// not merely referred to.
func elemCount(v starlark.Value) (uint64, uint64) {
	n := starlark.Len(v)
	if _, isString := v.(starlark.String); n < 0 || isString {
		return 0, 0
	}
	switch v.Type() {
	case "string.elems", "string.codepoints":
		return uint64(n), 16
	}
	return uint64(n), 0
}

// size is about how many bytes a value of a built-in type holds, for the
// operators' estimates.
func size(v starlark.Value) uint64 {
	switch x := v.(type) {
	case starlark.String:
		return uint64(len(x))
	case starlark.Bytes:
		return uint64(len(x))
	case *starlark.List:
		return 16 * uint64(x.Len())
	case starlark.Tuple:
		return 16 * uint64(len(x))
	case starlark.Int:
		return uint64(x.BigInt().BitLen()/8 + 8)
	}
	return 0
}

// binary is the budgeted form of x op y (aug: of x op= y, returning y for
// the augmented assignment to apply).
func (c *Checker) binary(op syntax.Token, aug bool) *starlark.Builtin {
	name := op.String()
	if aug {
		name += "="
	}
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) != 2 || len(kwargs) != 0 {
			return nil, fmt.Errorf("%s: internal error: want two operands", name)
		}
		x, y := args[0], args[1]
		n, err := c.binarySize(op, x, y)
		if err == nil {
			err = c.budget.reserve(n)
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s %s: %w", x.Type(), op, y.Type(), err)
		}
		if aug {
			return y, nil
		}
		return starlark.Binary(op, x, y)
	})
}

// binarySize estimates the result of x op y in bytes, or fails for a
// product of integers too large to compute in bounded time.
func (c *Checker) binarySize(op syntax.Token, x, y starlark.Value) (uint64, error) {
	switch op {
	case syntax.PLUS:
		if _, ok := x.(starlark.Int); ok {
			return 0, nil
		}
		return size(x) + size(y), nil
	case syntax.STAR:
		xi, xInt := x.(starlark.Int)
		yi, yInt := y.(starlark.Int)
		var seq starlark.Value
		var count starlark.Int
		switch {
		case xInt && yInt:
			if bits := xi.BigInt().BitLen() + yi.BigInt().BitLen(); bits > maxIntBits {
				return 0, fmt.Errorf("the product would be too large (%d bits; at most %d)", bits, maxIntBits)
			}
			return 0, nil
		case yInt:
			seq, count = x, yi // repeat: seq * n
		case xInt:
			seq, count = y, xi // n * seq
		default:
			return 0, nil
		}
		k, ok := count.Int64()
		if !ok || k <= 0 {
			return 0, nil // Starlark refuses, or makes nothing
		}
		return mul(size(seq), uint64(k)), nil
	case syntax.PERCENT:
		s, ok := x.(starlark.String)
		if !ok {
			return 0, nil
		}
		var args []starlark.Value
		switch a := y.(type) {
		case starlark.Tuple:
			args = a
		case *starlark.Dict:
			for _, kv := range a.Items() {
				args = append(args, kv[1])
			}
		default:
			args = []starlark.Value{y}
		}
		return c.formatSize(string(s), strings.Count(string(s), "%"), args)
	}
	return 0, nil
}

// formatSize bounds a format's result: every placeholder may print the
// largest argument.
func (c *Checker) formatSize(format string, holes int, args []starlark.Value) (uint64, error) {
	var largest uint64
	for _, a := range args {
		n, err := c.printSize(a)
		if err != nil {
			return 0, err
		}
		largest = max(largest, n)
	}
	return uint64(len(format)) + mul(uint64(holes), largest), nil
}

// attr is x.name for the guarded method names: the method, budgeted.
func (c *Checker) attr(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) != 2 || len(kwargs) != 0 {
		return nil, fmt.Errorf("%s: internal error: want a value and a name", opAttr)
	}
	x := args[0]
	name, _ := starlark.AsString(args[1])
	v, err := getAttr(thread, x, name)
	if err != nil {
		return nil, err
	}
	m, ok := v.(*starlark.Builtin)
	if !ok || m.Receiver() != x {
		return v, nil // a field, not a built-in method
	}
	estimate := c.methodSize(x, name)
	if estimate == nil {
		return v, nil
	}
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return c.guarded(name, thread, m, args, kwargs, estimate)
	}).BindReceiver(x), nil
}

// getAttr is x.name with Starlark's own errors (and spelling hints).
func getAttr(thread *starlark.Thread, x starlark.Value, name string) (starlark.Value, error) {
	v, err := starlark.Universe["getattr"].(*starlark.Builtin).CallInternal(thread, starlark.Tuple{x, starlark.String(name)}, nil)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "getattr: "))
	}
	return v, nil
}

// methodSize is the estimate of a guarded method of x, nil if the method
// needs none.
func (c *Checker) methodSize(x starlark.Value, name string) func(starlark.Tuple, []starlark.Tuple) (uint64, error) {
	if s, ok := x.(starlark.String); ok {
		return c.stringMethodSize(string(s), name)
	}
	_, isList := x.(*starlark.List)
	_, isSet := x.(*starlark.Set)
	if isList && name == "extend" || isSet && (name == "union" || name == "update" || name == "symmetric_difference") {
		per := uint64(16)
		if isSet {
			per = 80
		}
		return func(args starlark.Tuple, _ []starlark.Tuple) (uint64, error) {
			var n uint64
			for _, a := range args {
				k, made := elemCount(a)
				n += mul(k, per+made)
			}
			return n, nil
		}
	}
	return nil
}

func (c *Checker) stringMethodSize(s, name string) func(starlark.Tuple, []starlark.Tuple) (uint64, error) {
	n := uint64(len(s))
	switch name {
	case "join":
		return func(args starlark.Tuple, _ []starlark.Tuple) (uint64, error) {
			if len(args) != 1 {
				return 0, nil
			}
			var total, count uint64
			if it, ok := args[0].(starlark.Indexable); ok {
				if _, isString := args[0].(starlark.String); !isString {
					for i := range it.Len() {
						count++
						if e, ok := it.Index(i).(starlark.String); ok {
							total += uint64(len(e))
						}
					}
				}
			}
			if count > 0 {
				total += mul(n, count-1)
			}
			return total, nil
		}
	case "replace":
		return func(args starlark.Tuple, _ []starlark.Tuple) (uint64, error) {
			if len(args) < 2 {
				return 0, nil
			}
			old, ok1 := starlark.AsString(args[0])
			repl, ok2 := starlark.AsString(args[1])
			if !ok1 || !ok2 || len(repl) <= len(old) {
				return 0, nil
			}
			k := uint64(strings.Count(s, old))
			if len(args) > 2 {
				if lim, ok := args[2].(starlark.Int); ok {
					if l, ok := lim.Int64(); ok && l >= 0 {
						k = min(k, uint64(l))
					}
				}
			}
			return n + mul(k, uint64(len(repl)-len(old))), nil
		}
	case "format":
		return func(args starlark.Tuple, kwargs []starlark.Tuple) (uint64, error) {
			vals := append([]starlark.Value(nil), args...)
			for _, kv := range kwargs {
				vals = append(vals, kv[1])
			}
			return c.formatSize(s, strings.Count(s, "{"), vals)
		}
	case "split", "rsplit", "splitlines":
		return func(args starlark.Tuple, _ []starlark.Tuple) (uint64, error) {
			pieces := n/2 + 1
			if sep, ok := starlark.AsString(firstOr(args)); ok && sep != "" && name != "splitlines" {
				pieces = uint64(strings.Count(s, sep)) + 1
			} else if name == "splitlines" {
				pieces = uint64(strings.Count(s, "\n")+strings.Count(s, "\r")) + 1
			}
			return mul(pieces, 48), nil // a slot and a string each
		}
	case "elems", "elem_ords", "codepoints", "codepoint_ords":
		// The view is lazy, but whatever materialises it allocates about
		// this much, in calls that cannot check as they go.
		return func(starlark.Tuple, []starlark.Tuple) (uint64, error) { return mul(n, 32), nil }
	}
	return nil
}

func firstOr(args starlark.Tuple) starlark.Value {
	if len(args) == 0 {
		return starlark.None
	}
	return args[0]
}

// printSize is about the length of v printed (by str, repr, print or a
// format), computed without printing it. It fails for values nested more
// than maxDepth deep, integers too large to print in bounded time, and
// sizes beyond the memory budget (it stops counting there).
func (c *Checker) printSize(v starlark.Value) (uint64, error) {
	p := &sizer{b: c.budget, limit: c.budget.memory, onPath: map[starlark.Value]bool{}}
	err := p.walk(v, 0)
	return p.n, err
}

type sizer struct {
	b      *budget
	limit  uint64
	n      uint64
	visits int
	onPath map[starlark.Value]bool // the containers being printed (cycles print as ...)
}

var errTooBig = errors.New("too big") // the count passed the limit: stop

func (p *sizer) walk(v starlark.Value, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("a value nested more than %d levels deep cannot be printed", maxDepth)
	}
	if p.visits++; p.visits%(1<<16) == 0 {
		if err := p.b.check(0); err != nil {
			return err
		}
	}
	if p.n > p.limit {
		return nil // over the budget anyway: the caller's check fails
	}
	switch x := v.(type) {
	case starlark.String:
		p.n += uint64(len(x)) + 2
	case starlark.Bytes:
		p.n += 4*uint64(len(x)) + 3
	case starlark.Int:
		bits := x.BigInt().BitLen()
		if bits > maxIntBits {
			return fmt.Errorf("an integer of %d bits is too large to print (at most %d)", bits, maxIntBits)
		}
		p.n += uint64(bits)/3 + 2
	case *starlark.List:
		return p.container(x, depth, x.Len(), x.Index)
	case starlark.Tuple:
		return p.container(x, depth, len(x), x.Index)
	case *starlark.Dict:
		items := x.Items()
		return p.container(x, depth, len(items), func(i int) starlark.Value { return items[i] })
	case *starlark.Set:
		return p.container(x, depth, x.Len(), func(i int) starlark.Value { return nil })
	case *starlarkstruct.Struct:
		return p.fields(x, depth)
	case *goStruct:
		return p.fields(x, depth)
	case *frozenStruct:
		return p.fields(x, depth)
	default:
		p.n += uint64(len(v.String()))
	}
	return nil
}

func (p *sizer) container(x starlark.Value, depth, n int, at func(int) starlark.Value) error {
	p.n += 8 // brackets, "set([", "...": about that
	if _, hashable := x.(starlark.Tuple); !hashable {
		if p.onPath[x] {
			return nil
		}
		p.onPath[x] = true
		defer delete(p.onPath, x)
	}
	if s, ok := x.(*starlark.Set); ok {
		it := s.Iterate()
		defer it.Done()
		var e starlark.Value
		for it.Next(&e) {
			p.n += 2
			if err := p.walk(e, depth+1); err != nil || p.n > p.limit {
				return err
			}
		}
		return nil
	}
	for i := range n {
		p.n += 2 // ", "
		if err := p.walk(at(i), depth+1); err != nil || p.n > p.limit {
			return err
		}
	}
	return nil
}

func (p *sizer) fields(x starlark.HasAttrs, depth int) error {
	p.n += 16
	for _, name := range x.AttrNames() {
		f, err := x.Attr(name)
		if err != nil || f == nil {
			continue
		}
		p.n += uint64(len(name)) + 3
		if err := p.walk(f, depth+1); err != nil || p.n > p.limit {
			return err
		}
	}
	return nil
}

// lazyRange is range(...) with a budgeted iterator: built-ins that walk a
// range in Go (max, all, set.union, ...) stop when the time or memory
// budget runs out instead of running on for billions of elements.
type lazyRange struct {
	r starlark.Sliceable // Starlark's own range value
	b *budget
}

var (
	_ starlark.Sliceable  = (*lazyRange)(nil)
	_ starlark.Container  = (*lazyRange)(nil)
	_ starlark.Comparable = (*lazyRange)(nil)
)

func (r *lazyRange) String() string        { return r.r.String() }
func (r *lazyRange) Type() string          { return "range" }
func (r *lazyRange) Freeze()               {}
func (r *lazyRange) Truth() starlark.Bool  { return r.r.Truth() }
func (r *lazyRange) Hash() (uint32, error) { return r.r.Hash() }
func (r *lazyRange) Len() int              { return r.r.Len() }
func (r *lazyRange) Index(i int) starlark.Value {
	return r.r.Index(i)
}
func (r *lazyRange) Slice(start, end, step int) starlark.Value {
	return &lazyRange{r: r.r.Slice(start, end, step).(starlark.Sliceable), b: r.b}
}
func (r *lazyRange) Has(y starlark.Value) (bool, error) { return r.r.(starlark.Container).Has(y) }
func (r *lazyRange) CompareSameType(op syntax.Token, y starlark.Value, depth int) (bool, error) {
	return r.r.(starlark.Comparable).CompareSameType(op, y.(*lazyRange).r, depth)
}
func (r *lazyRange) Iterate() starlark.Iterator { return &rangeIter{r: r, n: r.r.Len()} }

type rangeIter struct {
	r    *lazyRange
	i, n int
}

func (it *rangeIter) Next(p *starlark.Value) bool {
	if it.i >= it.n {
		return false
	}
	if it.i%pollElems == pollElems-1 {
		if err := it.r.b.check(0); err != nil {
			it.r.b.fail(err)
			return false
		}
	}
	*p = it.r.r.Index(it.i)
	it.i++
	return true
}

func (it *rangeIter) Done() {}

// freezeChecked is freeze for values a script made (derived values,
// stability measures): they are kept and printed in reports, so they must
// neither contain themselves nor be nested too deeply to print.
func freezeChecked(v starlark.Value) (starlark.Value, error) {
	var path [8]starlark.Value
	left := maxKeptWeight
	if _, err := keepable(v, 0, path[:0], &left); err != nil {
		return nil, err
	}
	return freeze(v), nil
}

// sameObject reports whether a and b are one list, dict or tuple (not
// merely equal ones): a value a derived function returned unchanged.
func sameObject(a, b starlark.Value) bool {
	switch x := a.(type) {
	case *starlark.List:
		y, ok := b.(*starlark.List)
		return ok && x == y
	case *starlark.Dict:
		y, ok := b.(*starlark.Dict)
		return ok && x == y
	case starlark.Tuple:
		y, ok := b.(starlark.Tuple)
		return ok && len(x) == len(y) && len(x) > 0 && &x[0] == &y[0]
	}
	return false
}

// freezeResult is freezeChecked for the value a function returned that
// nothing else holds (an aux or alarm result: the evaluation that made it
// is over, and a script's globals are frozen): without node state in it,
// it is frozen where it is instead of copied. An aux value made at every
// step of an open interval was copied at every step. A value a script
// passes on and goes on using (h.call's input) must be copied.
func freezeResult(v starlark.Value) (starlark.Value, error) {
	v, _, err := freezeWeighed(v)
	return v, err
}

// freezeWeighed is freezeResult that also says what the value weighs,
// as maxKeptWeight counts.
func freezeWeighed(v starlark.Value) (starlark.Value, int, error) {
	var path [8]starlark.Value
	left := maxKeptWeight
	live, err := keepable(v, 0, path[:0], &left)
	if err != nil {
		return nil, 0, err
	}
	if !live {
		v.Freeze()
		return v, maxKeptWeight - left, nil
	}
	// A row or view weighs one until frozen into what it holds (a whole
	// log): the copy is what is kept, so the copy is weighed.
	v = freeze(v)
	left = maxKeptWeight
	if _, err := keepable(v, 0, path[:0], &left); err != nil {
		return nil, 0, err
	}
	return v, maxKeptWeight - left, nil
}

// maxKeptHistory bounds what a derived value's kept versions (keep=N)
// weigh together, four values of the largest size, by bounding each to
// its share. Each was bounded alone, so keep=40 of a new 100 MB string
// at every step took 6.3 GB.
const maxKeptHistory = 4 * maxKeptWeight

// elements lists what a list, tuple or dict holds (a dict's keys and
// values); ok is false for other values.
func elements(v starlark.Value) (elems []starlark.Value, ok bool) {
	switch x := v.(type) {
	case *starlark.List:
		for i := range x.Len() {
			elems = append(elems, x.Index(i))
		}
	case starlark.Tuple:
		elems = x
	case *starlark.Dict:
		for _, it := range x.Items() {
			elems = append(elems, it[0], it[1])
		}
	default:
		return nil, false
	}
	return elems, true
}

// maxKeptWeight bounds the size of a value kept (a derived value, an
// aux or alarm result, an ordered key, a history's operation): each
// element counts one for every place it appears, a string one more per
// 64 bytes. A tuple of itself twice, fifty times over, takes a few
// hundred bytes and has 2^50 places: checking, freezing, copying and
// printing it each walk them all (a hostile script's derived value hung
// a check for good, and one of 2^20 places with a 1,000-byte string
// printed an aux of gigabytes).
const maxKeptWeight = 1 << 22

// weigh takes a string's weight (one per 64 bytes) from left.
func weigh(left *int, bytes int) error {
	if *left -= bytes / 64; *left < 0 {
		return fmt.Errorf("the value is too large to keep: more than %d elements, counting each as often as it appears (and a string once more per 64 bytes)", maxKeptWeight)
	}
	return nil
}

// keepable checks what freezeChecked promises, and tells whether v holds
// live node state (rows, their views and structs), which freeze copies.
// onPath holds the lists and dicts v lies in (a short stack: values are
// at most maxDepth deep), and elements are visited in place: an aux
// value or derived value is checked at every step it is computed, where
// a map and a list of a dict's items per call cost as much as the check.
// left is what is left of maxKeptWeight.
func keepable(v starlark.Value, depth int, onPath []starlark.Value, left *int) (live bool, err error) {
	if depth > maxDepth {
		return false, fmt.Errorf("the value is nested more than %d levels deep", maxDepth)
	}
	if err := weigh(left, 64); err != nil {
		return false, err
	}
	// each visits an element: the first error stops the walk.
	each := func(e starlark.Value) bool {
		l, err1 := keepable(e, depth+1, onPath, left)
		live = live || l
		err = err1
		return err == nil
	}
	switch x := v.(type) {
	case *listView, *mapView, *Row, *goStruct:
		return true, nil
	case starlark.String:
		return false, weigh(left, len(x))
	case starlark.Bytes:
		return false, weigh(left, len(x))
	case starlark.Tuple:
		for _, e := range x {
			if !each(e) {
				return false, err
			}
		}
		return live, nil
	case *starlark.Set:
		// Its elements are hashable (tuples of tuples...): freezing it
		// walks them as a tuple's.
		it := x.Iterate()
		defer it.Done()
		var e starlark.Value
		for it.Next(&e) {
			if !each(e) {
				return false, err
			}
		}
		return live, nil
	case starlarkStruct, *starlark.Function:
		// Freezing a function freezes what it holds (a closure's free
		// variables): a derived value of lambda: t, t a tuple of itself
		// twice fifty times over, hung the freeze for good.
		if slices.Contains(onPath, v) {
			return live, nil // a closure that names itself
		}
		onPath = append(onPath, v)
		for _, e := range held(x) {
			if !each(e) {
				return false, err
			}
		}
		return live, nil
	case *starlark.List, *starlark.Dict:
	default:
		return false, nil
	}
	for _, p := range onPath {
		if p == v {
			return false, fmt.Errorf("the value contains itself")
		}
	}
	onPath = append(onPath, v)
	switch x := v.(type) {
	case *starlark.List:
		for i := range x.Len() {
			if !each(x.Index(i)) {
				return false, err
			}
		}
	case *starlark.Dict:
		it := x.Iterate()
		defer it.Done()
		var k starlark.Value
		for it.Next(&k) {
			e, _, _ := x.Get(k)
			if !each(k) || !each(e) {
				return false, err
			}
		}
	}
	return live, nil
}

// maxGlobalDepth bounds how deeply a global may be nested: an evaluation
// nesting a global further (within its own memory budget) made a value
// deep enough for Starlark's recursive hashing to overflow the Go stack,
// which kills the process (a hostile script: a tuple nested 5.5 million
// levels at load, 5.5 million more in a predicate, used as a dict key).
const maxGlobalDepth = 10_000

// tooDeepGlobal names a global nested more than maxGlobalDepth levels
// ("" if none). Values are walked without recursion, each shared one
// once (a tuple of itself twice, over and over, has exponentially many
// paths).
func tooDeepGlobal(globals starlark.StringDict) string {
	heights := map[any]int{}
	for _, name := range globals.Keys() {
		if height(globals[name], heights) > maxGlobalDepth {
			return name
		}
	}
	return ""
}

// height is how many levels of containers v nests (0: not one), or
// maxGlobalDepth+1 as soon as it is found to nest more; heights memoises
// the heights of the values walked whole, by identity.
func height(v starlark.Value, heights map[any]int) int {
	type frame struct {
		key   any
		elems []starlark.Value
		next  int
		h     int
	}
	open := func(v starlark.Value) (frame, bool) {
		f := frame{h: 1}
		switch x := v.(type) {
		case starlark.Tuple:
			if len(x) == 0 {
				return frame{}, false
			}
			f.key, f.elems = [2]any{&x[0], len(x)}, x
		case *starlark.List, *starlark.Dict:
			f.key = x
			f.elems, _ = elements(x)
		case *starlark.Set:
			f.key = x
			for e := range starlark.Elements(x) {
				f.elems = append(f.elems, e)
			}
		case *starlark.Function, starlarkStruct:
			// What a function or a struct holds is reached by calling or
			// reading it: a tuple nested millions deep hidden as a
			// closure's free variable (G = lambda: t) overflowed the
			// stack once a predicate nested it further and hashed it.
			f.key, f.elems, f.h = x, held(x), 0
		default:
			return frame{}, false
		}
		return f, true
	}
	root, ok := open(v)
	if !ok {
		return 0
	}
	if h, done := heights[root.key]; done {
		return h
	}
	stack := []frame{root}
	onStack := map[any]bool{root.key: true}
	for {
		top := &stack[len(stack)-1]
		if top.next == len(top.elems) {
			h := top.h
			heights[top.key] = h
			delete(onStack, top.key)
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return h
			}
			stack[len(stack)-1].h = max(stack[len(stack)-1].h, h+1)
			continue
		}
		child, ok := open(top.elems[top.next])
		top.next++
		if !ok {
			continue
		}
		if h, done := heights[child.key]; done {
			top.h = max(top.h, h+1)
			continue
		}
		if onStack[child.key] {
			continue // a cycle (a closure that names itself): no deeper
		}
		if len(stack) == maxGlobalDepth {
			return maxGlobalDepth + 1
		}
		onStack[child.key] = true
		stack = append(stack, child)
	}
}

// selfFreezing names a global whose freeze would never end ("" if none):
// one holding a function that holds itself through free variables,
// tuples and structs only (a list or dict on the way stops a freeze, as
// it is frozen once). go.starlark.net freezes a function's free variables
// every time it is reached: a recursive inner function kept as a global
// overflowed the Go stack at load, in every verb.
func selfFreezing(globals starlark.StringDict) string {
	done := map[any]bool{} // walked whole: holds no such cycle
	onPath := map[*starlark.Function]bool{}
	var cyclic func(v starlark.Value, depth int) bool
	cyclic = func(v starlark.Value, depth int) bool {
		if depth > maxGlobalDepth {
			return false // refused as too deep (tooDeepGlobal)
		}
		var key any
		var elems []starlark.Value
		switch x := v.(type) {
		case *starlark.Function:
			if onPath[x] {
				return true
			}
			key, elems = x, held(x)
		case starlarkStruct:
			key, elems = x, held(x)
		case starlark.Tuple:
			if len(x) == 0 {
				return false
			}
			key, elems = [2]any{&x[0], len(x)}, x
		case *starlark.List, *starlark.Dict:
			// A cycle through it stops there; a function in it may
			// still hold itself by another way: walked with a path of
			// its own.
			if done[x] {
				return false
			}
			done[x] = true
			es, _ := elements(x)
			saved := onPath
			onPath = map[*starlark.Function]bool{}
			defer func() { onPath = saved }()
			for _, e := range es {
				if cyclic(e, depth+1) {
					return true
				}
			}
			return false
		default:
			return false
		}
		if done[key] {
			return false
		}
		if f, ok := v.(*starlark.Function); ok {
			onPath[f] = true
			defer delete(onPath, f)
		}
		for _, e := range elems {
			if cyclic(e, depth+1) {
				return true
			}
		}
		done[key] = true
		return false
	}
	for _, name := range globals.Keys() {
		if cyclic(globals[name], 0) {
			return name
		}
	}
	return ""
}

// held lists what a function (its free variables and defaults) or a
// struct (its fields) holds.
func held(v starlark.Value) []starlark.Value {
	var out []starlark.Value
	switch x := v.(type) {
	case *starlark.Function:
		for i := range x.NumFreeVars() {
			if _, fv := x.FreeVar(i); fv != nil {
				out = append(out, fv)
			}
		}
		for i := range x.NumParams() {
			if d := x.ParamDefault(i); d != nil {
				out = append(out, d)
			}
		}
	case starlarkStruct:
		for _, name := range x.AttrNames() {
			if f, _ := x.Attr(name); f != nil {
				out = append(out, f)
			}
		}
	}
	return out
}
