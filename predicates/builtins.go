package predicates

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/replaycheck/replaycheck/internal/printable"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/system"
)

func systemConfig(tr *replay.Trace) system.Config {
	// One run's configuration, so that what factories derive once per run
	// (system.Config.Shared) is built once here too: checkTableTypes
	// builds a handler per node, and chord's ring table per handler was
	// O(nodes²) before the first step.
	return system.NewConfig(tr.Header.Bug, tr.Nodes, tr.Header.Params)
}

func (c *Checker) builtins() starlark.StringDict {
	b := func(name string, fn func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error)) *starlark.Builtin {
		return starlark.NewBuiltin(name, fn)
	}
	d := starlark.StringDict{
		"table":           b("table", c.declTable),
		"derived":         b("derived", c.declDerived),
		"ordered":         b("ordered", c.declOrdered),
		"safety":          b("safety", c.declPredicate("safety")),
		"liveness":        b("liveness", c.declPredicate("liveness")),
		"forall":          b("forall", c.quantBuiltin(qForall)),
		"exists":          b("exists", c.quantBuiltin(qExists)),
		"count":           b("count", c.quantBuiltin(qCount)),
		"implies":         b("implies", implies),
		"now":             b("now", c.nowBuiltin),
		"since_change":    b("since_change", c.sinceChange),
		"timers":          b("timers", c.timersBuiltin),
		"tasks":           b("tasks", c.tasksBuiltin),
		"unknown_nodes":   b("unknown_nodes", c.unknownNodes),
		"down_nodes":      b("down_nodes", c.downNodes),
		"crashes":         b("crashes", c.crashesBuiltin),
		"nodes":           b("nodes", c.nodesBuiltin),
		"struct":          starlark.NewBuiltin("struct", starlarkstruct.Make),
		"history":         b("history", c.declHistory),
		"model":           b("model", c.declModel),
		"linearizable":    b("linearizable", c.linearizableBuiltin),
		"linearizability": b("linearizability", c.linearizabilityBuiltin),
		"event":           &eventValue{c: c},
		"msgs":            &msgsValue{c: c},
		"MICROSECOND":     starlark.MakeInt64(int64(time.Microsecond)),
		"MILLISECOND":     starlark.MakeInt64(int64(time.Millisecond)),
		"SECOND":          starlark.MakeInt64(int64(time.Second)),
		"MINUTE":          starlark.MakeInt64(int64(time.Minute)),
	}
	if m, err := c.bundledModels(); err == nil {
		d["models"] = m
	} else {
		// models.star is part of the binary: it cannot fail unless the
		// engine itself is broken.
		panic(err)
	}
	c.sandboxBuiltins(d)
	return d
}

func (c *Checker) declaring(name string) error {
	if !c.loading {
		return fmt.Errorf("%s: declarations are allowed only while the script loads, not inside predicates", name)
	}
	return nil
}

func (c *Checker) claimName(thread *starlark.Thread, kind, name string) error {
	if err := checkName(kind, name); err != nil {
		return err
	}
	pos := thread.CallFrame(1).Pos
	if prev, dup := c.names[name]; dup {
		return fmt.Errorf("%s %q is already declared at %s", kind, name, prev)
	}
	c.names[name] = pos
	return nil
}

// maxNameBytes bounds a declared name: reports print it on every line
// about it.
const maxNameBytes = 256

// checkName refuses a name a report cannot print as a name: empty, a
// control character or line break (a name holding a newline forged a line
// of check's report), bidi controls, or too long.
func checkName(kind, name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		article := "a"
		if strings.ContainsRune("aeiou", rune(kind[0])) {
			article = "an"
		}
		return fmt.Errorf("%s %s needs a name (got %q)", article, kind, name)
	case len(name) > maxNameBytes:
		return fmt.Errorf("%s name %q... is %d bytes long: at most %d", kind, strings.ToValidUTF8(name[:40], ""), len(name), maxNameBytes)
	case strings.IndexFunc(name, printable.Unsafe) >= 0:
		return fmt.Errorf("%s name %q holds a control or bidi character: names are printed in reports, one per line", kind, name)
	}
	return nil
}

// table(TYPE, columns=None, keep=1)
func (c *Checker) declTable(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if !c.watching {
		if err := c.declaring("table"); err != nil {
			return nil, err
		}
	}
	var typ string
	var columns, views, chained *starlark.List
	keep := 1
	if err := starlark.UnpackArgs("table", args, kwargs, "type", &typ, "columns?", &columns, "keep?", &keep,
		"views?", &views, "chained?", &chained); err != nil {
		return nil, err
	}
	if keep < 1 {
		return nil, fmt.Errorf("table(%q): keep must be at least 1, got %d", typ, keep)
	}
	t := &Table{c: c, id: len(c.tables) + 1, name: typ, keep: keep, pos: thread.CallFrame(1).Pos,
		rows: map[rowKey]*rowState{}, byNode: map[node.ID][]*rowState{}, history: map[rowKey]*rowHistory{}}
	if columns != nil {
		t.columns = []string{}
		for i := range columns.Len() {
			s, ok := starlark.AsString(columns.Index(i))
			if !ok {
				return nil, fmt.Errorf("table(%q): columns must be field names (strings)", typ)
			}
			t.columns = append(t.columns, s)
		}
	}
	for _, l := range []struct {
		arg  string
		list *starlark.List
		into *[]string
	}{{"views", views, &t.views}, {"chained", chained, &t.chained}} {
		if l.list == nil {
			continue
		}
		for i := range l.list.Len() {
			s, ok := starlark.AsString(l.list.Index(i))
			if !ok {
				return nil, fmt.Errorf("table(%q): %s must be column names (strings)", typ, l.arg)
			}
			*l.into = append(*l.into, s)
		}
	}
	if c.watching {
		return c.watchTable(t), nil
	}
	c.tables = append(c.tables, t)
	return t, nil
}

// derived(NAME, FN, keep=1)
func (c *Checker) declDerived(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := c.declaring("derived"); err != nil {
		return nil, err
	}
	var name string
	var fn starlark.Callable
	keep := 1
	if err := starlark.UnpackArgs("derived", args, kwargs, "name", &name, "fn", &fn, "keep?", &keep); err != nil {
		return nil, err
	}
	if keep < 1 {
		return nil, fmt.Errorf("derived(%q): keep must be at least 1, got %d", name, keep)
	}
	if err := c.claimName(thread, "derived value", name); err != nil {
		return nil, err
	}
	d := &Derived{c: c, name: name, desc: "derived value " + name, pos: thread.CallFrame(1).Pos, fn: fn, keep: keep, id: len(c.derived) + 1}
	d.frame = c.newFrame(frameDerived, nil)
	c.derived = append(c.derived, d)
	return d, nil
}

// safety(NAME, FN, aux=None) and liveness(NAME, FN, aux=None, alarm=None)
func (c *Checker) declPredicate(kind string) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if err := c.declaring(kind); err != nil {
			return nil, err
		}
		var name string
		var fn, aux, alarm starlark.Callable
		params := []any{"name", &name, "fn", &fn, "aux?", &aux}
		if kind == "liveness" {
			params = append(params, "alarm?", &alarm)
		}
		if err := starlark.UnpackArgs(kind, args, kwargs, params...); err != nil {
			return nil, err
		}
		if err := c.claimName(thread, "predicate", name); err != nil {
			return nil, err
		}
		p := &Predicate{Name: name, Kind: kind, desc: kind + " predicate " + name, Pos: thread.CallFrame(1).Pos, fn: fn, aux: aux, alarm: alarm, holding: true}
		p.frame = c.newFrame(framePredicate, nil)
		c.preds = append(c.preds, p)
		return starlark.None, nil
	}
}

func (c *Checker) quantBuiltin(kind quantKind) func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
	return func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var xs starlark.Value
		var fn starlark.Callable
		if err := starlark.UnpackArgs(kind.String(), args, kwargs, "xs", &xs, "fn", &fn); err != nil {
			return nil, err
		}
		return c.quantify(kind, thread, xs, fn)
	}
}

func implies(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var a, c starlark.Value
	if err := starlark.UnpackPositionalArgs("implies", args, kwargs, 2, &a, &c); err != nil {
		return nil, err
	}
	return starlark.Bool(!bool(a.Truth()) || bool(c.Truth())), nil
}

func (c *Checker) nodeArg(name string, v starlark.Value) (node.ID, error) {
	s, ok := starlark.AsString(v)
	if !ok {
		return "", fmt.Errorf("%s: want a node ID (a string), got %s", name, v.Type())
	}
	id := node.ID(s)
	if _, known := c.nodeIdx[id]; !known {
		return "", fmt.Errorf("%s: %q is not a node of this trace", name, s)
	}
	return id, nil
}

// now(node=None): the run's time (the latest event time of the steps so
// far), or a node's (the time of its latest event), in ns since the start.
func (c *Checker) nowBuiltin(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var n starlark.Value = starlark.None
	if err := starlark.UnpackArgs("now", args, kwargs, "node?", &n); err != nil {
		return nil, err
	}
	if n == starlark.None {
		c.read(timeDep)
		c.noteNowRead()
		return starlark.MakeInt64(c.now), nil
	}
	id, err := c.nodeArg("now", n)
	if err != nil {
		return nil, err
	}
	c.read(dep{depNode, c.nodeIdx[id], 0})
	return starlark.MakeInt64(c.nodeNow[id]), nil
}

// since_change(x, field=None): time since a table, a row (or one of its
// fields) or a derived value last changed.
func (c *Checker) sinceChange(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x starlark.Value
	field := ""
	if err := starlark.UnpackArgs("since_change", args, kwargs, "x", &x, "field?", &field); err != nil {
		return nil, err
	}
	c.read(timeDep)
	var at int64
	switch v := x.(type) {
	case *Table:
		c.read(dep{depTableAny, v.id, 0})
		c.trackRead(item{kind: itemTableChanged, id: v.id})
		at = v.changed
	case *Row:
		rs := v.rs
		at = rs.hist.changed
		if field == "" {
			c.read(dep{depRow, rs.id, 0})
			c.trackRead(item{kind: itemRowChanged, id: rs.table.id, key: rs.key})
		} else {
			i := slices.IndexFunc(rs.table.columnsOf(rs.v.Type()), func(f state.Field) bool { return f.Name == field })
			if i < 0 {
				return nil, fmt.Errorf("since_change: %s has no column %q", rs.table.name, field)
			}
			rs.readCol(field)
			c.trackRead(item{kind: itemRowField, id: rs.table.id, key: rs.key, col: i})
			at = rs.hist.fieldTime[i]
		}
	case *Derived:
		if err := v.readable(); err != nil {
			return nil, err
		}
		c.read(dep{depDerived, v.id, 0})
		c.trackReadDerived(v, itemDerivedSince)
		at = v.since
	case *Ordered:
		if err := v.use("since_change"); err != nil {
			return nil, err
		}
		c.read(dep{depOrdered, v.id, 0})
		c.trackRead(item{kind: itemOrderedSince, id: v.id})
		at = v.since
	default:
		return nil, fmt.Errorf("since_change: want a table, a row, a derived value or an ordered index, got %s", x.Type())
	}
	return starlark.MakeInt64(c.now - at), nil
}

// checkField fails unless field is a column of the row: an observed field
// of its Go type, among columns= if the table restricts them. prev() and
// history() would otherwise answer a misspelt name with their default.
func (rs *rowState) checkField(fn, field string) error {
	t := rs.table
	cols := t.columnsOf(rs.v.Type())
	if slices.ContainsFunc(cols, func(f state.Field) bool { return f.Name == field }) {
		return nil
	}
	what := "field"
	if t.columns != nil {
		what = "column"
	}
	return fmt.Errorf("%s(%q): %s rows have no %s %q (%ss: %s)", fn, field, t.name, what, field, what, strings.Join(fieldNames(cols), ", "))
}

// runtimeOf reads the node argument of fn (timers, tasks), records the
// dependency on that node's runtime state, and returns its instance: nil
// when the node is not replayed or its state is unknown.
func (c *Checker) runtimeOf(fn string, args starlark.Tuple, kwargs []starlark.Tuple) (*node.Instance, error) {
	var n starlark.Value
	if err := starlark.UnpackArgs(fn, args, kwargs, "node", &n); err != nil {
		return nil, err
	}
	id, err := c.nodeArg(fn, n)
	if err != nil {
		return nil, err
	}
	c.read(dep{depNode, c.nodeIdx[id], 0})
	if c.unknown[id] {
		return nil, nil
	}
	return c.r.Instance(id), nil
}

// timers(node): names of the timers pending at a node, in the order set.
func (c *Checker) timersBuiltin(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	inst, err := c.runtimeOf("timers", args, kwargs)
	if err != nil {
		return nil, err
	}
	var names []starlark.Value
	if inst != nil {
		for _, t := range inst.Timers() {
			names = append(names, starlark.String(t.Name))
		}
	}
	l := starlark.NewList(names)
	l.Freeze()
	return l, nil
}

// tasks(node): the live tasks of a node (node.Go), by ID, each a struct
// with id, name, state ("runnable" or "blocked"), on (what it waits for,
// or what woke it), since (when, in ns of run time) and since_seq.
func (c *Checker) tasksBuiltin(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	inst, err := c.runtimeOf("tasks", args, kwargs)
	if err != nil {
		return nil, err
	}
	var out []starlark.Value
	if inst != nil {
		for _, t := range inst.Tasks() {
			out = append(out, starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{
				"id":        starlark.MakeUint64(uint64(t.ID)),
				"name":      starlark.String(t.Name),
				"state":     starlark.String(t.State),
				"on":        starlark.String(t.On),
				"since":     starlark.MakeInt64(t.Since - c.r.Trace().Header.Start),
				"since_seq": starlark.MakeUint64(t.SinceSeq),
			}))
		}
	}
	l := starlark.NewList(out)
	l.Freeze()
	return l, nil
}

func (c *Checker) unknownNodes(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackPositionalArgs("unknown_nodes", args, kwargs, 0); err != nil {
		return nil, err
	}
	c.read(unknownDep)
	var ids []string
	for id, u := range c.unknown {
		if u {
			ids = append(ids, string(id))
		}
	}
	sort.Strings(ids)
	return stringList(ids), nil
}

// down_nodes(): the nodes down at this step (a crash event, no restart
// since), each with the time of its crash; not those unknown_nodes()
// lists, whose state is not known. Read from the trace's index,
// not accumulated step by step, so a segment of check --jobs or a fork's
// check sees what a whole check sees.
func (c *Checker) downNodes(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackPositionalArgs("down_nodes", args, kwargs, 0); err != nil {
		return nil, err
	}
	c.read(downDep)
	c.read(unknownDep)
	if c.down != nil && c.downAt == c.step {
		return c.down, nil
	}
	tr := c.r.Trace()
	d := starlark.NewDict(0)
	for _, id := range tr.Nodes {
		if c.unknown[id] {
			continue // in unknown_nodes(): its recording stopped, or it is not replayed
		}
		if crash, down := tr.DownAt(id, c.step); down {
			if err := d.SetKey(starlark.String(id), starlark.MakeInt64(tr.Event(crash).Time-c.start)); err != nil {
				return nil, err
			}
		}
	}
	d.Freeze()
	c.down, c.downAt = d, c.step
	return d, nil
}

// crashes(node): how many crash events the node had up to this step.
func (c *Checker) crashesBuiltin(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var n starlark.Value
	if err := starlark.UnpackArgs("crashes", args, kwargs, "node", &n); err != nil {
		return nil, err
	}
	id, err := c.nodeArg("crashes", n)
	if err != nil {
		return nil, err
	}
	c.read(downDep)
	return starlark.MakeInt(c.r.Trace().Crashes(id, c.step)), nil
}

func (c *Checker) nodesBuiltin(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackPositionalArgs("nodes", args, kwargs, 0); err != nil {
		return nil, err
	}
	ids := make([]string, len(c.r.Trace().Nodes))
	for i, id := range c.r.Trace().Nodes {
		ids[i] = string(id)
	}
	return stringList(ids), nil
}

func stringList(ss []string) *starlark.List {
	vs := make([]starlark.Value, len(ss))
	for i, s := range ss {
		vs[i] = starlark.String(s)
	}
	l := starlark.NewList(vs)
	l.Freeze()
	return l
}

// eventValue is the `event` built-in: the step just executed.
type eventValue struct{ c *Checker }

func (e *eventValue) String() string        { return "event" }
func (e *eventValue) Type() string          { return "event" }
func (e *eventValue) Freeze()               {}
func (e *eventValue) Truth() starlark.Bool  { return true }
func (e *eventValue) Hash() (uint32, error) { return 0, fmt.Errorf("event is unhashable") }
func (e *eventValue) AttrNames() []string {
	return []string{"kind", "lamport", "msg", "msg_type", "node", "sender", "seq", "step", "task", "time", "timer", "woken_by"}
}
func (e *eventValue) Attr(name string) (starlark.Value, error) {
	c := e.c
	if c.ev == nil {
		return starlark.None, nil
	}
	c.read(evDep)
	ev := c.ev
	switch name {
	case "step":
		return starlark.MakeInt(c.step), nil
	case "node":
		return starlark.String(ev.Node), nil
	case "kind":
		return starlark.String(ev.Kind.String()), nil
	case "lamport":
		return starlark.MakeUint64(ev.Lamport), nil
	case "seq":
		return starlark.MakeUint64(ev.Seq), nil
	case "time":
		return starlark.MakeInt64(ev.Time - c.start), nil
	case "msg_type":
		if ev.MsgType == "" {
			return starlark.None, nil
		}
		return starlark.String(ev.MsgType), nil
	case "msg":
		return c.eventMsg()
	case "sender":
		if ev.Kind != node.KindRecv {
			return starlark.None, nil
		}
		return starlark.String(ev.From), nil
	case "timer":
		if ev.Kind != node.KindTimer {
			return starlark.None, nil
		}
		return starlark.String(ev.TimerName), nil
	case "task":
		if ev.Kind != node.KindTask {
			return starlark.None, nil
		}
		return starlark.String(ev.TaskName), nil
	case "woken_by":
		if ev.Kind != node.KindTask {
			return starlark.None, nil
		}
		return starlark.String(ev.Wake), nil
	}
	return nil, nil
}

// eventMsg is event.msg: the received message or input of the current
// event, decoded by the system's codec into the value a handler got (a
// struct reads as one with fields, as node state does); None for events
// without one. Decoded once per step.
func (c *Checker) eventMsg() (starlark.Value, error) {
	ev := c.ev
	if ev.MsgType == "" || ev.Kind != node.KindRecv && ev.Kind != node.KindInput {
		return starlark.None, nil
	}
	if c.msgStep == c.step && c.msgVal != nil {
		return c.msgVal, nil
	}
	if c.codec == nil {
		return nil, fmt.Errorf("event.msg: system %s is not known to this binary, so its messages cannot be decoded (event.msg_type still works)", c.system)
	}
	m, err := c.codec.Decode(ev.MsgType, ev.Payload)
	if err != nil {
		return nil, fmt.Errorf("event.msg: %w", err)
	}
	v := toStarlark(reflect.ValueOf(m), c.start)
	c.msgStep, c.msgVal = c.step, v
	return v, nil
}

// msgWindow keeps the recent receives for msgs.recent.
type msgWindow struct {
	entries []msgEntry
	span    int64 // the longest window asked for so far
	// stale counts the leading entries no window can reach any more,
	// so that each add looks at an entry once, not at every stale one
	// again (O(receives per minute) per receive on a long run).
	stale int
}

type msgEntry struct {
	at  int64
	typ string
}

func (w *msgWindow) add(at int64, typ string) {
	w.entries = append(w.entries, msgEntry{at, typ})
	span := max(w.span, int64(time.Minute))
	// Entries are appended in step order, roughly in time order; drop
	// those that no window can reach any more.
	for w.stale < len(w.entries) && w.entries[w.stale].at < at-span {
		w.stale++
	}
	if w.stale > len(w.entries)/2 {
		w.entries = slices.Delete(w.entries, 0, w.stale)
		w.stale = 0
	}
}

// msgsValue is the `msgs` built-in.
type msgsValue struct{ c *Checker }

func (m *msgsValue) String() string        { return "msgs" }
func (m *msgsValue) Type() string          { return "msgs" }
func (m *msgsValue) Freeze()               {}
func (m *msgsValue) Truth() starlark.Bool  { return true }
func (m *msgsValue) Hash() (uint32, error) { return 0, fmt.Errorf("msgs is unhashable") }
func (m *msgsValue) AttrNames() []string   { return []string{"recent"} }
func (m *msgsValue) Attr(name string) (starlark.Value, error) {
	if name != "recent" {
		return nil, nil
	}
	return starlark.NewBuiltin("msgs.recent", m.recent), nil
}

// msgs.recent(type=None, window=SECOND): messages received within the
// window ending now, of one type or all.
func (m *msgsValue) recent(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var typ starlark.Value = starlark.None
	window := int64(time.Second)
	if err := starlark.UnpackArgs("msgs.recent", args, kwargs, "type?", &typ, "window?", &window); err != nil {
		return nil, err
	}
	if window <= 0 {
		return nil, fmt.Errorf("msgs.recent: window must be positive, got %d", window)
	}
	c := m.c
	c.read(msgsDep)
	c.read(timeDep)
	if window > c.msgs.span {
		c.msgs.span, c.msgs.stale = window, 0 // a longer window reaches older entries
	}
	want, filter := "", typ != starlark.None
	if filter {
		s, ok := starlark.AsString(typ)
		if !ok {
			return nil, fmt.Errorf("msgs.recent: type must be a message type name")
		}
		want = s
	}
	n := 0
	for _, e := range c.msgs.entries {
		if e.at > c.now-window && e.at <= c.now && (!filter || e.typ == want || hasSuffixDot(e.typ, want)) {
			n++
		}
	}
	return starlark.MakeInt(n), nil
}

func hasSuffixDot(full, short string) bool {
	return len(full) > len(short) && full[len(full)-len(short)-1] == '.' && full[len(full)-len(short):] == short
}

// Derived as a Starlark value: call it for the value; .history() for the
// kept versions.
func (d *Derived) String() string        { return fmt.Sprintf("derived(%q)", d.name) }
func (d *Derived) Type() string          { return "derived" }
func (d *Derived) Freeze()               {}
func (d *Derived) Truth() starlark.Bool  { return true }
func (d *Derived) Hash() (uint32, error) { return uint32(d.id), nil }
func (d *Derived) Name() string          { return d.name }

// Value is the derived value's current value (None before it is computed).
func (d *Derived) Value() starlark.Value {
	if d.value == nil {
		return starlark.None
	}
	return d.value
}

// readable says whether d may be read here (its value, history or time of
// change): not from an ordered index's key, brought to a watch's step,
// and not after it failed. A failed derived value has no value: read as
// None, or its last value, it made violations of what read it.
func (d *Derived) readable() error {
	if err := d.c.keyReadError("a derived value"); err != nil {
		return err
	}
	if err := d.c.watchDerived(d); err != nil {
		return err
	}
	if d.err {
		return fmt.Errorf("derived(%q) failed (the error reported for it) and has no value", d.name)
	}
	return d.c.derivedOrderError(d)
}

// derivedOrderError refuses a derived value's read of one declared after
// it. Derived values are computed in the order they are declared, so such
// a read would see the previous step's value and silently lag a step
// behind. A read of itself is its previous value, on purpose (an
// accumulator: the highest value so far).
func (c *Checker) derivedOrderError(d *Derived) error {
	if r := c.computing; r != nil && c.watchGen == 0 && d.id > r.id {
		return fmt.Errorf("derived(%q) reads derived(%q), which is declared after it (%s): derived values are computed in the order they are declared, so it would see the value of the step before; declare %q first", r.name, d.name, d.pos, d.name)
	}
	return nil
}

func (d *Derived) CallInternal(_ *starlark.Thread, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) > 0 || len(kwargs) > 0 {
		return nil, fmt.Errorf("%s() takes no arguments", d.name)
	}
	if err := d.readable(); err != nil {
		return nil, err
	}
	d.c.read(dep{depDerived, d.id, 0})
	if d.value == nil {
		return starlark.None, nil
	}
	return d.value, nil
}
func (d *Derived) AttrNames() []string { return []string{"history", "name"} }
func (d *Derived) Attr(name string) (starlark.Value, error) {
	switch name {
	case "name":
		return starlark.String(d.name), nil
	case "history":
		return starlark.NewBuiltin(d.name+".history", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			if err := d.readable(); err != nil {
				return nil, err
			}
			d.c.read(dep{depDerived, d.id, 0})
			d.c.trackReadDerived(d, itemDerivedHist)
			l := starlark.NewList(slices.Clone(d.hist))
			l.Freeze()
			return l, nil
		}), nil
	}
	return nil, nil
}
