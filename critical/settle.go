package critical

import (
	"slices"

	"github.com/replaycheck/replaycheck/explore"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
)

// Settle wraps a strategy so that every run it hands out first restarts
// the nodes that are down where the run starts, then lets the strategy
// decide. A walk is the system left to settle: with no new faults, a node
// a crash took down comes back, as it would once an operator (or the
// scenario's own restart) revived it; without that, a walk from a step
// with a node down could never recover a predicate that needs every node.
// down lists the nodes down where the runs start (world.World.Down: a
// node that never started is not down, it runs its init).
func Settle(s explore.Strategy, down []node.ID) explore.Strategy {
	return &settling{Strategy: s, down: down}
}

type settling struct {
	explore.Strategy
	down []node.ID
}

func (s *settling) Next() (sim.Chooser, bool) {
	ch, ok := s.Strategy.Next()
	if !ok {
		return nil, false
	}
	return &settlingChooser{Chooser: ch, down: slices.Clone(s.down)}, true
}

// settlingChooser restarts the nodes down at the first decisions, one
// per call (the simulator asks again after a restart), then defers to
// the walk's chooser.
type settlingChooser struct {
	sim.Chooser
	down []node.ID
}

func (c *settlingChooser) Next(ch *sim.Choice) (sim.Decision, error) {
	if len(c.down) > 0 {
		id := c.down[0]
		c.down = c.down[1:]
		return sim.Decision{Restart: id, At: ch.Now()}, nil
	}
	return c.Chooser.Next(ch)
}
