package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
)

type eventsFlags struct {
	nodes  []string
	kinds  []string
	types  []string
	from   int
	to     int // the last step listed (-1: the end)
	limit  int
	asJSON bool
	match  string
	// limitGiven: --limit 0 is refused, not read as "all"; matchGiven:
	// an empty --match is refused, not read as "every event".
	limitGiven, matchGiven bool
}

func (a *App) eventsCmd() *cobra.Command {
	var f eventsFlags
	cmd := &cobra.Command{
		Use:   "events FILE... [filters]",
		Short: "List events in causal order, one line each, numbered by step",
		Long: `List the events of one or more traces merged into causal order, one line
per event:

  #STEP L=LAMPORT t=TIME NODE KIND details

details are, for a receive, the message (decoded when the system is known to
this binary), its sender and the step that sent it; for a timer, its name;
for an input, the request. After '->' come the event's effects: messages
sent, with their fields (receivers that never got them are listed as never
received, each with its fate: dropped, partitioned, receiver down, in
flight at the end, or not delivered when the trace cannot tell), timers
set and cancelled, disk writes.

--match keeps the events for which a Starlark expression over 'event' is
true: the same value predicates see (event.kind, event.node, event.msg_type,
event.msg.FIELD, ...), with the predicate engine's budgets.`,
		Example: `  replay events paxos.lz4 --limit 20
  replay events paxos.lz4 --node n3 --kind recv,timer --from 400
  replay events paxos.lz4 --type Last --json
  replay events paxos.lz4 --match 'event.msg_type == "paxos.Last" and event.msg.Round > 8'`,
		Args: requireArgs(1, "FILE (a trace file)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.limitGiven = cmd.Flags().Changed("limit")
			f.matchGiven = cmd.Flags().Changed("match")
			return a.runEvents(args, f)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.nodes, "node", nil, "only events of these nodes (comma-separated or repeated)")
	fl.StringSliceVar(&f.kinds, "kind", nil, "only these kinds: init, recv, timer, input, restart, crash, task")
	fl.StringSliceVar(&f.types, "type", nil, "only receives and inputs of these message types (full name or the part after the dot; each must name a type of the trace)")
	fl.IntVar(&f.from, "from", 0, "start at this step")
	fl.IntVar(&f.to, "to", -1, "stop after this step (default: the last)")
	fl.IntVar(&f.limit, "limit", 0, "print at most this many events, at least 1 (default: all)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object per event")
	fl.StringVar(&f.match, "match", "", "only events for which this Starlark expression over `event` is true (as predicates see it, e.g. 'event.msg != None and event.msg.Term > 2')")
	return cmd
}

// loadTrace reads and merges traces, warning about damage on stderr.
func (a *App) loadTrace(paths []string) (*replay.Trace, error) {
	return a.loadTraceOf(paths, nil)
}

// loadTraceOf is loadTrace for a verb that replays only the given nodes
// (none: all of them): a node left out does not count as missing.
func (a *App) loadTraceOf(paths []string, nodes []node.ID) (*replay.Trace, error) {
	tr, err := replay.Load(paths...)
	if err != nil {
		return nil, badInput("%v", err)
	}
	a.warnLoaded(tr, nodes)
	return tr, nil
}

// warnLoaded warns, a line each, of what a loaded trace lacks for the
// given nodes (none: all of them): damaged files, nodes no file records,
// recordings that stopped before the run ended, no end record.
func (a *App) warnLoaded(tr *replay.Trace, nodes []node.ID) {
	for _, f := range tr.Files {
		if f.Damage != nil {
			fmt.Fprintf(a.Stderr, "warning: %v\n", f.Damage)
		}
	}
	if len(nodes) == 0 {
		nodes = tr.Nodes
	}
	a.warnMissing(tr, tr.MissingOf(nodes))
	stops := tr.RecordingStops(nodes)
	a.warnStops(stops)
	if tr.NoEndRecord() && len(tr.DamagedFiles(nodes)) == 0 {
		fmt.Fprintln(a.Stderr, "warning: no trace file has an end record (the recording was killed or is still running): the run may have gone on past the trace")
	}
	for _, f := range tr.Files {
		// A simulation that stopped on an error (a schedule line it
		// could not follow, a handler's panic) wrote a whole trace of a
		// run cut short: said, since only info showed it.
		if n := len(f.Ends); n > 0 && len(f.SegmentEnded) > 0 && f.SegmentEnded[len(f.SegmentEnded)-1] {
			if why, ok := strings.CutPrefix(f.Ends[n-1].Reason, "error: "); ok {
				fmt.Fprintf(a.Stderr, "note: %s: the run stopped on an error, so it ends where the trace does: %s\n", f.Path, printable(oneLine(why)))
			}
		}
	}
}

func (a *App) runEvents(paths []string, f eventsFlags) error {
	if f.from < 0 {
		return badInput("--from %d: want a step, 0 or more", f.from)
	}
	if f.limit < 0 || f.limitGiven && f.limit == 0 {
		return badInput("--limit %d: want at least 1 (omit --limit for every event)", f.limit)
	}
	if f.to < -1 || f.to >= 0 && f.to < f.from {
		return badInput("--to %d: want a step at or after --from %d", f.to, f.from)
	}
	if f.matchGiven && strings.TrimSpace(f.match) == "" {
		return badInput("--match: an empty expression (omit --match for every event)")
	}
	kinds := map[node.Kind]bool{}
	for _, k := range f.kinds {
		kind, err := node.ParseKind(strings.TrimSpace(k))
		if err != nil {
			return badInput("--kind: %v", err)
		}
		kinds[kind] = true
	}
	tr, err := a.loadTrace(paths)
	if err != nil {
		return err
	}
	nodes := map[node.ID]bool{}
	for _, n := range f.nodes {
		id := node.ID(strings.TrimSpace(n))
		if !containsID(tr.Nodes, id) {
			return badInput("--node %s: no such node in the trace (nodes: %s)", id, joinIDs(tr.Nodes))
		}
		nodes[id] = true
	}
	if f.from > 0 && f.from >= tr.Len() {
		return badInput("--from %d: the trace has %d steps (#0..#%d)", f.from, tr.Len(), tr.Len()-1)
	}
	if err := a.checkTypes(tr, f.types); err != nil {
		return err
	}
	var match *predicates.Matcher
	if f.match != "" {
		if match, err = predicates.NewMatcher(f.match, tr, a.codec(tr), predicates.Options{Watch: a.watch}); err != nil {
			return badInput("--match: %v", err)
		}
	}
	r := newRenderer(a, tr)
	printed, considered := 0, 0 // considered: events the other filters kept
	end := tr.Len()
	if f.to >= 0 {
		end = min(end, f.to+1)
	}
	var gaps *stretchMarks
	if !f.asJSON {
		gaps = newStretchMarks(tr, nodes, f.from)
	}
	for step := f.from; step < end; step++ {
		gaps.before(a.Stdout, step)
		ev := tr.Event(step)
		if len(nodes) > 0 && !nodes[ev.Node] || len(kinds) > 0 && !kinds[ev.Kind] || !typeMatches(f.types, ev) {
			continue
		}
		considered++
		if match != nil {
			ok, err := match.Match(step, ev)
			if err != nil {
				return badInput("--match: at #%d: %v", step, err)
			}
			if !ok {
				continue
			}
		}
		ev = r.event(step)
		if f.asJSON {
			if err := r.json(step, ev); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(a.Stdout, r.Line(step, ev))
		}
		printed++
		if f.limit > 0 && printed >= f.limit {
			break
		}
	}
	if f.limit == 0 || printed < f.limit {
		gaps.before(a.Stdout, end)
	}
	if match != nil && printed == 0 && considered > 0 {
		// A comparison with a short type name ("Grant") is the usual
		// reason, and it matches nothing without a word.
		note := "no event matched --match"
		if types := a.traceTypes(tr); len(types) > 0 {
			note += fmt.Sprintf(" (event.msg_type is a full type name: %s)", strings.Join(types[:min(len(types), 4)], ", "))
			if len(types) > 4 {
				note = strings.TrimSuffix(note, ")") + ", ...)"
			}
		}
		fmt.Fprintf(a.Stderr, "%s events: note: %s\n", a.name(), note)
	}
	return nil
}

// traceTypes lists the message types every file's segments name, sorted.
func (a *App) traceTypes(tr *replay.Trace) []string {
	var types []string
	for _, f := range tr.Files {
		for _, h := range f.Segments {
			types = append(types, h.Types...)
		}
	}
	slices.Sort(types)
	return slices.Compact(types)
}

// checkTypes refuses a --type that names no message type of the trace (as
// --kind refuses an unknown kind): a typo would otherwise print nothing
// and exit 0, like a filter that matched no event.
func (a *App) checkTypes(tr *replay.Trace, types []string) error {
	if len(types) == 0 {
		return nil
	}
	names := a.traceTypes(tr)
	if c := a.codec(tr); c != nil {
		names = append(names, c.Names()...)
		slices.Sort(names)
		names = slices.Compact(names)
	}
	for _, t := range types {
		if !slices.ContainsFunc(names, func(n string) bool { return n == t || strings.HasSuffix(n, "."+t) }) {
			if len(names) == 0 {
				return badInput("--type %s: the trace has no message types", t)
			}
			return badInput("--type %s: no message type of the trace has that name (types: %s)", t, strings.Join(names, ", "))
		}
	}
	return nil
}

func typeMatches(types []string, ev *node.Event) bool {
	if len(types) == 0 {
		return true
	}
	if ev.MsgType == "" {
		return false
	}
	for _, t := range types {
		if t == ev.MsgType || strings.HasSuffix(ev.MsgType, "."+t) {
			return true
		}
	}
	return false
}

func containsID(ids []node.ID, id node.ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func joinIDs(ids []node.ID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, " ")
}

// renderer prints events as `replay events` does: replay.Renderer's
// one-line form, or JSON.
type renderer struct {
	*replay.Renderer
	tr   *replay.Trace
	enc  *json.Encoder
	sent *sentPayloads
}

func newRenderer(a *App, tr *replay.Trace) *renderer {
	return &renderer{Renderer: replay.NewRenderer(tr, a.codec(tr)), tr: tr, enc: json.NewEncoder(a.Stdout), sent: a.newSentPayloads(tr)}
}

// event is step's event as it is printed: with the fields of the messages
// it sent that nobody received, which only a replay of it has.
func (r *renderer) event(step int) *node.Event { return r.sent.at(step, r.tr.Event(step)) }

// StepLine is step's line as replay events prints it.
func (r *renderer) StepLine(step int) string { return r.Line(step, r.event(step)) }

// codec is the message codec of the trace's system, or nil when this
// binary does not know the system (payloads are then shown by size).
func (a *App) codec(tr *replay.Trace) *node.Codec {
	if sys, err := a.Registry.LookupRecorded(tr.Header.System); err == nil {
		return sys.Codec
	}
	return nil
}

// eventJSON is the --json form of one event.
type eventJSON struct {
	Step     int     `json:"step"`
	Lamport  uint64  `json:"lamport"`
	TimeNS   int64   `json:"time_ns"`
	Node     node.ID `json:"node"`
	Seq      uint64  `json:"seq"`
	Kind     string  `json:"kind"`
	From     node.ID `json:"from,omitempty"`
	SentStep *int    `json:"sent_step,omitempty"`
	MsgType  string  `json:"msg_type,omitempty"`
	Message  string  `json:"message,omitempty"`
	// Msg is the message's fields as JSON (Message is its line, cut
	// at 120 characters).
	Msg     json.RawMessage `json:"msg,omitempty"`
	Timer   string          `json:"timer,omitempty"`
	Task    *taskJSON       `json:"task,omitempty"`
	Sends   []sendJSON      `json:"sends,omitempty"`
	Timers  []timerJSON     `json:"timers_set,omitempty"`
	Cancels []uint64        `json:"timers_cancelled,omitempty"`
	Disk    int             `json:"disk_writes,omitempty"`
}

// taskJSON is a task resume: which task, and what made it runnable at
// which step.
type taskJSON struct {
	ID      uint64 `json:"id"`
	Name    string `json:"name"`
	Wake    string `json:"woken_by"`
	WokenAt *int   `json:"woken_at,omitempty"`
}

type sendJSON struct {
	To       node.ID         `json:"to"`
	Type     string          `json:"type"`
	Message  string          `json:"message,omitempty"`
	Msg      json.RawMessage `json:"msg,omitempty"`
	Received []int           `json:"received_at,omitempty"`
	Fate     string          `json:"fate"`
	Why      string          `json:"why,omitempty"`
}

type timerJSON struct {
	ID    uint64 `json:"id"`
	Name  string `json:"name"`
	After int64  `json:"after_ns"`
}

func (r *renderer) json(step int, ev *node.Event) error {
	j := eventJSON{Step: step, Lamport: ev.Lamport, TimeNS: int64(r.tr.Time(ev)), Node: ev.Node, Seq: ev.Seq,
		Kind: ev.Kind.String(), From: ev.From, MsgType: ev.MsgType, Timer: ev.TimerName, Disk: ev.DiskWrites}
	if ev.Kind == node.KindRecv || ev.Kind == node.KindInput {
		j.Message, j.Msg = r.MessageForms(ev.MsgType, ev.Payload)
	}
	if st, ok := r.tr.SendStep(ev); ok {
		j.SentStep = &st
	}
	if ev.Kind == node.KindTask {
		j.Task = &taskJSON{ID: uint64(ev.Task), Name: ev.TaskName, Wake: ev.Wake}
		if st, ok := r.tr.Step(ev.Node, ev.WakeSeq); ok {
			j.Task.WokenAt = &st
		}
	}
	for i, s := range ev.Sends {
		fate := r.tr.Fate(ev, i)
		sj := sendJSON{To: s.To, Type: s.Type, Received: fate.Receipts, Fate: fate.Fate.String(), Why: fate.Why}
		if p, ok := r.SentPayload(ev, i); ok {
			sj.Message, sj.Msg = r.MessageForms(s.Type, p)
		}
		j.Sends = append(j.Sends, sj)
	}
	for _, t := range ev.TimersSet {
		j.Timers = append(j.Timers, timerJSON{ID: uint64(t.ID), Name: t.Name, After: int64(t.After)})
	}
	for _, id := range ev.TimersCancelled {
		j.Cancels = append(j.Cancels, uint64(id))
	}
	return r.enc.Encode(j)
}

// sentPayloads supplies the contents of lost messages. A trace records a
// send's type and digest only (the receiver records the content), so the
// fields of a message nobody received exist only by re-executing its
// sender: a replay that runs forward alongside the listing, started only
// when a printed event has such a send.
type sentPayloads struct {
	a      *App
	tr     *replay.Trace
	r      *replay.Replayer
	failed bool
}

func (a *App) newSentPayloads(tr *replay.Trace) *sentPayloads {
	// A system unknown to this binary cannot be replayed (its payloads
	// are shown by size anyway).
	return &sentPayloads{a: a, tr: tr, failed: a.codec(tr) == nil}
}

// at returns the event to render for step: the replayed one when ev sent a
// message no one received and replay can regenerate it, else ev.
func (s *sentPayloads) at(step int, ev *node.Event) *node.Event {
	if s.failed || !s.needs(ev) {
		return ev
	}
	if s.r == nil || s.r.Pos() > step {
		r, err := replay.New(s.tr, s.a.Registry, replay.Options{SkipStateHashes: true, Watch: s.a.watch})
		if err != nil {
			s.fail(err)
			return ev
		}
		s.r = r
	}
	if err := s.r.RunTo(step, nil); err != nil {
		s.fail(err)
		return ev
	}
	if rep := s.r.Replayed(); rep != nil && s.r.Pos() == step && len(rep.Sends) == len(ev.Sends) {
		return rep
	}
	return ev
}

func (s *sentPayloads) needs(ev *node.Event) bool {
	for i := range ev.Sends {
		if ev.Sends[i].Payload == nil && len(s.tr.Receipts(ev.SentMsg(i))) == 0 {
			return true
		}
	}
	return false
}

func (s *sentPayloads) fail(err error) {
	s.failed = true
	fmt.Fprintf(s.a.Stderr, "warning: the fields of lost messages are not shown: %v\n", err)
}

// stretchMarks says, between the lines of a listing, where a node's
// recording goes missing (a killed process's unwritten tail, a damaged
// file): a listing of a killed node's events just went on without it,
// while every other verb said its state was unknown.
type stretchMarks struct {
	marks []stretchMark // by the step they come before
}

type stretchMark struct {
	at   int // printed before this step's line
	line string
}

// newStretchMarks lists the marks of the nodes shown (nodes; none: all)
// for a listing from step from: a stretch begun before it and not over
// there is marked before its first line.
func newStretchMarks(tr *replay.Trace, nodes map[node.ID]bool, from int) *stretchMarks {
	m := &stretchMarks{}
	for _, id := range tr.Nodes {
		if len(nodes) > 0 && !nodes[id] {
			continue
		}
		for _, u := range tr.Unknown[id] {
			at := u.After + 1
			if at < from {
				if u.Until >= 0 && u.Until <= from {
					continue // over before the listing begins
				}
				at = from
			}
			after, until := stretch(u)
			m.marks = append(m.marks, stretchMark{at, fmt.Sprintf("   %s: state unknown %s until %s: %s", id, after, until, u.Reason)})
		}
	}
	slices.SortStableFunc(m.marks, func(a, b stretchMark) int { return cmp.Compare(a.at, b.at) })
	return m
}

// before prints the marks that come before step's line.
func (m *stretchMarks) before(w io.Writer, step int) {
	if m == nil {
		return
	}
	for len(m.marks) > 0 && m.marks[0].at <= step {
		fmt.Fprintln(w, printable(m.marks[0].line))
		m.marks = m.marks[1:]
	}
}
