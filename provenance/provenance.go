// Package provenance answers "why does node N's field PATH hold this value
// at step S?" across the nodes of a recorded run: the step that last wrote
// the field, what triggered that step (a message, a timer, an input, the
// node's start), and, recursively, where the triggering message's value
// came from on its sender, back to an input, the initial state or a depth
// limit.
//
// Handlers are opaque Go code, so the dataflow inside a step is not
// observed: a link from a written field to a message field, and from a
// message field to a field of the sender's state, is inferred by equal
// value (the field's flattened value, state.Flatten). Every such link is
// marked Inferred, with what it matched, so that a reader can tell a
// recorded fact (this step received that message, sent at that step) from
// a guess (this field's value came from that message field).
package provenance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/internal/nearest"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/statedb"
)

// Write is one version of a field: the step that wrote it and the value.
type Write struct {
	Step    int
	Value   string
	Removed bool // the field stopped existing at Step
}

// States serves node states per step: the trace database (FromDB) or a
// replay (Replay).
type States interface {
	// State is a node's flattened state once step pos has executed, and
	// the paths step pos changed if it ran on that node.
	State(id node.ID, pos int) ([]state.Leaf, map[string]bool, error)
	// LastWrite is the latest version of a field written at or before
	// pos (false: none).
	LastWrite(id node.ID, path string, pos int) (Write, bool, error)
}

// Options configure a query.
type Options struct {
	Trace  *replay.Trace
	Codec  *node.Codec // nil: messages are not decoded and the chain stops at them
	States States
	// Depth is how many hops (steps) the chain follows at most (0:
	// DefaultDepth).
	Depth int
}

// DefaultDepth bounds a chain: deep enough for a value relayed through a
// few protocol phases (the demo's origin is six hops back), short enough to
// stay readable.
const DefaultDepth = 12

// Trigger is what made a step run.
type Trigger struct {
	Kind string `json:"kind"` // recv, timer, input, init, restart, crash, task
	// Messages and inputs: the type and the decoded fields.
	Type   string       `json:"type,omitempty"`
	Fields []state.Leaf `json:"fields,omitempty"`
	// Messages: the sender and the step that sent it (-1: not in the
	// trace).
	From     node.ID `json:"from,omitempty"`
	SendStep int     `json:"send_step"`
	// Timers: the name and the step that set it (-1: not found).
	Timer      string `json:"timer,omitempty"`
	TimerSetAt int    `json:"timer_set_at"`
	// Task resumes: the task, what woke it and the step that did (-1:
	// not in the trace). A task woken by a message has that message's
	// type, sender, fields and send step, as a receive does.
	Task    string `json:"task,omitempty"`
	Wake    string `json:"woken_by,omitempty"`
	WokenAt int    `json:"woken_at"`
}

// Link is one step of the chain: a step that wrote a field, and how it is
// connected to the link before it.
type Link struct {
	Depth int `json:"depth"`
	Step  int `json:"step"`
	// Time is the step's time since the run's start, in ns (as the
	// event's t= in replay events).
	Time  int64   `json:"time_ns"`
	Node  node.ID `json:"node"`
	Event string  `json:"event"` // kind and details, as replay events prints them
	Field string  `json:"field"`
	Value string  `json:"value"`
	// Via is how this link feeds the one before it ("" for the first):
	// the message field it was sent as, or the node's own field it was
	// copied from.
	Via string `json:"via,omitempty"`
	// Inferred is set when Via was matched by equal value rather than
	// recorded.
	Inferred bool `json:"inferred,omitempty"`
	// AlsoEqual lists, for an inferred link, other fields of the same
	// node that held the value too ("RValue (written at #1152)"): the
	// guess took Field, and one of these may be the real source.
	AlsoEqual []string `json:"also_equal,omitempty"`
	Trigger   *Trigger `json:"trigger,omitempty"`
	// Origin is why the chain stops here: an input, the initial state,
	// the depth limit, or no field that holds the value ("": it goes on).
	Origin string `json:"origin,omitempty"`
	// originValue is the value Origin ends with, as it is recorded ("":
	// none), for Lines to show as it shows values.
	originValue string
}

// Chain answers one query.
type Chain struct {
	Node  node.ID `json:"node"`
	Field string  `json:"field"`
	At    int     `json:"at"`
	Value string  `json:"value"`
	Links []Link  `json:"links"`
	// Kept is, when the value was written before At, the latest step in
	// between at which the node received a field of the same name with
	// another value and kept its own (nil: none seen).
	Kept *Kept `json:"kept,omitempty"`
	// start is the run's time origin (Unix ns): Lines shows time values
	// from it, as replay events shows times.
	start int64
}

// Kept is a step that left the field as it was although its trigger
// carried a field of that name with another value: for "why is it still
// X", the step that decided to keep X (a new primary that received a
// longer log and kept its empty one), which the write it goes back to
// does not show.
type Kept struct {
	Step  int     `json:"step"`
	Node  node.ID `json:"node"`
	Event string  `json:"event"`
	// Field and Value are the trigger's field that differed.
	Field string `json:"trigger_field"`
	Value string `json:"trigger_value"`
}

// maxKeptScan bounds how many of the node's steps before the step asked
// about are searched for one that kept the value.
const maxKeptScan = 256

// Error is bad input: an unknown node or field, a step outside the trace.
// Suggest lists the nearest valid names.
type Error struct {
	Msg     string
	Suggest []string
}

func (e *Error) Error() string {
	if len(e.Suggest) == 0 {
		return e.Msg
	}
	return e.Msg + " (nearest: " + strings.Join(e.Suggest, ", ") + ")"
}

// Why follows the provenance of node id's field path at step at.
func Why(opts Options, id node.ID, path string, at int) (*Chain, error) {
	tr := opts.Trace
	if at < 0 || at >= tr.Len() {
		return nil, &Error{Msg: fmt.Sprintf("step #%d is outside the trace (#0..#%d)", at, tr.Len()-1)}
	}
	if !slices.Contains(tr.Nodes, id) {
		names := make([]string, len(tr.Nodes))
		for i, n := range tr.Nodes {
			names[i] = string(n)
		}
		return nil, &Error{Msg: fmt.Sprintf("no node %s in the trace", id), Suggest: nearest.Names(names, string(id), 3)}
	}
	leaves, _, err := opts.States.State(id, at)
	if err != nil {
		return nil, err
	}
	var value string
	found := false
	for _, l := range leaves {
		if l.Path == path {
			value, found = l.Value, true
		}
	}
	if !found {
		names := make([]string, len(leaves))
		for i, l := range leaves {
			names[i] = l.Path
		}
		if len(names) == 0 {
			return nil, &Error{Msg: fmt.Sprintf("%s has no state at #%d (not started, down, or unknown)", id, at)}
		}
		for _, l := range leaves {
			if l.Path == statedb.StatusPath && l.Value == "down" {
				// Not a misspelt field: a crashed node has none.
				return nil, &Error{Msg: fmt.Sprintf("%s is down at #%d: a crashed node holds no fields until it restarts (ask about a step where it is up)", id, at)}
			}
		}
		var inside []string
		for _, n := range names {
			if strings.HasPrefix(n, path+".") || strings.HasPrefix(n, path+"[") {
				inside = append(inside, n)
			}
		}
		if len(inside) > 0 {
			// A list, map or struct: its values have separate sources.
			return nil, &Error{Msg: fmt.Sprintf("%s at #%d holds %d values, each with its own source: ask about one of them, such as %s",
				path, at, len(inside), strings.Join(inside[:min(len(inside), 3)], ", "))}
		}
		if hint := nearest.IndexHint(names, path); hint != "" {
			return nil, &Error{Msg: fmt.Sprintf("%s has no field %s at #%d: %s", id, path, at, hint)}
		}
		return nil, &Error{Msg: fmt.Sprintf("%s has no field %s at #%d", id, path, at), Suggest: nearest.Names(names, path, 3)}
	}
	depth := opts.Depth
	if depth <= 0 {
		depth = DefaultDepth
	}
	w := &walker{opts: opts, render: replay.NewRenderer(tr, opts.Codec), depth: depth, seen: map[string]bool{}}
	c := &Chain{Node: id, Field: path, At: at, Value: value, start: tr.Header.Start}
	c.Links, err = w.follow(id, path, at, 0, "", nil, false, false)
	if err == nil && len(c.Links) > 0 && c.Links[0].Step < at {
		c.Kept = w.kept(id, path, value, c.Links[0].Step, at)
	}
	return c, err
}

// kept finds the latest step of node id in (written, at] whose trigger
// carried the field at path (see sameField) with a value other than
// value; a trigger that carried the same value kept nothing.
func (w *walker) kept(id node.ID, path, value string, written, at int) *Kept {
	steps := w.opts.Trace.NodeSteps(id)
	hi, found := slices.BinarySearch(steps, at)
	if found {
		hi++
	}
	empty := value == "nil" || value == "[]" || value == "{}"
	for i := hi - 1; i >= 0 && steps[i] > written && hi-i <= maxKeptScan; i-- {
		ev := w.opts.Trace.Event(steps[i])
		if ev.Kind != node.KindRecv && ev.Kind != node.KindInput && ev.Kind != node.KindTask {
			continue
		}
		t := w.trigger(steps[i], ev)
		var other *state.Leaf
		same := false
		for j, f := range t.Fields {
			inside := ""
			if !sameField(path, f.Path, &inside) {
				continue
			}
			switch {
			case inside == "" && f.Value == value:
				same = true
			case inside == "" || empty:
				// The field itself with another value, or a part of a
				// non-empty one where the node's is empty.
				if other == nil {
					other = &t.Fields[j]
				}
			}
		}
		if other != nil && !same {
			return &Kept{Step: steps[i], Node: id, Event: w.eventText(steps[i]), Field: other.Path, Value: other.Value}
		}
	}
	return nil
}

// sameField reports whether a trigger's field at path m is the node's
// field at path p: the same path, or p's last part below fields of
// structs (Replica.Term carried as Term), not below an index (Term is not
// Entries[0].Term, nor Log[0] Log[1]). A path below that field (Log[0].View
// for Log) matches too, and *inside gets the rest.
func sameField(p, m string, inside *string) bool {
	for _, q := range []string{p, suffixAfterStructs(p)} {
		if q == "" {
			continue
		}
		switch {
		case m == q:
			*inside = ""
			return true
		case strings.HasPrefix(m, q+"[") || strings.HasPrefix(m, q+"."):
			*inside = m[len(q):]
			return true
		}
	}
	return false
}

// suffixAfterStructs is p without the struct fields it begins with
// (Replica.Term: Term), or "" when none can be removed before an index.
func suffixAfterStructs(p string) string {
	i := strings.LastIndexByte(p, '.')
	if i < 0 || strings.ContainsAny(p[:i], "[") {
		return ""
	}
	return p[i+1:]
}

type walker struct {
	opts   Options
	render *replay.Renderer
	depth  int
	seen   map[string]bool // node/path/write step: a value that cycles ends the chain
}

// timeOf is step's time since the run's start (0 for no step).
func (w *walker) timeOf(step int) int64 {
	if step < 0 || step >= w.opts.Trace.Len() {
		return 0
	}
	return int64(w.opts.Trace.Time(w.opts.Trace.Event(step)))
}

// follow explains the version of (id, path) held at pos: the link of the
// step that wrote it, then the links of what fed that step.
// ownGuess: the chain has guessed an own field of a node from an equal
// value on the way here; no other such guess is made in it.
func (w *walker) follow(id node.ID, path string, pos, depth int, via string, also []string, inferred, ownGuess bool) ([]Link, error) {
	wr, ok, err := w.opts.States.LastWrite(id, path, pos)
	if err != nil {
		return nil, err
	}
	if !ok || wr.Removed {
		return []Link{{Depth: depth, Step: pos, Time: w.timeOf(pos), Node: id, Field: path, Via: via, Inferred: inferred, AlsoEqual: also,
			Origin: fmt.Sprintf("no version of %s on %s at #%d", path, id, pos)}}, nil
	}
	ev := w.opts.Trace.Event(wr.Step)
	link := Link{Depth: depth, Step: wr.Step, Time: w.timeOf(wr.Step), Node: id, Event: strings.TrimSpace(ev.Kind.String() + " " + w.render.Details(ev)),
		Field: path, Value: wr.Value, Via: via, Inferred: inferred, AlsoEqual: also, Trigger: w.trigger(wr.Step, ev)}
	key := fmt.Sprintf("%s\x00%s\x00%d", id, path, wr.Step)
	switch {
	case w.seen[key]:
		link.Origin = "already explained above"
		return []Link{link}, nil
	case depth+1 >= w.depth:
		link.Origin = fmt.Sprintf("depth limit (%d)", w.depth)
		return []Link{link}, nil
	}
	w.seen[key] = true
	out := []Link{link}
	t := link.Trigger
	switch ev.Kind {
	case node.KindInit:
		out[0].Origin = "initial state"
		return out, nil
	case node.KindRestart:
		out[0].Origin, out[0].originValue, err = w.restartOrigin(id, path, wr.Value, wr.Step, ev)
		return out, err
	case node.KindCrash:
		out[0].Origin = "the node crashed here (a fault of the run, not its handler's doing)"
		return out, nil
	case node.KindInput:
		if f, ok := fieldEqual(t.Fields, wr.Value, path); ok {
			out[0].Origin = fmt.Sprintf("input %s, field %s", t.Type, f)
			return out, nil
		}
	case node.KindRecv, node.KindTask: // a task resumed by a message got it as a receive does
		if f, ok := fieldEqual(t.Fields, wr.Value, path); ok && t.SendStep >= 0 {
			next, err := w.fromSender(t, f, wr.Value, depth+1, ownGuess)
			if err != nil {
				return nil, err
			}
			return append(out, next...), nil
		}
	}
	// No trigger field holds the value: the handler may have copied it
	// from another field of its own state. One such guess is made, not a
	// chain of them: an enum-like value ("aborted") is equal in many
	// records, and guess upon guess walked a new user's chain through
	// eight unrelated transactions instead of stopping at the message
	// that decided it.
	if ownGuess {
		out[0].Origin = "computed by the handler (from its trigger or its own state: equal values are not followed further)"
		return out, nil
	}
	if prev, ok := w.prevOnNode(id, wr.Step); ok {
		leaves, _, err := w.opts.States.State(id, prev)
		if err != nil {
			return nil, err
		}
		if p, also, ok := w.pick(id, leaves, nil, path, wr.Value, prev); ok {
			next, err := w.follow(id, p, prev, depth+1, fmt.Sprintf("own field %s before #%d", p, wr.Step), also, true, true)
			if err != nil {
				return nil, err
			}
			return append(out, next...), nil
		}
	}
	if out[0].Origin == "" {
		out[0].Origin = "computed by the handler: no field of the trigger or of the node's previous state holds the value"
		if zeroValue(wr.Value) {
			out[0].Origin = fmt.Sprintf("computed by the handler: a zero value, followed only to a field named %s, and neither the trigger nor the node's previous state has one holding it", lastName(path))
		}
	}
	return out, nil
}

// restartOrigin says where a value set at a restart came from, as far
// as the trace tells: a restart runs Init on a fresh handler, and only
// the disk survives the crash, so a value is restored from the disk only
// if Init read it. "restored from disk" for every field (a flag Init
// never stored) sent a new user looking at persistence for a bug in
// Init. Handlers are not traced inside, so with disk reads both sources
// stay possible; the value the node started with tells them apart for
// the reader.
func (w *walker) restartOrigin(id node.ID, path, value string, step int, ev *node.Event) (origin, quoted string, err error) {
	var keys []string
	for _, nd := range ev.Nondet {
		if nd.Kind == node.NondetDisk && nd.Found && !slices.Contains(keys, nd.Key) {
			keys = append(keys, nd.Key)
		}
	}
	start := ""
	if first, ok := w.opts.Trace.Step(id, 1); ok && first < step {
		was, ok, err := w.opts.States.LastWrite(id, path, first)
		switch {
		case err != nil:
			return "", "", err
		case !ok || was.Removed:
			start = fmt.Sprintf("; it had no %s when the node started (#%d)", path, first)
		case was.Value == value:
			start = fmt.Sprintf("; the node started (#%d) with the same value", first)
		default:
			start, quoted = fmt.Sprintf("; the node started (#%d) with %s", first, was.Value), was.Value
		}
	}
	if len(keys) == 0 {
		return "set by Init at restart, which read nothing from disk: the value a fresh handler starts with, not restored" + start, quoted, nil
	}
	shown := keys[:min(len(keys), 4)]
	more := ""
	if len(keys) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(keys)-len(shown))
	}
	return fmt.Sprintf("set by Init at restart, which read disk key(s) %s%s: restored from them, or set by Init itself (handlers are not traced inside)%s",
		strings.Join(shown, ", "), more, start), quoted, nil
}

// fromSender follows a message field back to the sender's state at the
// send step. The sources, strongest first: a field equal to the value
// that the send step wrote; one it removed or overwrote (a pending
// request consumed by its reply); a field of what the sender received
// there (forwarded, or answered with); and last a field it left as it
// was, named like the message field, then the latest written. An
// unchanged field equal by chance (a version number of an unrelated
// read) was preferred to the request the reply consumed.
func (w *walker) fromSender(t *Trigger, msgField, value string, depth int, ownGuess bool) ([]Link, error) {
	leaves, changed, err := w.opts.States.State(t.From, t.SendStep)
	if err != nil {
		return nil, err
	}
	via := fmt.Sprintf("%s field %s = %s, sent by %s at #%d", t.Type, msgField, value, t.From, t.SendStep)
	p, also, ok := w.pick(t.From, leaves, changed, msgField, value, t.SendStep)
	if ok && changed[p] {
		return w.follow(t.From, p, t.SendStep, depth, via, also, true, ownGuess)
	}
	// One field the step took away holds the value: the pending request
	// a reply consumed. Several (the responses a read collected and
	// dropped) are a guess among equals, and what the step received,
	// if it holds the value, goes first.
	var took func() ([]Link, error)
	ev := w.opts.Trace.Event(t.SendStep)
	st := w.trigger(t.SendStep, ev)
	if prev, okPrev := w.prevOnNode(t.From, t.SendStep); okPrev {
		before, _, err := w.opts.States.State(t.From, prev)
		if err != nil {
			return nil, err
		}
		if q, alsoQ, okQ := w.pick(t.From, consumed(before, leaves, value), map[string]bool{}, msgField, value, prev); okQ {
			// A field the step left as it was, named like the message
			// field, against one it overwrote under another name: the
			// name is the stronger sign. A retransmit counter bumped at
			// the send held a gossiped incarnation's value by chance, and
			// the struct the message copied was not even named. A field
			// the step removed (a pending request a reply consumed) stays
			// the stronger sign whatever its name.
			overwritten := slices.ContainsFunc(leaves, func(l state.Leaf) bool { return l.Path == q })
			if ok && overwritten && lastName(q) != lastName(msgField) && lastName(p) == lastName(msgField) {
				also = append([]string{q + " (taken away by this step)"}, also...)
				return w.follow(t.From, p, t.SendStep, depth, via, also, true, ownGuess)
			}
			took = func() ([]Link, error) {
				return w.follow(t.From, q, prev, depth, fmt.Sprintf("%s; %s held it until that step took it away", via, q), alsoQ, true, ownGuess)
			}
			if _, inTrigger := fieldEqual(triggerFields(st), value, msgField); len(alsoQ) == 0 || !inTrigger {
				return took()
			}
		}
	}
	link := Link{Depth: depth, Step: t.SendStep, Time: w.timeOf(t.SendStep), Node: t.From, Event: w.eventText(t.SendStep), Via: via, Inferred: true}
	// What the sender received there holds the value: forwarded as it
	// came (a client command a follower passes to its leader in the step
	// that received it), or answered with.
	if st != nil {
		if f, okF := fieldEqual(st.Fields, value, msgField); okF {
			link.Trigger = st
			switch {
			case ev.Kind == node.KindInput:
				link.Origin = fmt.Sprintf("input %s, field %s, forwarded by %s as it came", st.Type, f, t.From)
				return []Link{link}, nil
			case (ev.Kind == node.KindRecv || ev.Kind == node.KindTask) && st.SendStep >= 0 && depth+1 < w.depth:
				next, err := w.fromSender(st, f, value, depth+1, ownGuess)
				if err != nil {
					return nil, err
				}
				return append([]Link{link}, next...), nil
			}
		}
	}
	if took != nil {
		return took()
	}
	if ok {
		return w.follow(t.From, p, t.SendStep, depth, via, also, true, ownGuess)
	}
	link.Origin = fmt.Sprintf("computed by the sender: no field of %s at #%d, nor of what it received there, equals %s", t.From, t.SendStep, value)
	link.originValue = value
	return []Link{link}, nil
}

// triggerFields are a trigger's fields (nil: none).
func triggerFields(t *Trigger) []state.Leaf {
	if t == nil {
		return nil
	}
	return t.Fields
}

// consumed are the leaves of before that held value and that after no
// longer holds at their path: removed or overwritten by the step.
func consumed(before, after []state.Leaf, value string) []state.Leaf {
	kept := map[string]bool{}
	for _, l := range after {
		if l.Value == value {
			kept[l.Path] = true
		}
	}
	var out []state.Leaf
	for _, l := range before {
		if l.Value == value && !kept[l.Path] {
			out = append(out, l)
		}
	}
	return out
}

func (w *walker) eventText(step int) string {
	ev := w.opts.Trace.Event(step)
	return strings.TrimSpace(ev.Kind.String() + " " + w.render.Details(ev))
}

// pick chooses the field of leaves that most likely holds value: changed
// at the step first, then the one whose last name matches like (a
// message field's name, or the path being explained), then the most
// recently written; pseudo-fields and the excluded path are skipped. also
// lists a few of the other fields that hold the value, the most recently
// written first: the guess is shown with its rivals.
func (w *walker) pick(id node.ID, leaves []state.Leaf, changed map[string]bool, like, value string, pos int) (string, []string, bool) {
	type cand struct {
		path    string
		score   int
		wrote   int
		changed bool // at the step
		named   bool // like like
	}
	var cands []cand
	exclude := ""
	if changed == nil {
		exclude = like // copying a field onto itself explains nothing
	}
	for _, l := range leaves {
		if l.Value != value || strings.HasPrefix(l.Path, "@") || l.Path == exclude {
			continue
		}
		c := cand{path: l.Path, wrote: -1, changed: changed[l.Path], named: lastName(l.Path) == lastName(like)}
		if zeroValue(value) && !c.named && !c.changed {
			continue // an equal zero of another name: no sign of a copy
		}
		if c.changed {
			c.score += 2
		}
		if c.named {
			c.score++
		}
		cands = append(cands, c)
	}
	if len(cands) == 0 {
		return "", nil, false
	}
	// Recency is a read per field: only for the best-scored few, and for
	// a few rivals to name.
	slices.SortStableFunc(cands, func(a, b cand) int { return b.score - a.score })
	others := len(cands) - 1
	cands = cands[:min(len(cands), 16)]
	top := len(cands)
	for i := range cands {
		if cands[i].score < cands[0].score {
			top = min(top, i)
		}
		if wr, ok, err := w.opts.States.LastWrite(id, cands[i].path, pos); err == nil && ok {
			cands[i].wrote = wr.Step
		}
	}
	best := slices.MaxFunc(cands[:top], func(a, b cand) int { return a.wrote - b.wrote })
	rivals := slices.DeleteFunc(slices.Clone(cands), func(c cand) bool { return c.path == best.path })
	slices.SortStableFunc(rivals, func(a, b cand) int { return b.wrote - a.wrote })
	rivals = rivals[:min(len(rivals), maxRivals)]
	var also []string
	for _, c := range rivals {
		// A rival with a sign the guess lacks says so: a field named
		// like the value's is as likely a source as one changed at the
		// step (a counter bumped when a lock server sent its token, or a
		// register's reply value beside its own), and the guess cannot
		// tell them apart.
		var why []string
		if c.wrote >= 0 {
			why = append(why, fmt.Sprintf("written at #%d", c.wrote))
		}
		if c.named && !best.named {
			why = append(why, "named "+lastName(like))
		}
		if c.changed && !best.changed {
			why = append(why, "changed at this step")
		}
		if len(why) > 0 {
			also = append(also, fmt.Sprintf("%s (%s)", c.path, strings.Join(why, ", ")))
		} else {
			also = append(also, c.path)
		}
	}
	if n := others - len(rivals); n > 0 {
		also = append(also, fmt.Sprintf("%d more", n))
	}
	return best.path, also, true
}

// maxRivals bounds the other equal fields a guess names.
const maxRivals = 3

// lastName is a path's last field name, without indexes: Lasts[3].Last.AcceptedValue → AcceptedValue.
func lastName(p string) string {
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		p = p[i+1:]
	}
	if i := strings.IndexByte(p, '['); i >= 0 {
		p = p[:i]
	}
	return p
}

func (w *walker) prevOnNode(id node.ID, step int) (int, bool) {
	if step == 0 {
		return 0, false
	}
	return w.opts.Trace.LastStepOf(id, step-1)
}

// trigger describes what made step run.
func (w *walker) trigger(step int, ev *node.Event) *Trigger {
	t := &Trigger{Kind: ev.Kind.String(), SendStep: -1, TimerSetAt: -1, WokenAt: -1}
	switch ev.Kind {
	case node.KindTask:
		t.Task, t.Wake = ev.TaskName, ev.Wake
		if s, ok := w.opts.Trace.Step(ev.Node, ev.WakeSeq); ok {
			t.WokenAt = s
			if wev := w.opts.Trace.Event(s); wev.Kind == node.KindRecv && strings.HasPrefix(ev.Wake, "msg ") {
				t.Type, t.From = wev.MsgType, wev.From
				if ss, ok := w.opts.Trace.SendStep(wev); ok {
					t.SendStep = ss
				}
				t.Fields = w.decode(wev.MsgType, wev.Payload)
			}
		}
	case node.KindRecv:
		t.Type, t.From = ev.MsgType, ev.From
		if s, ok := w.opts.Trace.SendStep(ev); ok {
			t.SendStep = s
		}
		t.Fields = w.decode(ev.MsgType, ev.Payload)
	case node.KindInput:
		t.Type = ev.MsgType
		t.Fields = w.decode(ev.MsgType, ev.Payload)
	case node.KindTimer:
		t.Timer = ev.TimerName
		steps := w.opts.Trace.NodeSteps(ev.Node)
		i, _ := slices.BinarySearch(steps, step)
		for j := i - 1; j >= 0 && t.TimerSetAt < 0; j-- {
			for _, ts := range w.opts.Trace.Event(steps[j]).TimersSet {
				if ts.ID == ev.TimerID {
					t.TimerSetAt = steps[j]
				}
			}
		}
	}
	return t
}

// decode flattens a message's fields (nil: no codec, or undecodable).
func (w *walker) decode(typ string, payload []byte) []state.Leaf {
	if w.opts.Codec == nil {
		return nil
	}
	m, err := w.opts.Codec.Decode(typ, payload)
	if err != nil {
		return nil
	}
	leaves := state.Flatten(m)
	for i := range leaves {
		if leaves[i].Path == "" {
			leaves[i].Path = "(value)" // a message that is a bare scalar
		}
	}
	return leaves
}

// fieldEqual is the field whose value is v, preferring one named like
// the path being explained (a Last carries two rounds; the one called
// AcceptedRound feeds AcceptedRound).
// A zero value links only to a field of the same name (see zeroValue).
func fieldEqual(fields []state.Leaf, v, like string) (string, bool) {
	found := ""
	for _, f := range fields {
		if f.Value != v {
			continue
		}
		if lastName(f.Path) == lastName(like) {
			return f.Path, true
		}
		if found == "" && !zeroValue(v) {
			found = f.Path
		}
	}
	return found, found != ""
}

// zeroValue reports whether a leaf's value is a zero value: 0 (or -0, a
// zero Duration's 0s, an enum's "0 (Name)"), "", false, nil, an empty
// container or the zero time. Nearly every record holds
// some, so an equal zero under another name is no sign of a copy: a new
// user's OpNum = 0 was linked to a message's Commit = 0, and on through
// four unrelated zeros to an init. Zeros link only by name (or, in a
// sender, to a field its send step set).
func zeroValue(v string) bool {
	switch v {
	case "0", "-0", "0s", `""`, "false", "nil", "[]", "{}", "0001-01-01T00:00:00Z":
		return true
	}
	// An enum's zero shown with its name: "0 (Follower)".
	return strings.HasPrefix(v, "0 (") && strings.HasSuffix(v, ")")
}
