package replay

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/replaycheck/replaycheck/internal/printable"
	"github.com/replaycheck/replaycheck/node"
)

// Divergence reports the first step at which re-execution did not do what
// the recording says the node did.
// Its JSON keys are snake_case, as the rest of check's and verify's
// --json are (they were the Go names until session 42).
type Divergence struct {
	Step     int      `json:"step"`
	File     string   `json:"file"`
	Node     node.ID  `json:"node"`
	Seq      uint64   `json:"seq"`
	Event    string   `json:"event"` // the event, one line: "recv paxos.Last from n5"
	What     string   `json:"differs"`
	Recorded string   `json:"recorded,omitempty"`
	Now      string   `json:"replayed,omitempty"`
	Causes   []string `json:"causes"`
	mixed    []string // the trace's codecs, when more than one
}

func (d *Divergence) Error() string {
	s := fmt.Sprintf("replay diverged at step #%d (%s seq %d, %s): %s", d.Step, d.Node, d.Seq, printable.Escape(d.Event), printable.Escape(d.What))
	if d.Recorded != "" || d.Now != "" {
		s += fmt.Sprintf(": recorded %s; replayed %s", printable.Escape(d.Recorded), printable.Escape(d.Now))
	}
	if len(d.mixed) > 1 {
		// The likeliest cause, and the one line is all some verbs print.
		s += fmt.Sprintf(" (the trace mixes message codecs %s; this replay encodes as %s)", strings.Join(d.mixed, ", "), d.mixed[0])
	}
	return s
}

// Report is the multi-line form printed by `replay verify`.
func (d *Divergence) Report() string { return d.ReportAs("replay") }

// ReportAs is Report for a program that runs the replay under another
// name (a binary built with cli.Main): program is what its user types.
func (d *Divergence) ReportAs(program string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "replay diverged at step #%d\n", d.Step)
	fmt.Fprintf(&b, "  node:      %s seq %d (%s)\n", d.Node, d.Seq, d.File)
	// Recorded values and timer names are the handler's text: escaped.
	fmt.Fprintf(&b, "  event:     %s\n", printable.Escape(d.Event))
	fmt.Fprintf(&b, "  differs:   %s\n", printable.Escape(d.What))
	if d.Recorded != "" {
		fmt.Fprintf(&b, "  recorded:  %s\n", printable.Escape(d.Recorded))
	}
	if d.Now != "" {
		fmt.Fprintf(&b, "  replayed:  %s\n", printable.Escape(d.Now))
	}
	b.WriteString("  likely causes:\n")
	if len(d.mixed) > 1 {
		// First: it explains a sent time that differs, and nothing
		// in the handler's source would.
		fmt.Fprintf(&b, "    - the trace's parts were recorded by binaries with different message codecs (%s): a time.Time travels as whole seconds in /1 and to the nanosecond in /2, and this replay encodes as %s\n",
			strings.Join(d.mixed, ", "), d.mixed[0])
	}
	for _, c := range d.Causes {
		fmt.Fprintf(&b, "    - %s\n", c)
	}
	// Most of these are visible in the source: vet names the line.
	fmt.Fprintf(&b, "  %s vet PACKAGES names such code in the handlers' source\n", program)
	return b.String()
}

var (
	causeMapOrder = "the handler iterates a Go map and lets the order decide what it sends, stores or consumes (sort the keys)"
	causeTime     = "the handler reads time.Now/time.Since instead of env.Now() (and sends, schedules or stores what it read)"
	causeRand     = "the handler uses the global math/rand (or its own unrecorded generator) instead of env.Rand()"
	causeGo       = "the handler starts a goroutine, uses select or channels, or shares package-level variables between nodes"
	causeCode     = "the handler's code or a dependency changed since the trace was recorded (rebuild the binary that replays it from the recorded commit)"
	causeState    = "state outside the handler struct (package-level variables, caches) that the recording run had and this one does not"
)

// causeSimChanged is causeCode for a simulated trace: what was simulated
// is made again, not replayed, once the code changed.
const causeSimChanged = "the handler's code or a dependency changed since the run was simulated: a simulated trace replays only the code that made it; simulate the run again (its seed, or the schedule explore or a fork wrote) to see what the new code does"

// causes orders the likely causes of a divergence for this trace. In a
// simulated or forked one a changed handler comes first: such a trace
// names no build that would tell a change from nondeterminism, and
// checking a fix against the trace of the bug is the common case (a new
// user doing so read map order and math/rand first).
func (r *Replayer) causes(cs ...string) []string {
	out := slices.Clone(cs)
	if d := r.tr.Header.Driver; d != "sim" && d != "fork" {
		return out
	}
	if i := slices.Index(out, causeCode); i >= 0 {
		out = slices.Delete(out, i, i+1)
	}
	return slices.Insert(out, 0, causeSimChanged)
}

// describe renders an event as one line.
func describe(ev *node.Event) string {
	switch ev.Kind {
	case node.KindRecv:
		return fmt.Sprintf("recv %s from %s", ev.MsgType, ev.From)
	case node.KindTimer:
		return fmt.Sprintf("timer %s (id %d)", ev.TimerName, ev.TimerID)
	case node.KindInput:
		return "input " + ev.MsgType
	case node.KindTask:
		return fmt.Sprintf("task %d %q (woken by %s)", ev.Task, ev.TaskName, ev.Wake)
	}
	return ev.Kind.String()
}

// diverged builds the report for a dispatch that failed or whose effects
// differ. recordedPayload looks up what a recorded send carried, from the
// receiver's trace.
func (r *Replayer) diverged(step int, rec, now *node.Event, err error) *Divergence {
	d := r.divergence(step, rec)
	var mm *mismatch
	var pe *node.PanicError
	var stuck *node.TaskStuckError
	switch {
	case errors.As(err, &mm):
		d.What = fmt.Sprintf("nondeterministic input %d", mm.index)
		d.Recorded, d.Now = mm.recorded, mm.now
		d.Causes = r.causes(causeMapOrder, causeTime, causeRand, causeGo, causeCode)
	case errors.As(err, &pe):
		d.What = "the handler panicked, but completed in the recorded run"
		d.Recorded, d.Now = "the event completed", fmt.Sprintf("panic: %v", pe.Value)
		d.Causes = r.causes(causeCode, causeState, causeMapOrder)
	case errors.As(err, &stuck):
		d.What = err.Error()
		d.Causes = r.causes("the task blocks on a real channel, sync.Mutex or I/O instead of the runtime's primitives", causeCode)
	case err != nil:
		d.What = err.Error()
		d.Causes = r.causes(causeCode)
	}
	return d
}

// divergence starts the report of a divergence at step: where it is.
func (r *Replayer) divergence(step int, rec *node.Event) *Divergence {
	return &Divergence{Step: step, File: r.tr.File(step), Node: rec.Node, Seq: rec.Seq, Event: describe(rec), mixed: r.tr.Codecs}
}

// compare checks a re-executed event's effects against the recording; it
// returns nil when they match. It runs at every step, so nothing is
// formatted or allocated unless something differs.
func (r *Replayer) compare(step int, rec, now *node.Event) *Divergence {
	set := func(what, recorded, replayed string, causes ...string) *Divergence {
		d := r.divergence(step, rec)
		d.What, d.Recorded, d.Now, d.Causes = what, recorded, replayed, r.causes(causes...)
		return d
	}
	if now.Seq != rec.Seq || now.Lamport != rec.Lamport {
		return set("sequence number or Lamport clock", fmt.Sprintf("seq %d, clock %d", rec.Seq, rec.Lamport),
			fmt.Sprintf("seq %d, clock %d", now.Seq, now.Lamport), causeCode)
	}
	if len(now.Sends) != len(rec.Sends) {
		return set("number of messages sent", r.sendList(rec), r.sendList(now), causeMapOrder, causeRand, causeTime, causeCode)
	}
	for i := range rec.Sends {
		a, b := rec.Sends[i], now.Sends[i]
		if a.To != b.To || a.Type != b.Type || a.Digest != b.Digest {
			return set(fmt.Sprintf("message %d of %d sent", i, len(rec.Sends)),
				r.recordedSend(rec, i), r.replayedSend(now, i), causeMapOrder, causeRand, causeTime, causeCode)
		}
	}
	if !slices.Equal(rec.TimersSet, now.TimersSet) {
		return set("timers set", timerList(rec.TimersSet), timerList(now.TimersSet), causeRand, causeTime, causeMapOrder, causeCode)
	}
	if !slices.Equal(rec.TimersCancelled, now.TimersCancelled) {
		return set("timers cancelled", fmt.Sprint(rec.TimersCancelled), fmt.Sprint(now.TimersCancelled), causeMapOrder, causeCode)
	}
	if rec.DiskWrites != now.DiskWrites || rec.DiskDigest != now.DiskDigest {
		return set("disk writes", fmt.Sprintf("%d write(s), digest %016x", rec.DiskWrites, rec.DiskDigest),
			fmt.Sprintf("%d write(s), digest %016x", now.DiskWrites, now.DiskDigest), causeMapOrder, causeRand, causeTime, causeCode)
	}
	return nil
}

func timerList(ts []node.TimerSet) string {
	if len(ts) == 0 {
		return "none"
	}
	var parts []string
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s (id %d) in %v", t.Name, t.ID, t.After))
	}
	return strings.Join(parts, ", ")
}

func (r *Replayer) sendList(ev *node.Event) string {
	if len(ev.Sends) == 0 {
		return "no messages"
	}
	var parts []string
	for _, s := range ev.Sends {
		parts = append(parts, s.Type+" to "+string(s.To))
	}
	return fmt.Sprintf("%d: %s", len(ev.Sends), strings.Join(parts, ", "))
}

// recordedSend shows a recorded send, with its content when the
// receiver's trace has it.
func (r *Replayer) recordedSend(ev *node.Event, i int) string {
	s := ev.Sends[i]
	out := fmt.Sprintf("%s to %s (digest %016x)", s.Type, s.To, s.Digest)
	for _, step := range r.tr.Receipts(ev.SentMsg(i)) {
		recv := r.tr.Event(step)
		out += ": " + r.render(recv.MsgType, recv.Payload)
		break
	}
	return out
}

func (r *Replayer) replayedSend(ev *node.Event, i int) string {
	s := ev.Sends[i]
	return fmt.Sprintf("%s to %s (digest %016x): %s", s.Type, s.To, xxhash.Sum64(s.Payload), r.render(s.Type, s.Payload))
}

func (r *Replayer) render(typ string, payload []byte) string {
	m, err := r.sys.Codec.Decode(typ, payload)
	if err != nil {
		return fmt.Sprintf("%d bytes", len(payload))
	}
	s := fmt.Sprintf("%+v", m)
	if _, again, err := r.codec.Encode(m); err == nil && !bytes.Equal(again, payload) {
		// This build's type does not read the bytes back as they were
		// (a field renamed or dropped since): its value would show
		// zeros that were never sent. The bytes as they are say more.
		var raw any
		if node.Unmarshal(payload, &raw) == nil {
			s = fmt.Sprintf("%v (as encoded: this build's %s reads it as %s)", raw, typ, s)
		} else {
			s += fmt.Sprintf(" (as this build's %s reads it, which is not as it was encoded)", typ)
		}
	}
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}
