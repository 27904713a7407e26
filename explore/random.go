package explore

import (
	"fmt"

	"github.com/replaycheck/replaycheck/sim"
)

// randomStrategy is MaceMC's random walk (Killian, Anderson, Jhala,
// Vahdat: "Life, Death, and the Critical Transition: Finding Liveness
// Bugs in Systems Code", NSDI 2007): at every decision, one of the
// enabled events uniformly at random, the armed fault injector counting
// as one more. Parameters: the seed and the fault budget.
type randomStrategy struct {
	p      Params
	s      settings
	run    int
	length runLength
}

func (r *randomStrategy) Name() string { return "random" }
func (r *randomStrategy) Describe() string {
	return fmt.Sprintf("random seed=%d %s", r.p.Seed, r.s)
}

func (r *randomStrategy) Next() (sim.Chooser, bool) {
	c := &randomChooser{core: newCore(r.p.Seed, r.run, true, r.s)}
	c.desc = fmt.Sprintf("random seed=%d run=%d %s", r.p.Seed, r.run, r.s)
	c.placeFaults(r.length.k)
	r.run++
	return c, true
}

func (r *randomStrategy) Done(o Outcome) { r.length.learn(o) }

// skip passes over runs: each one's generator is keyed by its number.
func (r *randomStrategy) skip(n int) { r.run += n }

type randomChooser struct {
	core
	desc string
	// u is this decision's draw: the same on the call after an advance.
	u     float64
	drawn int
}

func (c *randomChooser) Describe() string { return c.desc }

func (c *randomChooser) Next(ch *sim.Choice) (sim.Decision, error) {
	en := ch.Enabled()
	if len(en) == 0 {
		return sim.Decision{}, nil // only scenario actions are due: the simulator runs them
	}
	if c.drawn != c.decisions+1 {
		c.u, c.drawn = c.gen.Float64(), c.decisions+1
	}
	n := len(en)
	if c.injectorEnabled(ch) {
		n++ // the fault injector is one more choice
	}
	i := int(c.u * float64(n))
	if i == len(en) {
		return c.inject(ch), nil
	}
	return c.pick(ch, i), nil
}

// runLength estimates k, the number of decisions of a run, for
// strategies that place something at random decision points in [1, k]:
// the longest run seen so far. The first run, alone in its batch, has
// none to go by.
type runLength struct{ k int }

func (l *runLength) learn(o Outcome) {
	if c, ok := o.Chooser.(interface{ Decisions() int }); ok {
		l.k = max(l.k, c.Decisions())
	}
}
