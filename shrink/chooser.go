package shrink

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
)

// policy is how a candidate run treats what its base never had.
type policy struct {
	// deliverNew delivers messages the base never sent, as early as their
	// window allows; otherwise they are lost. Losing them keeps a
	// candidate close to its base and small; delivering them is what a
	// run with another node count needs, where almost every message is
	// new.
	deliverNew bool
	// early runs every kept delivery as early as its window allows
	// instead of at its base time: a run that reaches the violation
	// sooner in virtual time fires fewer periodic timers on the way.
	early bool
	// downMin, with early, restarts an injected restart's node as soon
	// as the run's down time allows after its crash.
	downMin time.Duration
	// shift moves every injected crash and restart this much earlier,
	// keeping their spacing: a failure that needs the system set up
	// but not seconds of its steady state comes sooner, and the
	// periodic events before it go.
	shift time.Duration
}

// current is the event being run: the base entry it stands for (-1: one
// the base never had), and its node and kind for checking.
type current struct {
	idx  int
	node node.ID
	kind node.Kind
}

// chooser runs a candidate: a base with some entries left out. It follows
// the kept entries leniently, recognising each by its key: an entry
// whose event never comes (its cause was left out) is skipped, and the
// run ends when every kept entry has run or virtual time has passed the
// last of them by slack. Events the base did not keep and cannot drop
// (timers, self-sends, events it never had) run in time order, as the
// seeded simulator would run them: a node that is up fires its timers.
// Deliveries of left-out messages are losses, decided when they are sent.
type chooser struct {
	b      *base
	pol    policy
	queues map[key][]int // kept entries not run yet, by key, in order
	left   int
	inject []int // kept crash and restart entries, which may need injecting
	done   []bool

	seqs            map[nodeSeq]int                          // the run's (node, seq) -> base entry, -1 if none
	timers          map[node.ID]map[node.TimerID]timerOrigin // the run's timers -> origin in the base
	cur             current
	downAt          map[node.ID]time.Duration // when each node last crashed in this run
	slack, deadline time.Duration
	// Randomness of events the base never had (or draws beyond what
	// the base's event drew) comes from a hash of a counter: the same
	// candidate draws the same.
	draws  uint64
	crypto []byte
	// beyond holds the deliveries of the base after the last entry the
	// candidate keeps: the candidate ends before they come (a run cut
	// after its violation), so their messages are in flight at its end,
	// not lost (Withhold).
	beyond map[key]bool
}

func newChooser(b *base, keep []bool, pol policy, slack time.Duration) *chooser {
	c := &chooser{b: b, pol: pol, queues: map[key][]int{}, done: make([]bool, len(b.entries)),
		seqs: map[nodeSeq]int{}, downAt: map[node.ID]time.Duration{}, timers: map[node.ID]map[node.TimerID]timerOrigin{}, slack: slack, cur: current{idx: -1}}
	// A fork's kept steps ran before the continuation (replayed, not
	// chosen): the messages in flight and the timers pending at the fork
	// are theirs, and are named by them.
	for i, e := range b.entries[:b.fixed] {
		c.seqs[nodeSeq{e.ev.Node, e.ev.Seq}] = i
		setTimers(c.timers, e.ev, i, e.ev.TimersSet)
	}
	last := -1
	for i := range b.entries {
		if keep[i] && b.schedulable(i) {
			last = i
		}
	}
	for i, e := range b.entries {
		if i > last && e.Kind == node.KindRecv && e.key.by >= 0 {
			if c.beyond == nil {
				c.beyond = map[key]bool{}
			}
			c.beyond[e.key] = true
		}
		if !keep[i] || !b.schedulable(i) {
			continue
		}
		c.queues[e.key] = append(c.queues[e.key], i)
		if b.looseOK(i) {
			// The filter lets its input through with other content too:
			// matched here the same way, or it ran as a new event whose
			// messages were lost.
			c.queues[e.key.loose()] = append(c.queues[e.key.loose()], i)
		}
		c.left++
		c.deadline = max(c.deadline, e.At+slack)
		if e.Kind == node.KindCrash || e.Kind == node.KindRestart {
			c.inject = append(c.inject, i)
		}
	}
	return c
}

func (c *chooser) Describe() string {
	mode := "base times"
	if c.pol.early {
		mode = "earliest times"
	}
	return fmt.Sprintf("shrink: %d of %d events kept, %s", c.left, len(c.b.entries)-c.b.fixed, mode)
}

// keyOf names a pending event the way the base names its entries; ok is
// false for an event whose cause the base does not know.
func (c *chooser) keyOf(p sim.Pending) (key, bool) {
	k := key{kind: p.Kind, node: p.Node, by: -1}
	switch p.Kind {
	case node.KindRecv:
		by, ok := c.seqs[nodeSeq{p.Msg.From, p.Msg.Seq}]
		if !ok || by < 0 {
			return k, false
		}
		k.by, k.slot = by, int(p.Msg.Index)
	case node.KindTimer:
		o, ok := c.timers[p.Node][p.Timer]
		if !ok || o.by < 0 {
			return k, false
		}
		k.by, k.slot = o.by, o.slot
	case node.KindInput:
		k.at, k.digest = p.Earliest, p.InputDigest
	case node.KindCrash, node.KindRestart:
		k.at = p.Earliest
	case node.KindTask:
		by, ok := c.seqs[nodeSeq{p.Node, p.WakeSeq}]
		if !ok || by < 0 {
			return k, false
		}
		k.by = by
	}
	return k, true
}

// kept is the base entry a pending event stands for, if it is kept and
// has not run.
func (c *chooser) kept(p sim.Pending) (int, bool) {
	k, ok := c.keyOf(p)
	if !ok {
		return -1, false
	}
	q := c.queues[k]
	if len(q) == 0 && p.Kind == node.KindInput {
		q = c.queues[k.loose()]
	}
	if len(q) == 0 {
		return -1, false
	}
	e := &c.b.entries[q[0]]
	if e.MsgType != p.MsgType || e.TimerName != p.TimerName || e.TaskName != p.TaskName {
		return -1, false // the same slot now holds another message or timer
	}
	return q[0], true
}

// option is one thing the chooser could do next.
type option struct {
	at    time.Duration
	idx   int // base entry, -1: an event the base did not keep
	index int // in Enabled, -1: inject idx
	name  string
}

func (o option) before(p option) bool {
	if o.at != p.at {
		return o.at < p.at
	}
	if (o.idx >= 0) != (p.idx >= 0) {
		return o.idx >= 0 // kept entries first, as they ran in the base
	}
	if o.idx != p.idx {
		return o.idx < p.idx
	}
	return o.name < p.name
}

// Next runs the kept entry due first (at its base time, moved into its
// window), or an event that must run before it.
func (c *chooser) Next(ch *sim.Choice) (sim.Decision, error) {
	for {
		if c.left == 0 {
			return sim.Decision{Stop: "every kept event ran"}, nil
		}
		best, ok := c.best(ch)
		if !ok {
			if due, ok := ch.Due(); ok {
				return sim.Decision{Advance: true, At: due}, nil
			}
			return sim.Decision{Stop: "nothing left to run"}, nil
		}
		if best.idx < 0 && best.at > c.deadline {
			return sim.Decision{Stop: "the kept events that are left never came"}, nil
		}
		// A scenario action due first may queue what must run before.
		if due, ok := ch.Due(); ok && due < best.at {
			return sim.Decision{Advance: true, At: due}, nil
		}
		if best.index >= 0 {
			p := ch.Enabled()[best.index]
			c.take(best, p.Node, p.Kind)
			return sim.Decision{Index: best.index, At: best.at}, nil
		}
		e := &c.b.entries[best.idx]
		c.take(best, e.Node, e.Kind)
		up := isUp(ch, e.Node)
		switch {
		case e.Kind == node.KindCrash && up:
			return sim.Decision{Crash: e.Node, At: best.at}, nil
		case e.Kind == node.KindRestart && !up:
			return sim.Decision{Restart: e.Node, At: best.at}, nil
		}
		// The crash it stands for cannot happen (the node is down), or
		// the restart is moot (its crash was left out): skip it.
	}
}

// best is the next thing to do: the earliest of the enabled events and
// the kept injections due.
func (c *chooser) best(ch *sim.Choice) (option, bool) {
	en := ch.Enabled()
	now := ch.Now()
	horizon := time.Duration(math.MaxInt64)
	for _, p := range en {
		horizon = min(horizon, p.Latest)
	}
	var best option
	found := false
	consider := func(o option) {
		if !found || o.before(best) {
			best, found = o, true
		}
	}
	matched := map[int]bool{}
	for i, p := range en {
		lo, hi := max(now, p.Earliest), min(p.Latest, horizon)
		idx, ok := c.kept(p)
		if !ok {
			consider(option{at: c.unkeptTime(p, lo, hi), idx: -1, index: i, name: p.String()})
			continue
		}
		matched[idx] = true
		at := lo
		if !c.pol.early {
			at = max(lo, min(c.b.entries[idx].At, hi))
		}
		consider(option{at: at, idx: idx, index: i})
	}
	for _, idx := range c.inject {
		if c.done[idx] || matched[idx] {
			continue
		}
		// Crashes keep their base time in both modes: when a crash comes
		// relative to the timers it races is what matters. With early,
		// a restart comes as soon as the down time allows.
		e := &c.b.entries[idx]
		at := max(now, e.At-c.pol.shift)
		if down, ok := c.downAt[e.Node]; ok && c.pol.early && e.Kind == node.KindRestart {
			at = max(now, min(e.At, down+c.pol.downMin))
		}
		if at > horizon {
			continue // something else must run first
		}
		consider(option{at: at, idx: idx, index: -1})
	}
	return best, found
}

// unkeptTime is when an event no kept entry stands for runs. One the base
// never had runs as early as it may, in due order. One whose cause the
// base had but that no kept entry delivers runs as late as it may: it
// is a message to self (which the simulator never loses) that the base
// never delivered because its node went down first, or one whose
// delivery was left out; late gives a kept crash the chance to come
// first, as it did in the base.
func (c *chooser) unkeptTime(p sim.Pending, lo, hi time.Duration) time.Duration {
	if _, known := c.keyOf(p); known && hi > lo {
		return hi
	}
	return lo
}

// take notes the event about to run.
func (c *chooser) take(o option, id node.ID, kind node.Kind) {
	c.cur = current{idx: o.idx, node: id, kind: kind}
	c.crypto = nil
	if kind == node.KindCrash {
		c.downAt[id] = o.at
	}
	if o.idx < 0 {
		return
	}
	e := &c.b.entries[o.idx]
	c.dequeue(e.key, o.idx)
	if c.b.looseOK(o.idx) {
		c.dequeue(e.key.loose(), o.idx)
	}
	c.done[o.idx] = true
	c.left--
	c.deadline = max(c.deadline, o.at+c.slack)
	c.crypto = e.Crypto
}

// dequeue removes entry idx from the queue of k (at its front, as entries
// of one key run in order).
func (c *chooser) dequeue(k key, idx int) {
	c.queues[k] = slices.DeleteFunc(c.queues[k], func(i int) bool { return i == idx })
}

func isUp(ch *sim.Choice, id node.ID) bool {
	for _, u := range ch.Up() {
		if u == id {
			return true
		}
	}
	return false
}

// observe learns, after each event of the run, which base event it stood
// for, so the messages and timers it caused are recognised later.
func (c *chooser) observe(ev *node.Event, _ *node.Instance) error {
	idx := c.cur.idx
	if c.cur.node != ev.Node || c.cur.kind != ev.Kind {
		idx = -1
	}
	c.seqs[nodeSeq{ev.Node, ev.Seq}] = idx
	if idx < 0 {
		setTimers(c.timers, ev, -1, ev.TimersSet)
		return nil
	}
	// A timer is the base's only if the base's event set one of that
	// name in that position.
	set := c.b.entries[idx].ev.TimersSet
	if ev.Kind == node.KindCrash || ev.Kind == node.KindRestart || c.timers[ev.Node] == nil {
		c.timers[ev.Node] = map[node.TimerID]timerOrigin{}
	}
	for j, ts := range ev.TimersSet {
		o := timerOrigin{by: -1}
		if j < len(set) && set[j].Name == ts.Name {
			o = timerOrigin{by: idx, slot: j}
		}
		c.timers[ev.Node][ts.ID] = o
	}
	return nil
}

// Lose decides a message's fate when it is sent: delivered if the base
// delivered it and kept the delivery, lost if the base lost it or the
// delivery was left out, and by the policy if the base never sent it.
func (c *chooser) Lose(msg node.MsgID, to node.ID, _ float64) bool {
	_, n, known := c.deliveries(msg, to)
	if !known {
		return !c.pol.deliverNew
	}
	return n == 0
}

// Withhold tells the simulator which of the messages Lose lost are in
// flight at the candidate's end instead (sim.Withholder): those the base
// delivered after everything the candidate keeps, and those in flight at
// the base's own end. A shrunk run's counts then say what its story
// shows: "dropped 2" for two messages the run ended before was wrong.
func (c *chooser) Withhold(msg node.MsgID, to node.ID) bool {
	k, n, known := c.deliveries(msg, to)
	return known && n == 0 && (c.beyond[k] || c.b.inFlight[k])
}

// Duplicate duplicates what the base delivered twice and kept twice.
func (c *chooser) Duplicate(msg node.MsgID, to node.ID, _ float64) bool {
	_, n, _ := c.deliveries(msg, to)
	return n > 1
}

// deliveries counts the kept deliveries of a message the current event
// sends (or a fork's kept step sent), named by k; known is false when
// the base's event sent no such message.
func (c *chooser) deliveries(msg node.MsgID, to node.ID) (k key, n int, known bool) {
	idx := c.cur.idx
	if msg.From != c.cur.node {
		// Not sent by the event under way: a message in flight at a
		// fork, whose fate is decided as the continuation starts. Its
		// sender is a kept step of the fork.
		var ok bool
		if idx, ok = c.seqs[nodeSeq{msg.From, msg.Seq}]; !ok {
			return k, 0, false
		}
	}
	if idx < 0 {
		return k, 0, false
	}
	sends := c.b.entries[idx].ev.Sends
	if int(msg.Index) >= len(sends) || sends[msg.Index].To != to {
		return k, 0, false
	}
	k = key{kind: node.KindRecv, node: to, by: idx, slot: int(msg.Index)}
	return k, len(c.queues[k]), true
}

// Latency opens the whole window; Next picks the time within it.
func (c *chooser) Latency(lo, _ time.Duration) time.Duration { return lo }

// ChurnWait never comes: crashes are entries of the base.
func (c *chooser) ChurnWait(float64) time.Duration { return time.Duration(math.MaxInt64) }

// DownFor is never asked for: injected crashes have their restarts as
// entries of their own.
func (c *chooser) DownFor(lo, _ time.Duration) time.Duration { return lo }

// Seed serves the base event's seed, or a drawn one.
func (c *chooser) Seed() uint64 {
	if c.cur.idx >= 0 && c.b.entries[c.cur.idx].HasSeed {
		return c.b.entries[c.cur.idx].Seed
	}
	return c.draw()
}

// CryptoRead serves the base event's bytes, then drawn ones.
func (c *chooser) CryptoRead(p []byte) {
	n := copy(p, c.crypto)
	c.crypto = c.crypto[n:]
	for i := n; i < len(p); i += 8 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], c.draw())
		copy(p[i:], b[:])
	}
}

func (c *chooser) draw() uint64 {
	c.draws++
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], c.draws)
	return xxhash.Sum64(b[:])
}
