package sim_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// TestLimitsRejectRunsThatCannotFinish: settings that would exhaust memory
// or spin without ever advancing the run are refused before anything is
// allocated, with the limit in the message.
func TestLimitsRejectRunsThatCannotFinish(t *testing.T) {
	sys := pingSystem(nil)
	for _, tc := range []struct {
		name string
		edit func(*sim.Config)
		want string
	}{
		{"100000 nodes", func(c *sim.Config) { c.Nodes = 100_000 }, "at most 1000"},
		{"churn 1e9", func(c *sim.Config) { c.Churn = 1e9 }, "at most 1000"},
		{"churn +Inf", func(c *sim.Config) { c.Churn = math.Inf(1) }, "--churn"},
		{"drop NaN", func(c *sim.Config) { c.Drop = math.NaN() }, "--drop"},
		{"dup NaN", func(c *sim.Config) { c.Dup = math.NaN() }, "--dup"},
		{"max down above nodes", func(c *sim.Config) { c.MaxDown = 9 }, "--max-down 9"},
	} {
		cfg := sim.DefaultConfig()
		tc.edit(&cfg)
		cfg = cfg.WithDefaults(sys)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
	at := sim.DefaultConfig()
	at.Nodes, at.Churn, at.MaxDown = sim.MaxNodes, sim.MaxChurn, 1
	if err := at.WithDefaults(sys).Validate(); err != nil {
		t.Errorf("settings at the limits: %v", err)
	}
}

// TestTinyChurnDoesNotOverflowTime: a churn rate so low that the next crash
// lies beyond the last representable instant must not wrap around to a
// negative virtual time (it used to, and the run then never ended).
func TestTinyChurnDoesNotOverflowTime(t *testing.T) {
	for _, churn := range []float64{1e-12, 1e-300} {
		done := make(chan *sim.Result, 1)
		go func() {
			var buf bytes.Buffer
			res, err := sim.Run(pingSystem(nil), sim.Config{Seed: 1, Churn: churn, Time: time.Second}.WithDefaults(pingSystem(nil)), &buf)
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		select {
		case res := <-done:
			if res != nil && (res.Time < 0 || res.Time > time.Second || res.Stats.Crashes != 0) {
				t.Errorf("churn %g: ran to %v with %d crashes", churn, res.Time, res.Stats.Crashes)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("churn %g: the run did not end", churn)
		}
	}
}

// TestSystemValidateRejectsBeforeRunning: a system's Validate hook sees the
// run's nodes, bug and parameters; its error is returned before a single
// byte of trace is written.
func TestSystemValidateRejectsBeforeRunning(t *testing.T) {
	sys := pingSystem(nil)
	var seen system.Config
	sys.Validate = func(c system.Config) error {
		seen = c
		if c.Param("size", "") == "huge" {
			return errors.New("ping: size=huge is too big")
		}
		return nil
	}
	var buf bytes.Buffer
	cfg := sim.Config{Seed: 1, Nodes: 3, Params: map[string]string{"size": "huge"}}.WithDefaults(sys)
	res, err := sim.Run(sys, cfg, &buf)
	if err == nil || !strings.Contains(err.Error(), "size=huge") || res != nil || buf.Len() != 0 {
		t.Fatalf("Run = %v, %v with %d bytes written", res, err, buf.Len())
	}
	if len(seen.Nodes) != 3 || seen.Bug != "none" {
		t.Fatalf("the hook saw %+v", seen)
	}
	if err := sim.CheckConfig(sys, cfg); err == nil {
		t.Fatal("CheckConfig did not call the hook")
	}
	cfg.Params = nil
	if err := sim.CheckConfig(sys, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(sys, cfg, &buf); err != nil {
		t.Fatal(err)
	}
}

// farTimer asks, once started, for a timer further away than virtual time
// can count.
type farTimer struct{ Fired int }

func (f *farTimer) Init(env node.Env) {
	env.After(time.Millisecond, "near")
}
func (f *farTimer) Receive(node.Env, node.ID, node.Message) {}
func (f *farTimer) Timer(env node.Env, tm node.Timer) {
	f.Fired++
	if tm.Name == "near" {
		env.After(time.Duration(math.MaxInt64), "far")
	}
}

// TestHugeTimerDoesNotWrap: such a timer never fires; it used to wrap
// around to a negative time and fire at once.
func TestHugeTimerDoesNotWrap(t *testing.T) {
	sys := &system.System{Name: "far", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &farTimer{} }, Sim: system.SimDefaults{Nodes: 1}}
	_, res := run(t, sys, sim.Config{Seed: 1, Time: time.Second})
	if res.Steps != 2 || res.Time < 0 {
		t.Fatalf("%d steps, virtual time %v: want init and the near timer only", res.Steps, res.Time)
	}
}
