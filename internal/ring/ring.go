// Package ring is a synthetic ring for benchmarking the checker: every
// member knows its successor and predecessor, and keeps changing a counter
// on a timer; now and then a member's predecessor pointer is briefly wrong,
// so ring consistency is a live question at every step.
package ring

import (
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// Member is one ring node's state.
type Member struct {
	Self    node.ID
	Succ    node.ID
	Pred    node.ID
	Counter int
	real    node.ID
}

// Name is the i-th member's ID; zero-padded so IDs sort by position.
func Name(i int) node.ID { return node.ID(fmt.Sprintf("m%05d", i)) }

func (m *Member) Init(env node.Env) {
	env.After(time.Duration(1+env.Rand().IntN(1000))*time.Millisecond, "tick")
}
func (m *Member) Receive(node.Env, node.ID, node.Message) {}
func (m *Member) Timer(env node.Env, _ node.Timer) {
	m.Counter++
	r := env.Rand()
	switch {
	case m.Pred != m.real: // repair
		m.Pred = m.real
	case r.IntN(20) == 0: // a transient wrong predecessor
		m.Pred = m.Self
	}
	env.After(time.Duration(500+r.IntN(1000))*time.Millisecond, "tick")
}

// System builds a ring of the run's nodes.
var System = &system.System{
	Name:     "ring",
	Codec:    node.NewCodec(),
	NodeName: Name,
	New: func(id node.ID, cfg system.Config) node.Handler {
		n := len(cfg.Nodes)
		for i, x := range cfg.Nodes {
			if x == id {
				succ, pred := cfg.Nodes[(i+1)%n], cfg.Nodes[(i+n-1)%n]
				return &Member{Self: id, Succ: succ, Pred: pred, real: pred}
			}
		}
		panic("ring: unknown node " + id)
	},
	Sim: system.SimDefaults{Nodes: 10, Steps: 20_000, Time: time.Hour},
}
