package sim

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/cespare/xxhash/v2"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
)

// A Chooser makes every nondeterministic decision of a simulated run:
// which enabled event runs next and when, whether a message is lost or
// duplicated, message latency, churn timing, faults it injects itself, and
// the seeds and bytes handlers draw. The sequence of decisions of a run is
// its schedule; a run's trace holds it (see ScheduleOf), and the Schedule
// chooser replays one exactly.
//
// The default chooser (Seeded) runs events in virtual-time order and draws
// everything from one generator, so a seed alone names a run. Exploration
// strategies are choosers that pick among the enabled events instead.
type Chooser interface {
	// Describe names the chooser and its parameters for the trace header,
	// e.g. "pct seed=7 depth=3".
	Describe() string
	// Next decides what happens next: run one of c.Enabled() at a time
	// within its window, inject a crash, run the queue's earliest event
	// at its own time (InTimeOrder: the Seeded chooser always does, and
	// then Enabled is never computed), or stop the run. An error stops the
	// run and is returned by Run (a schedule that no longer fits the
	// program).
	Next(c *Choice) (Decision, error)
	// Lose and Duplicate decide a message's fate on the network, given
	// the run's probabilities (which may be 0).
	Lose(msg node.MsgID, to node.ID, p float64) bool
	Duplicate(msg node.MsgID, to node.ID, p float64) bool
	// Latency picks the delivery time of a message sent now, within
	// [lo, hi]. An exploring chooser returns lo: the window up to hi is
	// then its to choose within, through Next.
	Latency(lo, hi time.Duration) time.Duration
	// ChurnWait draws the time to a node's next random crash at rate
	// (crashes per virtual second); DownFor how long it stays down.
	ChurnWait(rate float64) time.Duration
	DownFor(lo, hi time.Duration) time.Duration
	// Seed and CryptoRead serve handler randomness (Env.Rand's per-event
	// seed, crypto/rand reads).
	Seed() uint64
	CryptoRead(p []byte)
}

// Withholder is a Chooser some of whose lost messages are kept from the
// run rather than lost: the run ends before they would arrive (a shrunk
// run cut after its violation keeps the deliveries that came later out).
// The simulator counts them in flight at the end, not lost; they are
// never delivered either way.
type Withholder interface {
	Withhold(msg node.MsgID, to node.ID) bool
}

// Decision is what a chooser wants to happen next.
type Decision struct {
	// InTimeOrder runs the earliest queued event at its own time.
	InTimeOrder bool
	// Index picks c.Enabled()[Index], to run at At (no earlier than both
	// c.Now() and the event's Earliest, no later than its Latest).
	Index int
	At    time.Duration
	// Crash, when set, crashes that up node at At (no earlier than now),
	// before any event; it restarts after Down (0: it stays down).
	// Restart, when set, restarts that down node at At. Next is asked
	// again after either.
	Crash   node.ID
	Down    time.Duration
	Restart node.ID
	// Advance runs the scenario actions (and items that run no handler)
	// due up to At, which may enable events (a scenario's input); Next is
	// asked again after. With AdvanceOne, only the first of them in time
	// order runs.
	Advance    bool
	AdvanceOne bool
	// Stop, when set, ends the run with this reason.
	Stop string
}

// Pending is one event the simulator could run next, named the way a
// schedule names it.
type Pending struct {
	Kind node.Kind // init, recv, timer, input, crash, restart or task
	Node node.ID   // where it runs
	// recv: the message.
	Msg     node.MsgID
	MsgType string
	// timer
	Timer     node.TimerID
	TimerName string
	// input: type and a digest of the payload
	InputDigest uint64
	// task: the task to resume and its name, and the seq of its node's
	// event that woke it (made it runnable: a receive, a timer, the
	// node.Go that started it, an unlock)
	Task     node.TaskID
	TaskName string
	WakeSeq  uint64
	// Earliest and Latest bound when it may run, in virtual time since
	// the start: a message's latency range, a timer's or a scenario
	// action's exact time.
	Earliest, Latest time.Duration

	it *item
}

// String names the event as a schedule line does (without its time).
func (p Pending) String() string {
	switch p.Kind {
	case node.KindRecv:
		return fmt.Sprintf("recv %s %s %s", token(string(p.Node)), token(p.Msg.String()), token(p.MsgType))
	case node.KindTimer:
		return fmt.Sprintf("timer %s %d %s", token(string(p.Node)), p.Timer, token(p.TimerName))
	case node.KindInput:
		return fmt.Sprintf("input %s %s %016x", token(string(p.Node)), token(p.MsgType), p.InputDigest)
	case node.KindTask:
		return fmt.Sprintf("task %s %d %s", token(string(p.Node)), p.Task, token(p.TaskName))
	}
	return fmt.Sprintf("%s %s", p.Kind, token(string(p.Node)))
}

// token quotes a name that would not read back as one word.
func token(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '"' || !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// tokens splits a line into words, reading back what token quoted.
func tokens(line string) ([]string, error) {
	var out []string
	for {
		line = strings.TrimLeftFunc(line, unicode.IsSpace)
		if line == "" {
			return out, nil
		}
		if line[0] == '"' {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				return nil, fmt.Errorf("unterminated quoted name in %q", line)
			}
			s, _ := strconv.Unquote(q)
			out = append(out, s)
			line = line[len(q):]
			continue
		}
		i := strings.IndexFunc(line, unicode.IsSpace)
		if i < 0 {
			i = len(line)
		}
		out = append(out, line[:i])
		line = line[i:]
	}
}

// Choice is the simulator's state at one decision, as a chooser sees it.
type Choice struct {
	s       *Sim
	enabled []Pending
	built   bool
	hashes  []uint64 // scratch for TimedStateHash
}

// Now is the current virtual time.
func (c *Choice) Now() time.Duration { return time.Duration(c.s.now) }

// Step is the number of events run so far.
func (c *Choice) Step() int { return c.s.steps }

// Up lists the nodes that are up, sorted.
func (c *Choice) Up() []node.ID {
	var up []node.ID
	for _, id := range c.s.ids {
		if c.s.nodes[id].inst.Up() {
			up = append(up, id)
		}
	}
	return up
}

// Started reports whether node id has run its init (a node restarts only
// once it has).
func (c *Choice) Started(id node.ID) bool {
	sn, ok := c.s.nodes[id]
	return ok && sn.inst.Seq() > 0
}

// Down is the number of nodes down.
func (c *Choice) Down() int { return c.s.down }

// Nodes lists every node of the run, sorted.
func (c *Choice) Nodes() []node.ID { return c.s.ids }

// TimedStateHash is a canonical hash of the whole simulated world now:
// every node's observed state (or that it is down), every pending event
// by identity and content with its window, and every scenario action's
// time, the times relative to now. Two decisions with the same hash have
// the same futures, timing included, which is what a search that caches
// visited states (and claims to exhaust a space) needs; leaving time out
// merges states whose in-flight messages may run in different orders. It
// costs a walk of every node's state, so only a chooser that needs it
// should ask.
func (c *Choice) TimedStateHash() uint64 {
	h := xxhash.New()
	var b [8]byte
	put := func(h *xxhash.Digest, v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	for _, id := range c.s.ids {
		sn := c.s.nodes[id]
		h.WriteString(string(id))
		if sn.inst.Up() {
			put(h, state.Hash(sn.inst.Handler()))
			hashTasks(h, sn.inst)
		} else {
			h.WriteString("\x00down")
		}
	}
	// Each pending item hashes to one number; sorted, they are in an order
	// that does not depend on how the queue happens to be laid out.
	items := c.hashes[:0]
	var ih xxhash.Digest
	for _, sl := range c.s.queue {
		it := sl.it
		ih.Reset()
		if it.kind == itemCall {
			put(&ih, uint64(itemCall))
			put(&ih, uint64(it.at-c.s.now))
			items = append(items, ih.Sum64())
			continue
		}
		if !c.s.wouldRun(it) && it.kind != itemCrash && it.kind != itemRestart {
			continue
		}
		put(&ih, uint64(it.kind))
		ih.WriteString(string(it.to))
		switch it.kind {
		case itemDeliver:
			m := it.ev.Msg()
			ih.WriteString(string(m.From))
			put(&ih, m.Seq)
			put(&ih, uint64(m.Index))
			ih.WriteString(it.ev.MsgType)
			put(&ih, xxhash.Sum64(it.ev.Payload))
		case itemTimer:
			put(&ih, uint64(it.ev.TimerID))
			ih.WriteString(it.ev.TimerName)
		case itemInput:
			ih.WriteString(it.ev.MsgType)
			put(&ih, xxhash.Sum64(it.ev.Payload))
		case itemTask:
			put(&ih, uint64(it.ev.Task))
		}
		put(&ih, uint64(it.at-c.s.now))
		put(&ih, uint64(it.latest-c.s.now))
		items = append(items, ih.Sum64())
	}
	slices.Sort(items)
	for _, v := range items {
		put(h, v)
	}
	c.hashes = items
	return h.Sum64()
}

// Due is the time of the earliest queued scenario action (or churn
// draw): an item that runs no handler but may queue events at its own
// exact time. A chooser that runs an event later than Due must first
// Advance to Due, or what the action queues would already be late.
func (c *Choice) Due() (time.Duration, bool) {
	if len(c.s.calls) == 0 {
		return 0, false
	}
	return time.Duration(c.s.calls[0].at), true
}

// dueBy reports whether something Decision.Advance would run is due by
// at: what AdvanceOne then runs, so a chooser that advances while this
// holds ends.
func (c *Choice) dueBy(at time.Duration) bool {
	return c.s.nextDue(int64(at), math.MaxUint64) != nil
}

// Enabled lists the events that may run next: every pending event whose
// window opens no later than the earliest window closes (running anything
// else would make a message later than the latency range allows, or a
// timer fire late). Sorted by window opening, then by when it was
// scheduled, so an index names the same event on every run that reaches
// the same state.
func (c *Choice) Enabled() []Pending {
	if !c.built {
		c.enabled = c.s.enabled(c.enabled[:0])
		c.built = true
	}
	return c.enabled
}

// enabled collects the events that may run next. Items that would run
// no handler (a timer cancelled or of an earlier incarnation, a message
// to a down node or across a partition) are not choices: they are
// consumed in time order before the chosen event, as the seeded
// simulator consumes them. Scenario actions run when due, unchosen.
func (s *Sim) enabled(out []Pending) []Pending {
	// The horizon is the earliest latest time of a runnable item. Items
	// come in order of their earliest time, and none is later than its
	// latest: once one starts after the horizon so far, none after it
	// can lower the horizon or be enabled, and the rest of the queue is
	// not looked at.
	horizon := int64(-1)
	runnable := s.runnable[:0]
	s.queue.ascend(&s.frontier, func(it *item) bool {
		if horizon >= 0 && it.at > horizon {
			return false
		}
		if s.wouldRun(it) {
			runnable = append(runnable, it)
			if horizon < 0 || it.latest < horizon {
				horizon = it.latest
			}
		}
		return true
	})
	for _, it := range runnable {
		if it.at <= horizon {
			out = append(out, s.pending(it))
		}
	}
	clear(runnable)
	s.runnable = runnable[:0]
	slices.SortFunc(out, func(a, b Pending) int {
		if c := cmp.Compare(a.it.at, b.it.at); c != 0 {
			return c
		}
		return cmp.Compare(a.it.seq, b.it.seq)
	})
	return out
}

// wouldRun reports whether running the item now would be an event: a
// handler invocation or a crash or restart.
func (s *Sim) wouldRun(it *item) bool {
	if it.kind == itemCall {
		return false
	}
	sn := s.nodes[it.to]
	switch it.kind {
	case itemDeliver:
		return sn.inst.Up() && !s.partitioned(it.ev.From, it.to)
	case itemTimer:
		return sn.inst.Up() && sn.incarnation == it.incarnation && sn.inst.TimerPending(it.ev.TimerID)
	case itemTask:
		return sn.inst.Up() && sn.incarnation == it.incarnation && sn.inst.TaskRunnable(it.ev.Task)
	case itemInput, itemCrash:
		return sn.inst.Up()
	case itemRestart:
		// A restart planned before the scenario crashed the node again
		// does not happen (simNode.held).
		return !sn.inst.Up() && sn.inst.Seq() > 0 && !(it.planned && it.held != sn.held)
	}
	return true // init
}

func (s *Sim) pending(it *item) Pending {
	p := Pending{Node: it.to, Earliest: time.Duration(it.at), Latest: time.Duration(it.latest), it: it}
	switch it.kind {
	case itemInit:
		p.Kind = node.KindInit
	case itemDeliver:
		p.Kind, p.Msg, p.MsgType = node.KindRecv, it.ev.Msg(), it.ev.MsgType
	case itemTimer:
		p.Kind, p.Timer, p.TimerName = node.KindTimer, it.ev.TimerID, it.ev.TimerName
	case itemInput:
		p.Kind, p.MsgType, p.InputDigest = node.KindInput, it.ev.MsgType, payloadDigest(it.ev.Payload)
	case itemCrash:
		p.Kind = node.KindCrash
	case itemRestart:
		p.Kind = node.KindRestart
	case itemTask:
		p.Kind, p.Task, p.TaskName, p.WakeSeq = node.KindTask, it.ev.Task, it.ev.TaskName, it.ev.WakeSeq
	}
	return p
}

// Seeded is the default chooser: events in virtual-time order (ties in
// the order they were scheduled), every draw from one generator seeded
// by the run's seed. It is what `replay sim --seed N` has always done, to
// the byte.
type Seeded struct {
	seed uint64
	r    *rand.Rand
}

// NewSeeded returns the default chooser for seed.
func NewSeeded(seed uint64) *Seeded {
	return &Seeded{seed: seed, r: rand.New(rand.NewPCG(seed, 0x5eed))}
}

func (c *Seeded) Describe() string                             { return fmt.Sprintf("seeded seed=%d", c.seed) }
func (c *Seeded) Next(*Choice) (Decision, error)               { return Decision{InTimeOrder: true}, nil }
func (c *Seeded) Lose(_ node.MsgID, _ node.ID, p float64) bool { return p > 0 && c.r.Float64() < p }
func (c *Seeded) Duplicate(_ node.MsgID, _ node.ID, p float64) bool {
	return p > 0 && c.r.Float64() < p
}
func (c *Seeded) Seed() uint64 { return c.r.Uint64() }
func (c *Seeded) ChurnWait(rate float64) time.Duration {
	// Beyond 2^62 ns (146 years) the conversion could overflow; such a
	// crash never comes anyway.
	return time.Duration(min(c.r.ExpFloat64()/rate*float64(time.Second), 1<<62))
}

// Latency draws a delay in whole microseconds: real networks do not
// deliver nanosecond-precise delays, and coarser times compress better.
func (c *Seeded) Latency(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	us := int64(hi-lo) / int64(time.Microsecond)
	if us == 0 {
		return lo
	}
	return lo + time.Duration(c.r.Int64N(us+1))*time.Microsecond
}

func (c *Seeded) DownFor(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(c.r.Int64N(int64(hi-lo)+1))
}

func (c *Seeded) CryptoRead(p []byte) {
	for i := range p {
		p[i] = byte(c.r.Uint32())
	}
}

// payloadDigest names an input by its content, so a schedule finds the
// same input again however many inputs were lost before it.
func payloadDigest(b []byte) uint64 { return xxhash.Sum64(b) }
