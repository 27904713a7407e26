package predicates

import (
	"errors"
	"fmt"

	"go.starlark.net/starlark"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
)

// Matcher evaluates one Starlark expression over `event` per event: the
// filter of `replay events --match`. It sees the event exactly as
// predicates do (same value, same event.msg decoding) under the same
// budgets, but nothing that needs a replay (node state, tables, now()),
// so listing events stays a read of the trace.
type Matcher struct {
	c    *Checker
	fn   starlark.Callable
	desc string // what a watch (Options.Watch) says it runs
}

// NewMatcher compiles expr. tr gives the time origin of event.time; codec
// decodes event.msg (nil: the system is unknown, and event.msg fails).
func NewMatcher(expr string, tr *replay.Trace, codec *node.Codec, opts Options) (*Matcher, error) {
	if opts.MaxSteps == 0 {
		opts.MaxSteps = DefaultMaxSteps
	}
	if opts.MemoryBudget <= 0 {
		opts.MemoryBudget = DefaultMemoryBudget
	}
	if opts.TimeBudget <= 0 {
		opts.TimeBudget = DefaultTimeBudget
	}
	// Parsed alone first: a syntax error is reported at its place in the
	// expression, and anything but one expression is refused.
	if err := noNUL("expression", expr); err != nil {
		return nil, err
	}
	if _, err := fileOptions.ParseExpr("expression", expr, 0); err != nil {
		return nil, oneLine(err)
	}
	// Then compiled once, as the body of a function called per event,
	// with the sandbox's rewriting that keeps it within its budgets.
	src := "def match():\n    return (\n" + expr + "\n    )\n"
	f, err := fileOptions.Parse("expression", src, 0)
	if err != nil {
		return nil, oneLine(err)
	}
	guardFile(f)
	c := &Checker{opts: opts, start: tr.Header.Start, step: -1, msgStep: -1, codec: codec, system: tr.Header.System,
		index: index{}, nodeNow: map[node.ID]int64{}, unknown: map[node.ID]bool{}}
	c.thread = &starlark.Thread{Name: "match", Print: c.print} // bounded as a script's
	c.budget = newBudget(c.thread, opts)
	c.budget.slot = opts.Watch.BoundedSlot(StuckBound(opts.TimeBudget))
	pre := starlark.StringDict{"event": &eventValue{c: c}}
	c.sandboxBuiltins(pre)
	prog, err := starlark.FileProgram(f, pre.Has)
	if err != nil {
		return nil, oneLine(err)
	}
	desc := "the expression " + expr
	c.budget.begin("load", -1, &desc)
	g, err := prog.Init(c.thread, pre)
	c.budget.end()
	if err != nil {
		return nil, oneLine(err)
	}
	return &Matcher{c: c, fn: g["match"].(starlark.Callable), desc: desc}, nil
}

// Match evaluates the expression for the event at step. It must be a
// bool: a filter that is an int or a message by mistake is an error, not
// silently truthy.
func (m *Matcher) Match(step int, ev *node.Event) (bool, error) {
	m.c.step, m.c.ev = step, ev
	v, err := m.c.call(nil, m.fn, nil, &m.desc)
	if err != nil {
		return false, oneLine(err)
	}
	b, ok := v.(starlark.Bool)
	if !ok {
		return false, fmt.Errorf("the expression is a %s (%s), not a bool", v.Type(), shortValue(v))
	}
	return bool(b), nil
}

// oneLine keeps an error's message without the Starlark backtrace (the
// expression's synthetic wrapper would only confuse).
func oneLine(err error) error {
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		return errors.New(ee.Msg)
	}
	return err
}

func shortValue(v starlark.Value) string {
	s := v.String()
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
