package sim_test

import (
	"io"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// The task switch cost: one node passes a token back and forth N times,
// either between two tasks (each hand-off is a Cond signal and a resume
// event) or as plain handlers (each hop a message to itself and a recv
// event). Both report events/s of the whole simulator path (dispatch,
// state hash, trace encoding); their ratio is what a task switch costs
// over a handler invocation.
//
//	go test ./sim -run=^$ -bench=PingPong -benchtime=20x

const pingPongHops = 20_000

type pingPong struct {
	Turn, Hops int
	Mu         node.Mutex
	Changed    node.Cond
	tasks      bool
}

func (p *pingPong) Init(env node.Env) {
	if !p.tasks {
		env.Send(env.Self(), Ping{})
		return
	}
	for side := range 2 {
		node.Go(env, [...]string{"ping", "pong"}[side], func(t *node.Task) {
			p.Mu.Lock(t)
			defer p.Mu.Unlock(t)
			for {
				for p.Turn != side && p.Hops < pingPongHops {
					p.Changed.Wait(t, &p.Mu)
				}
				if p.Hops >= pingPongHops {
					p.Changed.Signal(t)
					return
				}
				p.Hops++
				p.Turn = 1 - side
				p.Changed.Signal(t)
			}
		})
	}
}

func (p *pingPong) Receive(env node.Env, _ node.ID, _ node.Message) {
	p.Turn = 1 - p.Turn
	if p.Hops++; p.Hops < pingPongHops {
		env.Send(env.Self(), Ping{})
	}
}
func (p *pingPong) Timer(node.Env, node.Timer) {}

func pingPongSystem(tasks bool) *system.System {
	return &system.System{
		Name:  "pingpong",
		Codec: node.NewCodec().MustRegister(Ping{}),
		New:   func(node.ID, system.Config) node.Handler { return &pingPong{tasks: tasks} },
		Sim:   system.SimDefaults{Nodes: 1, Steps: 10 * pingPongHops, Time: time.Hour},
	}
}

func benchPingPong(b *testing.B, tasks bool) {
	sys := pingPongSystem(tasks)
	var events int64
	for b.Loop() {
		cfg := sim.DefaultConfig()
		cfg.Seed = 1
		res, err := sim.Run(sys, cfg.WithDefaults(sys), io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		events += int64(res.Steps)
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N*pingPongHops), "ns/hop")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkPingPongTasks(b *testing.B)    { benchPingPong(b, true) }
func BenchmarkPingPongHandlers(b *testing.B) { benchPingPong(b, false) }

// TestPingPongExchangesAreTheSame: both variants make the same number of
// hops, one event per hop (plus the tasks' start and end).
func TestPingPongExchangesAreTheSame(t *testing.T) {
	for _, tasks := range []bool{false, true} {
		sys := pingPongSystem(tasks)
		cfg := sim.DefaultConfig()
		cfg = cfg.WithDefaults(sys)
		var last *pingPong
		cfg.Observe = func(_ *node.Event, in *node.Instance) error { last = in.Handler().(*pingPong); return nil }
		res, err := sim.Run(sys, cfg, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if last.Hops != pingPongHops || res.Steps < pingPongHops || res.Steps > pingPongHops+4 {
			t.Fatalf("tasks=%v: %d hops in %d events", tasks, last.Hops, res.Steps)
		}
	}
}
