package replay_test

import (
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// A message that holds a pointer printed the pointer's address (fmt's %+v
// below the top level), which differs on every run of `replay events`,
// and a time.Time in Go's default form while `state` shows RFC 3339 (a
// new user's lease server).

type leaseEntry struct {
	Holder string
	Expiry time.Time
}

type grant struct {
	Entry *leaseEntry
	Prev  *leaseEntry
	At    time.Time
	Tags  map[string]int
}

type granter struct{}

func (granter) Init(env node.Env) {
	if env.Self() == "n1" {
		at := time.Date(2026, 1, 1, 0, 0, 1, 65_326_000, time.UTC)
		env.Send("n2", grant{Entry: &leaseEntry{"c1", at.Add(time.Second)}, At: at, Tags: map[string]int{"b": 2, "a": 1}})
	}
}
func (granter) Receive(node.Env, node.ID, node.Message) {}
func (granter) Timer(node.Env, node.Timer)              {}

func TestRenderedMessagesShowPointedValuesAndRFC3339Times(t *testing.T) {
	sys := &system.System{Name: "granter", Codec: node.NewCodec().MustRegister(grant{}),
		New: func(node.ID, system.Config) node.Handler { return granter{} },
		Sim: system.SimDefaults{Nodes: 2, Time: 50 * time.Millisecond}}
	tr := simulate(t, sys, sim.Config{Seed: 1})
	ren := replay.NewRenderer(tr, sys.Codec)
	want := "replay_test.grant{Entry:&{Holder:c1 Expiry:2026-01-01T00:00:02.065326Z} Prev:<nil> At:2026-01-01T00:00:01.065326Z Tags:map[a:1 b:2]}"
	for i := range tr.Len() {
		ev := tr.Event(i)
		if ev.Kind != node.KindRecv {
			continue
		}
		if got := ren.Summary(ev); !strings.HasPrefix(got, want) {
			t.Fatalf("received message renders as\n%s\nwant it to begin\n%s", got, want)
		}
		return
	}
	t.Fatal("no receive in the trace")
}
