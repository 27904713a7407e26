package explore

import (
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// The tests' tiny system: at start every node pings every other; a ping
// is answered with a pong. Nothing else happens, so the state space is
// small enough to enumerate.
type Ping struct{}
type Pong struct{}

type tinyNode struct {
	Log      []string // what arrived, in order
	Inverted bool
	bug      string
}

func (n *tinyNode) Init(env node.Env) {
	for _, p := range env.Peers() {
		env.Send(p, Ping{})
	}
}

func (n *tinyNode) Receive(env node.Env, from node.ID, m node.Message) {
	switch m.(type) {
	case Ping:
		for _, l := range n.Log {
			// bug "inversion": a ping from a higher node came first.
			if n.bug == "inversion" && l > "ping "+string(from) && l[:4] == "ping" {
				n.Inverted = true
			}
		}
		n.Log = append(n.Log, "ping "+string(from))
		env.Send(from, Pong{})
	case Pong:
		// bug "panic": a pong from n2 before any ping.
		if n.bug == "panic" && from == "n2" && len(n.Log) == 0 {
			panic(fmt.Sprintf("%s: pong from %s before any ping", env.Self(), from))
		}
		n.Log = append(n.Log, "pong "+string(from))
	}
}

func (n *tinyNode) Timer(node.Env, node.Timer) {}

// Input is the scenario's request: log it and ping everyone again.
func (n *tinyNode) Input(env node.Env, m node.Message) {
	n.Log = append(n.Log, "input")
	for _, p := range env.Peers() {
		env.Send(p, Ping{})
	}
}

// tinyInputSystem is the tiny system with a scenario input to n1 while
// the first pings are in flight, so choosers must advance to it.
func tinyInputSystem(nodes int) *system.System {
	sys := tinySystem(nodes)
	sys.Scenario = func(ctl system.Controller) {
		ctl.At(1500*time.Microsecond, func() { ctl.Input("n1", Ping{}) })
	}
	return sys
}

func tinySystem(nodes int) *system.System {
	return &system.System{
		Name:  "tiny",
		Codec: node.NewCodec().MustRegister(Ping{}, Pong{}),
		New: func(_ node.ID, cfg system.Config) node.Handler {
			return &tinyNode{bug: cfg.Bug}
		},
		Bugs: []system.Bug{{Name: "inversion", Summary: "flags pings that arrive out of node order"}, {Name: "panic", Summary: "panics on an early pong"}},
		Sim:  system.SimDefaults{Nodes: nodes, Steps: 1000, Time: time.Second},
	}
}
