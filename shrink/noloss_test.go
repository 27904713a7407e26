package shrink

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/system"
)

// prober's n1 pings n2 every 10 ms and counts the pings whose ack had not
// come by the next one; its bug: n2 leaves the 5th ping unanswered. On a
// network that loses nothing, Missed stays 0 but for the bug: a failure
// detector's accuracy.
type prober struct {
	Sent, Acked, Missed int
	bug                 bool
}

type probePing struct{ N int }
type probeAck struct{ N int }

func (p *prober) Init(env node.Env) {
	if env.Self() == "n1" {
		env.After(10*time.Millisecond, "probe")
	}
}
func (p *prober) Receive(env node.Env, from node.ID, m node.Message) {
	switch m := m.(type) {
	case probePing:
		if !(p.bug && m.N == 5) {
			env.Send(from, probeAck(m))
		}
	case probeAck:
		p.Acked = max(p.Acked, m.N)
	}
}
func (p *prober) Timer(env node.Env, _ node.Timer) {
	if p.Sent > p.Acked {
		p.Missed++
	}
	p.Sent++
	env.Send("n2", probePing{p.Sent})
	env.After(10*time.Millisecond, "probe")
}

// A shrink that may drop messages breaks such a property without the
// bug (a new user's SWIM shrank to two nodes losing every message, which
// the correct build fails too). With NoLoss the shrunk run loses nothing
// and fails by the bug.
func TestShrinkWithNoLossDropsNothing(t *testing.T) {
	sys := &system.System{Name: "prober", Bugs: []system.Bug{{Name: "no-ack", Summary: "n2 leaves the 5th ping unanswered"}},
		Codec: node.NewCodec().MustRegister(probePing{}).MustRegister(probeAck{}),
		New:   func(_ node.ID, c system.Config) node.Handler { return &prober{bug: c.Bug == "no-ack"} },
		Sim:   system.SimDefaults{Nodes: 2, LatencyMin: time.Millisecond, LatencyMax: 2 * time.Millisecond, Time: 200 * time.Millisecond}}
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug, cfg.Drop, cfg.Churn = 1, "no-ack", 0, 0
	var buf bytes.Buffer
	if _, err := sim.Run(sys, cfg.WithDefaults(sys), &buf); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "p.star")
	if err := os.WriteFile(script, []byte(`P = table("shrink.prober")
safety("NoneMissed", lambda: forall(P, lambda p: p.Missed == 0))
`), 0o644); err != nil {
		t.Fatal(err)
	}
	shrinkIt := func(noLoss bool) *Result {
		res, err := Shrink(context.Background(), sys, buf.Bytes(), Options{Script: script, NoLoss: noLoss, Time: 20 * time.Second,
			Check: simtest.Options{Registry: system.NewRegistry(sys)}, From: "orig.lz4"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Violation == nil || res.Violation.Predicate != "NoneMissed" {
			t.Fatalf("the shrunk run does not fail NoneMissed: %+v", res.Violation)
		}
		return res
	}
	// Lost: sent, due before the end, never received (a message still
	// on its way when the run was cut is no loss).
	if lossy := shrinkIt(false); lossy.After.Lost == 0 {
		t.Fatalf("a shrink that may drop messages lost none (%+v): the test shows nothing", lossy.After)
	}
	res := shrinkIt(true)
	if res.Before.Lost != 0 || res.After.Lost != 0 {
		t.Errorf("with NoLoss: before %+v, after %+v", res.Before, res.After)
	}
	// Nor does its network count as dropped the messages the shrunk run
	// ends before (its violation comes first): they are in flight, as its
	// story says. A new user read "dropped": 2 as --no-loss failing.
	if res.After.Dropped != 0 {
		t.Errorf("with NoLoss the shrunk run's network dropped %d message(s): %+v", res.After.Dropped, res.After)
	}
	if res.After.Events >= res.Before.Events {
		t.Errorf("nothing was shrunk: %d events, %d before", res.After.Events, res.Before.Events)
	}
}
