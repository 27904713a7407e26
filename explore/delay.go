package explore

import (
	"fmt"
	"slices"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
)

// Delaying explorers (Desai, Qadeer, Seshia: "Systematic Testing of
// Asynchronous Reactive Systems", FSE 2015): a deterministic base
// scheduler over the nodes, and delays that deviate from it. At each
// decision the base orders the nodes that have an enabled event (and the
// fault injector, after the nodes, once armed: see faultPlan); it runs
// the first one's earliest event, and each delay placed at that decision
// skips one of the order. The bases:
//
//   - rr, round-robin: the order starts at the node after the one that
//     ran last;
//   - rtc, run-to-completion: it starts at the node that ran last, which
//     keeps running while it has an enabled event;
//   - prr, probabilistic round-robin: after each step a coin decides
//     whether the next order starts at the node that just ran (as rtc) or
//     after it (as rr).
//
// Executions are stratified by their number of delays. Stratified
// sampling (SS) runs, for db = 0, 1, ..., Depth and then again from 0,
// Samples·2^db executions with exactly db delays at uniformly random
// decision points in [1, k] (k: the longest run so far), so that an
// execution needing d delays is sampled with probability about 1/k^d per
// run of its stratum; the per-stratum count grows with db as the stratum
// does. Stratified exhaustive search (SES, Params.Exhaustive) runs every
// placement of db delays, db rising to Depth, caching program states: a
// decision whose state (the world's hash, the base scheduler's position
// and the faults left) was reached before with no more delays used is
// not explored again.

// baseSched is the base scheduler's position.
type baseSched struct {
	kind string // rr, rtc, prr
	// at is the node the next order starts at (by index in the sorted
	// node list).
	at int
}

// order lists the nodes with an enabled event (ev[j] >= 0), from at on,
// cyclically.
func (b *baseSched) order(ev []int, out []int) []int {
	out = out[:0]
	for k := range ev {
		if j := (b.at + k) % len(ev); ev[j] >= 0 {
			out = append(out, j)
		}
	}
	return out
}

// ran moves the base past node j, which just ran; coin is prr's.
func (b *baseSched) ran(j, n int, coin bool) {
	switch {
	case b.kind == "rtc", b.kind == "prr" && coin:
		b.at = j
	default:
		b.at = (j + 1) % n
	}
}

// delayChooser runs a base scheduler with delays at given decision points.
type delayChooser struct {
	core
	desc   string
	base   baseSched
	delays map[int]int // decision point -> delays there
	ev     []int
	ord    []int
	// ses is set for an exhaustive search's runs.
	ses *sesRun
	cur decidedNode
}

// decidedNode is the node a decision chose on its first call, which
// holds through the advance that running its event may need.
type decidedNode struct{ point, node int }

func (c *delayChooser) Describe() string { return c.desc }

func (c *delayChooser) Next(ch *sim.Choice) (sim.Decision, error) {
	if len(ch.Enabled()) == 0 {
		return sim.Decision{}, nil
	}
	point := c.decisions + 1
	delays := c.delays[point]
	if c.ses != nil {
		d, n, done, err := c.ses.decide(c, ch, point)
		if done || err != nil {
			return d, err
		}
		delays = n
	}
	n := len(ch.Nodes())
	c.ev = withInjector(nodeEvents(ch, c.ev), c.ses == nil && c.injectorEnabled(ch))
	c.ord = c.base.order(c.ev, c.ord)
	j := c.ord[delays%len(c.ord)]
	if c.cur.point == point && c.ev[c.cur.node] >= 0 {
		// The call after an advance: the node was chosen on the first
		// call, in the state recorded there.
		j = c.cur.node
	}
	c.cur = decidedNode{point: point, node: j}
	var d sim.Decision
	if j == n {
		d = c.inject(ch)
	} else {
		d = c.pick(ch, c.ev[j])
	}
	if !d.Advance {
		c.base.ran(j, len(c.ev), unit(mix(c.key, 0xc017, uint64(point))) < 0.5)
	}
	return d, nil
}

// ssStrategy is a delaying explorer with stratified sampling.
type ssStrategy struct {
	base   string
	p      Params
	s      settings
	run    int
	db     int // current stratum
	inDB   int // runs of it handed out
	length runLength
}

func (s *ssStrategy) Name() string { return "delay-" + s.base }
func (s *ssStrategy) Describe() string {
	return fmt.Sprintf("delay-%s ss seed=%d depth=%d samples=%d %s", s.base, s.p.Seed, s.p.Depth, s.p.Samples, s.s)
}

// stratumSize is how many runs stratum db gets per cycle.
func (s *ssStrategy) stratumSize(db int) int { return s.p.Samples << min(db, 30) }

// place moves to the stratum of the next run: a cycle gives each its
// runs in turn.
func (s *ssStrategy) place() {
	if s.inDB >= s.stratumSize(s.db) {
		s.db, s.inDB = (s.db+1)%(s.p.Depth+1), 0
	}
	s.inDB++
}

func (s *ssStrategy) Next() (sim.Chooser, bool) {
	s.place()
	c := &delayChooser{core: newCore(s.p.Seed, s.run, true, s.s), base: baseSched{kind: s.base}, delays: map[int]int{}}
	c.desc = fmt.Sprintf("delay-%s ss seed=%d run=%d delays=%d k=%d %s", s.base, s.p.Seed, s.run, s.db, s.length.k, s.s)
	if k := s.length.k; k > 0 {
		for range s.db {
			c.delays[1+c.gen.IntN(k)]++
		}
	}
	c.placeFaults(s.length.k)
	s.run++
	return c, true
}

func (s *ssStrategy) Done(o Outcome) { s.length.learn(o) }

// skip passes over runs, moving through the strata as Next does.
func (s *ssStrategy) skip(n int) {
	for range n {
		s.place()
		s.run++
	}
}

// placement is one node of SES's tree: a deviation from the base
// scheduler at a decision point (delays there, or a crash), after its
// parent's. A run follows its placement's chain and takes the base's
// choice everywhere else.
type placement struct {
	parent *placement
	at     int
	delays int
	crash  node.ID
	used   int // delays in the chain, this one's included
}

// sesStrategy is a delaying explorer with stratified exhaustive search.
type sesStrategy struct {
	base        string
	p           Params
	s           settings
	strata      [][]*placement // by delays used; FIFO within
	db          int
	visited     map[uint64]int // state key -> fewest delays used at a visit
	outstanding int
	run         int
	// noCache turns state caching off (tests compare with it).
	noCache bool
}

func newSES(base string, p Params, s settings) *sesStrategy {
	st := &sesStrategy{base: base, p: p, s: s, strata: make([][]*placement, p.Depth+1), visited: map[uint64]int{}}
	st.strata[0] = []*placement{nil} // the base scheduler's own execution
	return st
}

func (s *sesStrategy) Name() string { return "delay-" + s.base }
func (s *sesStrategy) Describe() string {
	return fmt.Sprintf("delay-%s ses seed=%d depth=%d %s", s.base, s.p.Seed, s.p.Depth, s.s)
}
func (s *sesStrategy) States() int { return len(s.visited) }

func (s *sesStrategy) Next() (sim.Chooser, bool) {
	for len(s.strata[s.db]) == 0 {
		// A stratum is done when its runs are: they may add crash
		// placements to it.
		if s.outstanding > 0 || s.db == s.p.Depth {
			return nil, false
		}
		s.db++
	}
	pl := s.strata[s.db][0]
	s.strata[s.db] = s.strata[s.db][1:]
	r := &sesRun{s: s, pl: pl, actions: map[int]*placement{}}
	for q := pl; q != nil; q = q.parent {
		r.actions[q.at] = q
		r.lastAt = max(r.lastAt, q.at)
	}
	if pl != nil {
		r.used = pl.used
	}
	c := &delayChooser{core: newCore(s.p.Seed, s.run, false, s.s), base: baseSched{kind: s.base}, ses: r}
	c.desc = fmt.Sprintf("delay-%s ses seed=%d run=%d delays=%d %s: %s", s.base, s.p.Seed, s.run, r.used, s.s, pl)
	s.outstanding++
	s.run++
	return c, true
}

// String lists the placement's deviations: "3+1 7x n2" is one delay at
// decision 3, a crash of n2 at decision 7.
func (pl *placement) String() string {
	var parts []string
	for q := pl; q != nil; q = q.parent {
		if q.crash != "" {
			parts = append(parts, fmt.Sprintf("%dx%s", q.at, q.crash))
		} else {
			parts = append(parts, fmt.Sprintf("%d+%d", q.at, q.delays))
		}
	}
	if len(parts) == 0 {
		return "base"
	}
	slices.Reverse(parts)
	return fmt.Sprint(parts)
}

func (s *sesStrategy) Done(o Outcome) {
	s.outstanding--
	c, ok := o.Chooser.(*delayChooser)
	if !ok || c.ses == nil {
		return
	}
	for _, p := range c.ses.points {
		if v, seen := s.visited[p.key]; seen && v <= p.used && !s.noCache {
			break // what follows was explored from that visit
		}
		s.visited[p.key] = p.used
		for k := 1; k < p.nodes && p.used+k <= s.p.Depth; k++ {
			s.strata[p.used+k] = append(s.strata[p.used+k], &placement{parent: c.ses.pl, at: p.point, delays: k, used: p.used + k})
		}
		for _, id := range p.crashable {
			s.strata[p.used] = append(s.strata[p.used], &placement{parent: c.ses.pl, at: p.point, crash: id, used: p.used})
		}
	}
}

// sesRun is one SES run: the placement it follows, and the decision
// points after it, where its children deviate.
type sesRun struct {
	s       *sesStrategy
	pl      *placement
	actions map[int]*placement
	lastAt  int
	used    int
	points  []sesPoint
}

type sesPoint struct {
	point     int
	key       uint64
	nodes     int // nodes with an enabled event: delays 0..nodes-1 differ
	used      int
	crashable []node.ID
}

// decide follows the placement up to its last deviation; after it, it
// records each decision point (once, though an advance calls twice) and
// ends the run at a state explored before.
func (r *sesRun) decide(c *delayChooser, ch *sim.Choice, point int) (d sim.Decision, delays int, done bool, err error) {
	if point <= r.lastAt {
		a := r.actions[point]
		if a == nil {
			return d, 0, false, nil
		}
		if a.crash != "" {
			if !slices.Contains(ch.Up(), a.crash) {
				return d, 0, true, fmt.Errorf("explore: re-executing placement %s: %s is not up at decision %d (the program is not deterministic)", r.pl, a.crash, point)
			}
			return c.crash(ch, a.crash), 0, true, nil
		}
		return d, a.delays, false, nil
	}
	if n := len(r.points); n == 0 || r.points[n-1].point != point {
		key := mix(ch.TimedStateHash(), uint64(c.base.at), uint64(c.faults.left))
		if v, seen := r.s.visited[key]; seen && v <= r.used && !r.s.noCache {
			return c.stop("state explored before"), 0, true, nil
		}
		c.ev = withInjector(nodeEvents(ch, c.ev), false)
		p := sesPoint{point: point, key: key, used: r.used, nodes: len(c.base.order(c.ev, c.ord))}
		if c.faults.left > 0 && ch.Down() < c.maxDown {
			p.crashable = slices.Clone(ch.Up())
		}
		r.points = append(r.points, p)
	}
	return d, 0, false, nil
}
