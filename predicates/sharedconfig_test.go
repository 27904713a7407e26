package predicates_test

import (
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/system"
)

type sharer struct{ N int }

func (*sharer) Init(node.Env)                           {}
func (*sharer) Receive(node.Env, node.ID, node.Message) {}
func (*sharer) Timer(node.Env, node.Timer)              {}

// Loading a script builds a handler per node to learn the tables' types;
// what the factories derive once per run (system.Config.Shared) must be
// built once there too: chord's ring table built per node made loading a
// 5,000-node trace take 7 s before its first step.
func TestLoadSharesPerRunTables(t *testing.T) {
	builds := 0
	sys := &system.System{Name: "sharer", Codec: node.NewCodec(),
		New: func(_ node.ID, cfg system.Config) node.Handler {
			cfg.Shared("table", func() any { builds++; return 1 })
			return &sharer{}
		},
		Sim: system.SimDefaults{Nodes: 50, Steps: 60, Time: time.Second}}
	r := simReplayer(t, sys)
	builds = 0
	if _, err := predicates.LoadSource("s.star", []byte(`T = table("predicates_test.sharer")
safety("P", lambda: len(T) >= 0)`), r, predicates.Options{To: -1}); err != nil {
		t.Fatal(err)
	}
	if builds > 1 {
		t.Fatalf("loading the script built the per-run table %d times for 50 nodes", builds)
	}
}

// simReplayer simulates sys with its defaults and returns a replayer of
// the run, for a script to be loaded on.
func simReplayer(t *testing.T, sys *system.System) *replay.Replayer {
	t.Helper()
	return watchedReplay(t, sys, nil)
}

type deadliner struct{ Never, Old, Now time.Time }

func (d *deadliner) Init(env node.Env) {
	d.Never = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	d.Old = time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC)
	d.Now = env.Now()
}
func (*deadliner) Receive(node.Env, node.ID, node.Message) {}
func (*deadliner) Timer(node.Env, node.Timer)              {}

// A time far from the run (a lease that never ends, in the year 9999)
// reads as the exact time since the run's start: an int64 of
// nanoseconds wrapped it into the past, and a predicate that it lies in
// the future failed (a hostile pass).
func TestTimesFarFromTheRunKeepTheirSign(t *testing.T) {
	sys := &system.System{Name: "deadliner", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &deadliner{} },
		Sim: system.SimDefaults{Nodes: 1, Steps: 3, Time: time.Second}}
	r := simReplayer(t, sys)
	c, err := predicates.LoadSource("far.star", []byte(`D = table("predicates_test.deadliner")
safety("NeverIsLater", lambda: forall(D, lambda d: d.Never > now() and d.Never - d.Now == 251635075199000000000))
safety("OldIsEarlier", lambda: forall(D, lambda d: d.Old < 0 and d.Now - d.Old == 63902736000000000000))
`), r, predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Run(predicates.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Violations) > 0 || len(rep.Errors) > 0 {
		t.Fatalf("violations %v, errors %v", rep.Violations, rep.Errors)
	}
}
