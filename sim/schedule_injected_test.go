package sim_test

import (
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// faultAtActionChooser runs everything in time order, except that it crashes n2
// once at the instant of the scenario's first action due at or after
// 500ms, as an explore chooser's fault may land.
type faultAtActionChooser struct {
	*sim.Seeded
	done bool
}

func (c *faultAtActionChooser) Describe() string { return "faultataction" }
func (c *faultAtActionChooser) Next(ch *sim.Choice) (sim.Decision, error) {
	if !c.done {
		if due, ok := ch.Due(); ok && ch.Step() >= 2 && due >= 500*time.Millisecond && due >= ch.Now() {
			c.done = true
			return sim.Decision{Crash: "n2", At: due, Down: 50 * time.Millisecond}, nil
		}
	}
	return c.Seeded.Next(ch)
}

// faultAtActionSys's scenario looks at n2 at 500ms exactly and sends it input only
// if it is up, drawing from the scenario's generator.
var faultAtActionSys = &system.System{
	Name:  "faultataction",
	Codec: node.NewCodec().MustRegister(lookPut{}),
	New:   func(node.ID, system.Config) node.Handler { return &lookCounter{} },
	Sim:   system.SimDefaults{Nodes: 2, Time: 2 * time.Second},
	Scenario: func(ctl system.Controller) {
		var tick func()
		tick = func() {
			if ctl.Handler("n2") != nil {
				ctl.Input("n2", lookPut{})
				ctl.Rand().IntN(10)
			}
			ctl.Input("n1", lookPut{})
			ctl.At(ctl.Now()+time.Duration(1+ctl.Rand().IntN(50))*time.Millisecond, tick)
		}
		ctl.At(500*time.Millisecond, tick)
	},
}

// TestScheduleReplaysAChooserFaultAtAnActionsInstant: a chooser-injected crash
// at the same instant as a scenario action ran before the action; the
// schedule re-run must re-run that run.
func TestScheduleReplaysAChooserFaultAtAnActionsInstant(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed = 1
	cfg.Chooser = &faultAtActionChooser{Seeded: sim.NewSeeded(1)}
	orig := simulate(t, faultAtActionSys, cfg)
	crashes := 0
	for _, e := range orig.Events {
		if e.Kind == node.KindCrash {
			crashes++
		}
	}
	if crashes != 1 {
		t.Fatalf("%d crashes", crashes)
	}
	sc, err := sim.ScheduleOf(orig)
	if err != nil {
		t.Fatal(err)
	}
	again := simulate(t, faultAtActionSys, sc.Config())
	sameEvents(t, "faultataction", orig.Events, again.Events)
}
