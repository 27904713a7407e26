package explore

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
)

// core is what every exploring chooser shares: the decisions that are not
// scheduling (message fates, handler randomness, churn timing), fault
// injection, the advance protocol that keeps scenario actions on time,
// and the record of the run's last decision.
type core struct {
	key uint64     // fates and handler seeds: the exploration seed, and the run for sampling strategies
	gen *rand.Rand // churn waits, down times, fault placement and targets

	faults   faultPlan
	down     [2]time.Duration
	failStop bool
	maxDown  int

	// decisions counts the picks and crashes made so far; a decision
	// point is named by its 1-based number.
	decisions int
	// stopped says the chooser ended the run before its natural end
	// (a depth bound, a state explored before): liveness is not judged.
	stopped string

	// The event being run and the randomness its handler drew, for a
	// panic's schedule and for handler seeds keyed by event identity.
	last    sim.ScheduledEvent
	hasLast bool
	evKey   uint64
	evRand  *rand.Rand
	seen    map[string]int
}

// faultPlan is a sampling strategy's fault injector. As in P's test
// harnesses, where failures come from a machine the scheduler runs like
// any other, it is one more participant the strategy schedules: from
// its arming point (a uniformly random decision point) until the budget
// is spent, it is enabled, and each time the strategy runs it, it
// crashes one up node chosen at random. When the crashes come after
// arming, and how close together, is the strategy's scheduling.
// Searching strategies branch on every crash instead and never arm it.
type faultPlan struct {
	left  int
	armAt int // 0: never
}

func newCore(seed uint64, run int, sampling bool, s settings) core {
	key := mix(seed, 0x3c91)
	if sampling {
		key = mix(key, uint64(run)+1)
	}
	return core{
		key: key, gen: rand.New(rand.NewPCG(key, 0x9e37)),
		faults: faultPlan{left: s.faults}, down: s.down, failStop: s.failStop, maxDown: s.maxDown,
		seen: map[string]int{},
	}
}

// mix hashes words into a well-spread 64-bit value.
func mix(words ...uint64) uint64 {
	var b [8]byte
	d := xxhash.New()
	for _, w := range words {
		binary.LittleEndian.PutUint64(b[:], w)
		d.Write(b[:])
	}
	return d.Sum64()
}

// unit is a number in [0, 1) fixed by key and the words.
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// placeFaults arms the fault injector at a uniformly random decision
// point in [1, k]. With k unknown (0: the first run) it is never armed.
func (c *core) placeFaults(k int) {
	if k > 0 && c.faults.left > 0 {
		c.faults.armAt = 1 + c.gen.IntN(k)
	}
}

// injectorEnabled reports whether the fault injector may run at this
// decision: armed, budget left, and a node that may go down (an injected
// crash honours the run's max-down).
func (c *core) injectorEnabled(ch *sim.Choice) bool {
	return c.faults.left > 0 && c.faults.armAt > 0 && c.decisions+1 >= c.faults.armAt &&
		ch.Down() < c.maxDown && len(ch.Up()) > 0
}

// inject is the fault injector's turn: a crash of a random up node.
func (c *core) inject(ch *sim.Choice) sim.Decision {
	up := ch.Up()
	return c.crash(ch, up[c.gen.IntN(len(up))])
}

// crash is the decision to crash id now, restarting it after a down time
// drawn from the run's range (never, fail-stop).
func (c *core) crash(ch *sim.Choice, id node.ID) sim.Decision {
	c.faults.left--
	var d time.Duration
	if !c.failStop {
		d = c.down[0] + time.Duration(c.gen.Int64N(int64(c.down[1]-c.down[0])+1))
	}
	c.decisions++
	c.begin(sim.Pending{Kind: node.KindCrash, Node: id}, ch.Now())
	return sim.Decision{Crash: id, Down: d, At: ch.Now()}
}

// pick is the decision to run ch.Enabled()[i] as early as its window
// allows. A scenario action (or churn) due before that time must run
// first, or what it queues (an input, a crash) would be late for its
// exact time: so pick first asks the simulator to Advance to the action,
// and on the next call, with it run, chooses again. Choosers compute i
// the same way on every call of one decision (from the same draws), so
// only a change in what is enabled changes it.
func (c *core) pick(ch *sim.Choice, i int) sim.Decision {
	p := ch.Enabled()[i]
	at := max(ch.Now(), p.Earliest)
	if due, ok := ch.Due(); ok && due < at {
		return sim.Decision{Advance: true, At: due}
	}
	c.decisions++
	c.begin(p, at)
	return sim.Decision{Index: i, At: at}
}

// stop ends the run early, saying why.
func (c *core) stop(reason string) sim.Decision {
	c.stopped = reason
	return sim.Decision{Stop: reason}
}

// begin notes the event about to run: the last one of the run so far,
// and the key of its handler's randomness, which depends on the event's
// identity (and how often an event of that name ran before), not on when
// it runs, so a search that reaches it by another path draws the same.
func (c *core) begin(p sim.Pending, at time.Duration) {
	name := p.String()
	c.seen[name]++
	c.evKey = mix(c.key, xxhash.Sum64String(name), uint64(c.seen[name]))
	c.evRand = nil
	c.last = sim.ScheduledEvent{At: at, Pending: p}
	c.hasLast = true
}

func (c *core) eventRand() *rand.Rand {
	if c.evRand == nil {
		c.evRand = rand.New(rand.NewPCG(c.evKey, 0x5eed))
	}
	return c.evRand
}

// Seed serves the handler's per-event seed.
func (c *core) Seed() uint64 {
	s := c.eventRand().Uint64()
	c.last.Seed, c.last.HasSeed = s, true
	return s
}

// CryptoRead serves the handler's crypto/rand reads.
func (c *core) CryptoRead(p []byte) {
	r := c.eventRand()
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	c.last.Crypto = append(c.last.Crypto, p...)
}

// Lose and Duplicate decide a message's fate from its identity, under
// the run's probabilities: the same message meets the same fate on every
// path to it.
func (c *core) Lose(msg node.MsgID, to node.ID, p float64) bool {
	return p > 0 && unit(c.msgHash(1, msg, to)) < p
}

func (c *core) Duplicate(msg node.MsgID, to node.ID, p float64) bool {
	return p > 0 && unit(c.msgHash(2, msg, to)) < p
}

func (c *core) msgHash(tag uint64, msg node.MsgID, to node.ID) uint64 {
	return mix(c.key, tag, xxhash.Sum64String(string(msg.From)), msg.Seq, uint64(msg.Index), xxhash.Sum64String(string(to)))
}

// Latency opens the whole window: the chooser picks when within it.
func (c *core) Latency(lo, _ time.Duration) time.Duration { return lo }

// ChurnWait and DownFor keep the run's churn (as the seeded simulator
// draws it) from the chooser's own generator.
func (c *core) ChurnWait(rate float64) time.Duration {
	return time.Duration(min(c.gen.ExpFloat64()/rate*float64(time.Second), 1<<62))
}

func (c *core) DownFor(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(c.gen.Int64N(int64(hi-lo)+1))
}

// LastEvent is the last event the chooser ran or injected, with the
// randomness its handler drew: after a handler panic, the event that
// panicked (the trace ends before it), which a schedule needs to
// reproduce the panic.
func (c *core) LastEvent() (sim.ScheduledEvent, bool) { return c.last, c.hasLast }

// Decisions is the number of decisions the chooser made.
func (c *core) Decisions() int { return c.decisions }

// Truncated says why the chooser ended the run before its natural end
// ("" if it did not): a run cut short has no end at which to judge
// liveness.
func (c *core) Truncated() string { return c.stopped }

// nodeEvents maps each node (by index in ch.Nodes()) to the index of the
// enabled event it would run, -1 if none: the one whose window opens
// first, ties broken by the event's identity. Not the first in Enabled's
// order, which breaks ties by when events were scheduled: that is not
// part of the state, and a search that caches states needs a node's
// choice to depend on the state alone.
func nodeEvents(ch *sim.Choice, buf []int) []int {
	ids := ch.Nodes()
	buf = buf[:0]
	for range ids {
		buf = append(buf, -1)
	}
	en := ch.Enabled()
	for i, p := range en {
		j, ok := slices.BinarySearch(ids, p.Node)
		if !ok {
			continue
		}
		if b := buf[j]; b < 0 || p.Earliest < en[b].Earliest || p.Earliest == en[b].Earliest && p.String() < en[b].String() {
			buf[j] = i
		}
	}
	return buf
}

// withInjector adds the fault injector's slot after the nodes' in a
// nodeEvents map: 0 when it may run, -1 when not.
func withInjector(ev []int, enabled bool) []int {
	if enabled {
		return append(ev, 0)
	}
	return append(ev, -1)
}

// settings are what every chooser of an exploration takes from its
// parameters and the run's configuration.
type settings struct {
	faults   int
	down     [2]time.Duration
	failStop bool
	maxDown  int
}

func (s settings) String() string {
	switch {
	case s.faults == 0:
		return "faults=0"
	case s.failStop:
		return fmt.Sprintf("faults=%d fail-stop", s.faults)
	}
	return fmt.Sprintf("faults=%d down=%v-%v", s.faults, s.down[0], s.down[1])
}
