package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/internal/printable"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
)

// Renderer turns events into the one-line story form every surface shows
// (`replay events`, the trace database's summaries, the debugger):
//
//	#17 L=4 t=33.155521ms n1 recv paxos.Collect{Round:8} from n1 (sent #14) -> paxos.Last to n1; 1 disk write(s)
type Renderer struct {
	tr    *Trace
	codec *node.Codec // nil when the system is unknown to this binary
	// timers are the timer names each node set, as rendered (TimerName).
	timers map[node.ID]map[node.TimerID]timerSet
}

// NewRenderer renders events of tr, decoding payloads with codec (nil:
// payloads are shown by type and size).
func NewRenderer(tr *Trace, codec *node.Codec) *Renderer { return &Renderer{tr: tr, codec: codec} }

// Message renders a payload as Type{Field:value ...}, or Type(N bytes) when
// the system is unknown to this binary.
func (r *Renderer) Message(typ string, payload []byte) string {
	line, _ := r.messageForms(typ, payload, true, false)
	return line
}

// MessageJSON is a payload's fields as JSON (a time as RFC 3339, a
// pointer as what it points at), for tools that select on a field; nil
// when the system is unknown to this binary or the value has no JSON form
// (a map keyed by a struct, a NaN).
func (r *Renderer) MessageJSON(typ string, payload []byte) json.RawMessage {
	_, fields := r.messageForms(typ, payload, false, true)
	return fields
}

// MessageForms is Message and MessageJSON of one payload, decoded once.
func (r *Renderer) MessageForms(typ string, payload []byte) (line string, fields json.RawMessage) {
	return r.messageForms(typ, payload, true, true)
}

// messageForms decodes a payload once and renders the forms asked for.
func (r *Renderer) messageForms(typ string, payload []byte, wantLine, wantJSON bool) (line string, fields json.RawMessage) {
	var m node.Message
	decoded := false
	if r.codec != nil {
		var err error
		m, err = r.codec.Decode(typ, payload)
		decoded = err == nil
	}
	if wantLine {
		line = fmt.Sprintf("%s(%d bytes)", typ, len(payload))
		if decoded {
			var foldable bool
			line, foldable = formatValue(m, 0)
			// Long containers summarised, so that the fields after them
			// still show: a view change's OpNum came after its whole
			// log, past the cut (a new user's). Shorter ones too, if
			// that is not enough. A message with no container below the
			// top (protobuf's, which prints itself) is formatted once.
			for _, fold := range []int{foldLong, foldShort} {
				if len(line) <= maxLineMessage || !foldable {
					break
				}
				line, _ = formatValue(m, fold)
			}
			line = typ + shorten(line, maxLineMessage)
		}
	}
	if wantJSON && decoded {
		if b, err := json.Marshal(m); err == nil {
			fields = b
		}
	}
	return line, fields
}

// maxLineMessage is how much of a message an event line shows.
const maxLineMessage = 120

// foldLong and foldShort are how long a slice, array or map inside a
// message may print before a line too long shows it as its length
// instead ([...39 items]): the first that makes the line fit, or the
// second.
const (
	foldLong  = 24
	foldShort = 8
)

// folding is what writeValue does with the slices, arrays and maps below
// the top: limit > 0 summarises those whose text would be longer; met
// says whether there were any.
type folding struct {
	limit int
	met   bool
}

// formatValue is m as writeValue writes it, folding containers longer
// than fold (0: none), and whether it has any container to fold.
func formatValue(m any, fold int) (string, bool) {
	v := reflect.ValueOf(m)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	var b strings.Builder
	f := &folding{limit: fold}
	writeValue(&b, v, 0, f)
	// Protobuf's text form inserts random extra spaces on purpose (so no
	// one relies on it); collapsing runs of spaces keeps lines stable
	// between runs, at the cost of runs of spaces inside string values.
	s := collapseSpaces(b.String())
	if v.Kind() != reflect.Struct {
		s = "(" + s + ")"
	}
	return s, f.met
}

// maxShownDepth bounds how deep a message is printed, and maxShownBytes
// how much of it: a message that points at itself ends in "..." (a line
// shows 120 characters of it; pointers that point back at each other
// would otherwise print an exponential tree).
const (
	maxShownDepth = 32
	maxShownBytes = 4096
)

var (
	stringerType = reflect.TypeFor[fmt.Stringer]()
	errorType    = reflect.TypeFor[error]()
	formatType   = reflect.TypeFor[fmt.Formatter]()
)

// writeValue writes v as fmt's %+v does, with two exceptions that keep
// a line the same on every run and every surface: a pointer shows what
// it points at (fmt shows an address below the top level), and a
// time.Time shows as RFC 3339 in UTC, to the nanosecond, as `state`,
// `history` and the debugger show times. A type with its own String,
// Error or Format method still prints itself (protobuf's text form).
func writeValue(b *strings.Builder, v reflect.Value, depth int, f *folding) {
	if !v.IsValid() {
		b.WriteString("<nil>")
		return
	}
	if depth > maxShownDepth || b.Len() > maxShownBytes {
		b.WriteString("...")
		return
	}
	t := v.Type()
	switch {
	case t == timeType:
		writeTime(b, v)
		return
	case t.Kind() == reflect.Pointer && t.Elem() == timeType && !v.IsNil():
		b.WriteByte('&')
		writeTime(b, v.Elem())
		return
	case v.CanInterface() && (t.Implements(stringerType) || t.Implements(errorType) || t.Implements(formatType)):
		fmt.Fprintf(b, "%+v", v.Interface())
		return
	}
	switch k := v.Kind(); {
	case depth > 0 && (k == reflect.Slice || k == reflect.Array || k == reflect.Map):
		f.met = true
		if f.limit <= 0 {
			break
		}
		var inner strings.Builder
		writeValue(&inner, v, depth, &folding{})
		switch {
		case inner.Len() <= f.limit:
			b.WriteString(inner.String())
		case k == reflect.Map:
			fmt.Fprintf(b, "map[...%d entries]", v.Len())
		default:
			fmt.Fprintf(b, "[...%d items]", v.Len())
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			b.WriteString("<nil>")
			return
		}
		b.WriteByte('&')
		writeValue(b, v.Elem(), depth+1, f)
	case reflect.Interface:
		if v.IsNil() {
			b.WriteString("<nil>")
			return
		}
		writeValue(b, v.Elem(), depth+1, f)
	case reflect.Struct:
		b.WriteByte('{')
		for i := range t.NumField() {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(t.Field(i).Name)
			b.WriteByte(':')
			writeValue(b, v.Field(i), depth+1, f)
		}
		b.WriteByte('}')
	case reflect.Slice, reflect.Array:
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(' ')
			}
			writeValue(b, v.Index(i), depth+1, f)
		}
		b.WriteByte(']')
	case reflect.Map:
		b.WriteString("map[")
		for i, e := range state.SortedEntries(v) {
			if i > 0 {
				b.WriteByte(' ')
			}
			writeValue(b, e.Key, depth+1, f)
			b.WriteByte(':')
			writeValue(b, e.Value, depth+1, f)
		}
		b.WriteByte(']')
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32:
		b.WriteString(strconv.FormatFloat(v.Float(), 'g', -1, 32))
	case reflect.Float64:
		b.WriteString(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case reflect.Complex64, reflect.Complex128:
		b.WriteString(strconv.FormatComplex(v.Complex(), 'g', -1, t.Bits()))
	case reflect.String:
		b.WriteString(v.String())
	default:
		// Channels, functions and unsafe pointers: an address in fmt,
		// which differs from run to run.
		b.WriteString("<" + v.Kind().String() + ">")
	}
}

var timeType = reflect.TypeFor[time.Time]()

// writeTime writes a time.Time value, which may have been reached
// through an unexported field, as RFC 3339 in UTC.
func writeTime(b *strings.Builder, v reflect.Value) {
	sec, nsec := state.TimeInstant(v)
	b.WriteString(time.Unix(sec, nsec).UTC().Format(time.RFC3339Nano))
}

// SentPayload is the content of the i-th message ev sent: from ev itself
// when it was dispatched here (a replayed event; traces record only a
// send's type and digest), else from an event that received it. False
// when neither has it: a lost message of a recorded event.
func (r *Renderer) SentPayload(ev *node.Event, i int) ([]byte, bool) {
	if p := ev.Sends[i].Payload; p != nil {
		return p, true
	}
	if rs := r.tr.Receipts(ev.SentMsg(i)); len(rs) > 0 {
		return r.tr.Event(rs[0]).Payload, true
	}
	return nil, false
}

// SentMessage decodes the i-th message ev sent, when its payload is
// known and the system is known to this binary.
func (r *Renderer) SentMessage(ev *node.Event, i int) (node.Message, bool) {
	p, ok := r.SentPayload(ev, i)
	if !ok || r.codec == nil {
		return nil, false
	}
	m, err := r.codec.Decode(ev.Sends[i].Type, p)
	return m, err == nil
}

func collapseSpaces(s string) string {
	if !strings.Contains(s, "  ") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' && i > 0 && s[i-1] == ' ' {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return printable.Cut(s, n-3) + "..."
}

// Time is an event's time since the start of the run.
func (t *Trace) Time(ev *node.Event) time.Duration { return time.Duration(ev.Time - t.Header.Start) }

// Line renders one event: step, Lamport clock, time, node, kind, details
// and effects.
func (r *Renderer) Line(step int, ev *node.Event) string {
	defer r.noteTimers(step, ev)
	var b strings.Builder
	fmt.Fprintf(&b, "#%d L=%d t=%v %s %s", step, ev.Lamport, r.tr.Time(ev), ev.Node, ev.Kind)
	if s := r.Summary(ev); s != "" {
		b.WriteString(" ")
		b.WriteString(s)
	}
	return b.String()
}

// Summary is the part of Line after the kind: details, then "-> effects".
func (r *Renderer) Summary(ev *node.Event) string {
	d, e := r.Details(ev), r.Effects(ev)
	switch {
	case e == "":
		return d
	case d == "":
		return "-> " + e
	}
	return d + " -> " + e
}

// Details describes what triggered the event: for a receive, the message,
// its sender and the step that sent it; for a timer, its name; for an
// input, the request.
func (r *Renderer) Details(ev *node.Event) string { return printable.Text(r.details(ev)) }

func (r *Renderer) details(ev *node.Event) string {
	switch ev.Kind {
	case node.KindRecv:
		s := r.Message(ev.MsgType, ev.Payload) + " from " + string(ev.From)
		if st, ok := r.tr.SendStep(ev); ok {
			s += fmt.Sprintf(" (sent #%d)", st)
		}
		return s
	case node.KindTimer:
		return fmt.Sprintf("%s (timer %d)", ev.TimerName, ev.TimerID)
	case node.KindInput:
		return r.Message(ev.MsgType, ev.Payload)
	case node.KindCrash:
		return "(volatile state and timers lost)"
	case node.KindTask:
		s := fmt.Sprintf("%s (task %d) woken by %s", ev.TaskName, ev.Task, ev.Wake)
		if st, ok := r.tr.Step(ev.Node, ev.WakeSeq); ok {
			s += fmt.Sprintf(" at #%d", st)
		}
		return s
	}
	return ""
}

// Effects describes what the event did: messages sent, with their fields
// when the payload is known (ev is a replayed event, or the message was
// received), grouped by message, each to every receiver it was sent to
// (those that never got it listed again as never received, each with its
// fate: see Trace.Fate), timers set and
// cancelled, disk writes.
func (r *Renderer) Effects(ev *node.Event) string { return printable.Text(r.effects(ev)) }

func (r *Renderer) effects(ev *node.Event) string {
	var parts []string
	// Group equal messages, in order of first appearance: a broadcast
	// reads as one message to many.
	type group struct {
		msg                  string
		to, lost, unrecorded []string
	}
	var groups []*group
	byMsg := map[string]*group{}
	// A broadcast sends one payload many times: it is decoded and
	// formatted once.
	var lastType, lastMsg string
	var lastPayload []byte
	for i, s := range ev.Sends {
		msg := s.Type
		if p, ok := r.SentPayload(ev, i); ok {
			if lastPayload == nil || s.Type != lastType || !bytes.Equal(p, lastPayload) {
				lastType, lastPayload, lastMsg = s.Type, p, r.Message(s.Type, p)
			}
			msg = lastMsg
		}
		g := byMsg[msg]
		if g == nil {
			g = &group{msg: msg}
			byMsg[msg] = g
			groups = append(groups, g)
		}
		// Every receiver is listed after "to", received or not: "to r2,r4
		// (never received: r3 ...)" read as though r3 was never sent it.
		g.to = append(g.to, string(s.To))
		switch f := r.tr.Fate(ev, i); f.Fate {
		case Delivered:
		case Unrecorded:
			// Not "never received": the receipt may be in what the
			// receiver's recording lost.
			g.unrecorded = append(g.unrecorded, string(s.To))
		default:
			// "n2 (dropped)": "n2 dropped" read as though n2 dropped it.
			g.lost = append(g.lost, string(s.To)+" ("+f.Fate.String()+")")
		}
	}
	for _, g := range groups {
		s := g.msg + " to " + strings.Join(g.to, ",")
		if len(g.lost) > 0 {
			s += " (never received: " + strings.Join(g.lost, ", ") + ")"
		}
		if len(g.unrecorded) > 0 {
			s += " (receipt unknown: " + strings.Join(g.unrecorded, ", ") + "'s recording is missing after it)"
		}
		parts = append(parts, s)
	}
	for _, t := range ev.TimersSet {
		parts = append(parts, fmt.Sprintf("timer %s in %v", t.Name, t.After))
	}
	for _, id := range ev.TimersCancelled {
		if name, ok := r.TimerName(ev, id); ok {
			parts = append(parts, fmt.Sprintf("cancel timer %d (%s)", id, name))
		} else {
			parts = append(parts, fmt.Sprintf("cancel timer %d", id))
		}
	}
	if ev.DiskWrites > 0 {
		parts = append(parts, fmt.Sprintf("%d disk write(s)", ev.DiskWrites))
	}
	return strings.Join(parts, "; ")
}

// maxTimerLookBack bounds how many of its node's earlier events a
// cancellation's timer is looked for in when the renderer has not seen
// it set (a spilled trace decodes a chunk per step looked at).
const maxTimerLookBack = 256

// timerSet is a name a node gave a timer id, at a step.
type timerSet struct {
	name string
	step int
}

// noteTimers remembers the timers ev set, for the lines after it: a
// listing renders a node's steps in order, so a cancellation finds its
// timer here without reading the trace again.
func (r *Renderer) noteTimers(step int, ev *node.Event) {
	if ev.Kind == node.KindInit || ev.Kind == node.KindRestart {
		delete(r.timers, ev.Node) // ids start again
	}
	if len(ev.TimersSet) == 0 {
		return
	}
	if r.timers == nil {
		r.timers = map[node.ID]map[node.TimerID]timerSet{}
	}
	m := r.timers[ev.Node]
	if m == nil {
		m = map[node.TimerID]timerSet{}
		r.timers[ev.Node] = m
	}
	for _, t := range ev.TimersSet {
		m[t.ID] = timerSet{t.Name, step}
	}
}

// TimerName is the name of the timer id that ev cancels: the name its
// node gave it when it set it, at an earlier event of the same
// incarnation (ids start again at a restart). A set the renderer did not
// see, and that is not among the node's few events before, is not found.
func (r *Renderer) TimerName(ev *node.Event, id node.TimerID) (string, bool) {
	for _, t := range ev.TimersSet { // set and cancelled in one event
		if t.ID == id {
			return t.Name, true
		}
	}
	step, ok := r.tr.Step(ev.Node, ev.Seq)
	if !ok {
		return "", false
	}
	if ts, ok := r.timers[ev.Node][id]; ok && ts.step < step {
		return ts.name, true
	}
	steps := r.tr.NodeSteps(ev.Node)
	i, _ := slices.BinarySearch(steps, step)
	next := ev.Seq
	for j := i - 1; j >= 0 && i-j <= maxTimerLookBack; j-- {
		prev := r.tr.Event(steps[j])
		if prev.Seq != next-1 {
			return "", false // a gap: what it hid may be a restart
		}
		next = prev.Seq
		for _, t := range prev.TimersSet {
			if t.ID == id {
				return t.Name, true
			}
		}
		if prev.Kind == node.KindInit || prev.Kind == node.KindRestart || prev.Kind == node.KindCrash {
			return "", false // an earlier incarnation's ids
		}
	}
	return "", false
}
