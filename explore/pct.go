package explore

import (
	"fmt"

	"github.com/replaycheck/replaycheck/sim"
)

// pctStrategy is probabilistic concurrency testing (Burckhardt, Kothari,
// Musuvathi, Nagarakatte: "A Randomized Scheduler with Probabilistic
// Guarantees of Finding Bugs", ASPLOS 2010), with nodes for threads.
// Each run gives the nodes (and the fault injector, as one more) distinct
// random priorities d..d+n−1 and picks
// d−1 change points among the decision points [1, k], the i-th drawn
// with priority i; it always runs the enabled event (the earliest in
// window order) of the highest-priority node that has one, and at a
// change point lowers that node's priority to the point's before
// choosing. A bug of depth d (d ordering constraints) is found with
// probability at least 1/(n·k^(d−1)) per run. Parameters: the seed,
// Depth d (default 3), the fault budget. k is the longest run seen so
// far; the first run has no change points.
type pctStrategy struct {
	p      Params
	s      settings
	run    int
	length runLength
}

func (s *pctStrategy) Name() string { return "pct" }
func (s *pctStrategy) Describe() string {
	return fmt.Sprintf("pct seed=%d depth=%d %s", s.p.Seed, s.p.Depth, s.s)
}

func (s *pctStrategy) Next() (sim.Chooser, bool) {
	c := &pctChooser{core: newCore(s.p.Seed, s.run, true, s.s), depth: s.p.Depth, changes: map[int]int{}}
	c.desc = fmt.Sprintf("pct seed=%d run=%d depth=%d k=%d %s", s.p.Seed, s.run, s.p.Depth, s.length.k, s.s)
	// Change points first, then faults: both from the run's generator.
	if k := s.length.k; k > 0 {
		for i := 1; i < s.p.Depth && len(c.changes) < k; i++ {
			for {
				pt := 1 + c.gen.IntN(k)
				if _, dup := c.changes[pt]; !dup {
					c.changes[pt] = i
					break
				}
			}
		}
	}
	c.placeFaults(s.length.k)
	s.run++
	return c, true
}

func (s *pctStrategy) Done(o Outcome) { s.length.learn(o) }

// skip passes over runs: each one's generator is keyed by its number.
func (s *pctStrategy) skip(n int) { s.run += n }

type pctChooser struct {
	core
	desc    string
	depth   int
	prio    []int       // by node index, the injector's last; nil until the first decision
	changes map[int]int // decision point -> the priority it gives
	ev      []int
}

func (c *pctChooser) Describe() string { return c.desc }

func (c *pctChooser) Next(ch *sim.Choice) (sim.Decision, error) {
	if len(ch.Enabled()) == 0 {
		return sim.Decision{}, nil
	}
	n := len(ch.Nodes())
	if c.prio == nil {
		// One priority more than nodes: the fault injector's.
		c.prio = make([]int, n+1)
		for i, j := range c.gen.Perm(n + 1) {
			c.prio[i] = c.depth + j
		}
	}
	c.ev = withInjector(nodeEvents(ch, c.ev), c.injectorEnabled(ch))
	top := c.top()
	if p, ok := c.changes[c.decisions+1]; ok {
		// Once per point: the call after an advance finds it applied.
		delete(c.changes, c.decisions+1)
		c.prio[top] = p
		top = c.top()
	}
	if top == n {
		return c.inject(ch), nil
	}
	return c.pick(ch, c.ev[top]), nil
}

// top is the highest-priority node with an enabled event.
func (c *pctChooser) top() int {
	best := -1
	for j, i := range c.ev {
		if i >= 0 && (best < 0 || c.prio[j] > c.prio[best]) {
			best = j
		}
	}
	return best
}
