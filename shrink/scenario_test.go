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

// A node counts the ticks its scenario gives it and goes wrong at the
// seventh if it is the first it counted. The scenario crashes it before
// the first tick and restarts it before the seventh: ticks one to six
// are lost (a node that is down loses its inputs), and the run fails.
// The crash is not what the failure needs, the tick is: a candidate
// does only what its base did, so leaving the crash out must not bring
// back six ticks the base never had.

type Tick struct{ N int }

type tickNode struct {
	Count int
	Wrong bool
}

func (n *tickNode) Init(node.Env) {}
func (n *tickNode) Input(_ node.Env, m node.Message) {
	n.Count++
	if t, ok := m.(Tick); ok && t.N == 7 && n.Count == 1 {
		n.Wrong = true
	}
}
func (n *tickNode) Receive(node.Env, node.ID, node.Message) {}
func (n *tickNode) Timer(node.Env, node.Timer)              {}

var tickSystem = &system.System{
	Name:  "ticks",
	Codec: node.NewCodec().MustRegister(Tick{}),
	New:   func(node.ID, system.Config) node.Handler { return &tickNode{} },
	Sim:   system.SimDefaults{Nodes: 1, Time: time.Second},
	Scenario: func(ctl system.Controller) {
		ctl.At(5*time.Millisecond, func() { ctl.Crash("n1") })
		ctl.At(65*time.Millisecond, func() { ctl.Restart("n1") })
		for i := 1; i <= 10; i++ {
			ctl.At(time.Duration(i)*10*time.Millisecond, func() { ctl.Input("n1", Tick{i}) })
		}
	},
}

func TestCandidatesDoOnlyWhatTheirBaseDid(t *testing.T) {
	script := filepath.Join(t.TempDir(), "ticks.star")
	os.WriteFile(script, []byte(`N = table("shrink.tickNode")
safety("Right", lambda: forall(N, lambda n: not n.Wrong))
`), 0o644)
	cfg := sim.DefaultConfig()
	cfg.Churn = 0
	var buf bytes.Buffer
	if _, err := sim.Run(tickSystem, cfg.WithDefaults(tickSystem), &buf); err != nil {
		t.Fatal(err)
	}
	opts := Options{Script: script, Check: simtest.Options{Registry: system.NewRegistry(tickSystem)}, From: "ticks.lz4"}
	res, err := Shrink(context.Background(), tickSystem, buf.Bytes(), opts)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := readTrace(t, res.Trace)
	var kinds []node.Kind
	for _, ev := range f.Events {
		kinds = append(kinds, ev.Kind)
	}
	// The init and the seventh tick: the crash and restart left out, and
	// the ticks after the failure cut.
	if len(f.Events) != 2 || kinds[1] != node.KindInput {
		t.Fatalf("shrunk to %d events %v: want the init and the seventh tick", len(f.Events), kinds)
	}
	if res.CutOnly {
		t.Fatal("the phases left out the crash, the restart and six ticks, and the result says only the cut did")
	}
}

// When cutting after the violation is all that made a run smaller, the
// result says so: a summary of "1584 events -> 516, 43 faults -> 22"
// read as progress the phases never made (a new user's liveness run).
// Here the third tick breaks "fewer than 3": every tick before it is
// needed, and the seven after it go with the cut.
func TestCutOnlyIsSaid(t *testing.T) {
	script := filepath.Join(t.TempDir(), "ticks.star")
	os.WriteFile(script, []byte(`N = table("shrink.tickNode")
safety("Few", lambda: forall(N, lambda n: n.Count < 3))
`), 0o644)
	noFaults := *tickSystem
	noFaults.Scenario = func(ctl system.Controller) {
		for i := 1; i <= 10; i++ {
			ctl.At(time.Duration(i)*10*time.Millisecond, func() { ctl.Input("n1", Tick{i}) })
		}
	}
	cfg := sim.DefaultConfig()
	cfg.Churn = 0
	var buf bytes.Buffer
	if _, err := sim.Run(&noFaults, cfg.WithDefaults(&noFaults), &buf); err != nil {
		t.Fatal(err)
	}
	opts := Options{Script: script, Check: simtest.Options{Registry: system.NewRegistry(&noFaults)}, From: "ticks.lz4"}
	res, err := Shrink(context.Background(), &noFaults, buf.Bytes(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.CutOnly || res.After.Events != 4 || res.Before.Events != 11 {
		t.Fatalf("%d events -> %d, cut only %v: want 11 -> 4 by the cut alone", res.Before.Events, res.After.Events, res.CutOnly)
	}
}
