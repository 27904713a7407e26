package predicates_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
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
	var buf bytes.Buffer
	cfg := sim.DefaultConfig()
	if _, err := sim.Run(sys, cfg.WithDefaults(sys), &buf); err != nil {
		t.Fatal(err)
	}
	tr, err := replay.FromBytes(buf.Bytes(), sys.Name+".lz4")
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(tr, system.NewRegistry(sys), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
