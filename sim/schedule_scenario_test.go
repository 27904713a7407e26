package sim_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

type lookPut struct{}

type lookCounter struct{ Count int }

func (n *lookCounter) Init(node.Env)                           {}
func (n *lookCounter) Receive(node.Env, node.ID, node.Message) {}
func (n *lookCounter) Timer(node.Env, node.Timer)              {}
func (n *lookCounter) Input(node.Env, node.Message)            { n.Count++ }

// lookFirst's scenario crashes n2 from an action at an instant when
// nothing else happens, after looking whether it is up (as the user
// guide suggests), and draws from the scenario's generator only then:
// a re-run that crashed n2 before the action made the action see it
// down, skip the draw, and every later input move (a new user's
// primary-backup store, whose explore findings did not re-run).
var lookFirst = &system.System{
	Name:  "lookfirst",
	Codec: node.NewCodec().MustRegister(lookPut{}),
	New:   func(node.ID, system.Config) node.Handler { return &lookCounter{} },
	Sim:   system.SimDefaults{Nodes: 2, Time: 3 * time.Second},
	Scenario: func(ctl system.Controller) {
		var crash func()
		crash = func() {
			if ctl.Handler("n2") != nil {
				ctl.Rand().IntN(10)
				ctl.Crash("n2")
				ctl.At(ctl.Now()+100*time.Millisecond, func() {
					if ctl.Handler("n2") == nil {
						ctl.Restart("n2")
					}
				})
			}
			ctl.At(ctl.Now()+time.Duration(200+ctl.Rand().IntN(400))*time.Millisecond+1234*time.Microsecond, crash)
		}
		ctl.At(1234567*time.Microsecond, crash)
		var put func()
		put = func() {
			ctl.Input("n1", lookPut{})
			ctl.Input("n2", lookPut{})
			ctl.At(ctl.Now()+time.Duration(1+ctl.Rand().IntN(100))*time.Millisecond, put)
		}
		ctl.At(0, put)
	},
}

// TestScheduleReplaysAScenarioThatLooksBeforeItCrashes: the schedule of
// a run whose scenario crashes and restarts a node from its own actions
// re-runs exactly that run.
func TestScheduleReplaysAScenarioThatLooksBeforeItCrashes(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := sim.DefaultConfig()
		cfg.Seed = seed
		orig := simulate(t, lookFirst, cfg)
		crashes := 0
		for _, e := range orig.Events {
			if e.Kind == node.KindCrash {
				crashes++
			}
		}
		if crashes < 2 {
			t.Fatalf("seed %d: %d crashes: the scenario did not run as meant", seed, crashes)
		}
		sc, err := sim.ScheduleOf(orig)
		if err != nil {
			t.Fatal(err)
		}
		again := simulate(t, lookFirst, sc.Config())
		sameEvents(t, "lookfirst", orig.Events, again.Events)
	}
}

// The same run's schedule without its by=scenario marks (as a trace
// recorded before them reads) fails to re-run, and says why that may be.
func TestUnmarkedScheduleSaysItMayPredateTheMark(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed = 1
	orig := simulate(t, lookFirst, cfg)
	sc, err := sim.ScheduleOf(orig)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sc.Events {
		sc.Events[i].Scripted = false
	}
	var buf bytes.Buffer
	_, err = sim.Run(lookFirst, sc.Config().WithDefaults(lookFirst), &buf)
	var m *sim.ScheduleMismatch
	if !errors.As(err, &m) || !strings.Contains(err.Error(), "record the run again") {
		t.Fatalf("re-run of the unmarked schedule: %v", err)
	}
}
