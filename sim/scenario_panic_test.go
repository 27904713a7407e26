package sim_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

type idle struct{}

func (idle) Init(env node.Env)                       { env.After(time.Millisecond, "t") }
func (idle) Receive(node.Env, node.ID, node.Message) {}
func (idle) Timer(env node.Env, _ node.Timer)        { env.After(time.Millisecond, "t") }

// A panic in scenario code (its setup or an action it scheduled) ends the
// run with an error naming it, as a handler's does, instead of crashing
// the process with a goroutine dump.
func TestScenarioPanicIsTheRunsError(t *testing.T) {
	for name, scen := range map[string]func(system.Controller){
		"setup":  func(system.Controller) { panic("boom in setup") },
		"action": func(ctl system.Controller) { ctl.At(5*time.Millisecond, func() { panic("boom in action") }) },
		// A StopWhen condition is the scenario's code too (one reading a
		// handler before its node started panicked with a stack).
		"condition": func(ctl system.Controller) { ctl.StopWhen(func() bool { panic("boom in condition") }) },
	} {
		sys := &system.System{Name: "idle", Codec: node.NewCodec(),
			New:      func(node.ID, system.Config) node.Handler { return idle{} },
			Scenario: scen, Sim: system.SimDefaults{Nodes: 2, Time: time.Second}}
		var buf bytes.Buffer
		cfg := sim.DefaultConfig()
		_, err := sim.Run(sys, cfg.WithDefaults(sys), &buf)
		if err == nil || !strings.Contains(err.Error(), "the scenario at") || !strings.Contains(err.Error(), "boom in "+name) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// A system's SimDefaults that no run can use is refused naming the
// field, not a flag the user never gave (SimDefaults.Drop -1 said
// "--drop -1"), and a negative one is not quietly replaced.
func TestBadSimDefaultsAreNamed(t *testing.T) {
	for _, c := range []struct {
		d    system.SimDefaults
		want string
	}{
		{system.SimDefaults{Drop: -1}, "SimDefaults.Drop -1"},
		{system.SimDefaults{Nodes: -2}, "SimDefaults.Nodes -2"},
		{system.SimDefaults{LatencyMin: 10 * time.Millisecond, LatencyMax: time.Millisecond}, "SimDefaults.LatencyMin/Max 10ms-1ms"},
		{system.SimDefaults{Time: -time.Second}, "SimDefaults.Time -1s"},
	} {
		sys := &system.System{Name: "idle", Codec: node.NewCodec(),
			New: func(node.ID, system.Config) node.Handler { return idle{} }, Sim: c.d}
		cfg := sim.DefaultConfig()
		_, err := sim.Run(sys, cfg.WithDefaults(sys), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "--") {
			t.Errorf("%+v: %v, want %q", c.d, err, c.want)
		}
	}
}

// A New that returns no handler is named as such, not as a nil pointer
// dereference in Init.
func TestANewReturningNilIsNamed(t *testing.T) {
	sys := &system.System{Name: "nilnew", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return nil }}
	cfg := sim.DefaultConfig()
	_, err := sim.Run(sys, cfg.WithDefaults(sys), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "New returned no handler for node n1") {
		t.Fatalf("%v", err)
	}
}
