package chord_test

import (
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/chord"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/system"
)

// A large chord run shares one node set and one ring table among all its
// nodes: each node keeping its own made memory and setup O(nodes²), and
// 10,000 nodes out of reach.
func TestLargeRingSharesItsTables(t *testing.T) {
	const nodes = 3000
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Nodes, cfg.Steps, cfg.Time = 1, nodes, 2*nodes+500, time.Hour
	cfg.Params = map[string]string{"bits": "16"}
	var members *node.Members
	rings := map[uintptr]bool{}
	cfg.Observe = func(ev *node.Event, in *node.Instance) error {
		if members == nil {
			members = in.Members()
		}
		if in.Members() != members {
			t.Fatalf("%s has a node set of its own", in.ID())
		}
		if h, ok := in.Handler().(*chord.Node); ok {
			rings[reflect.ValueOf(h.Ring).Pointer()] = true
		}
		return nil
	}
	if _, err := sim.Run(chord.System, cfg.WithDefaults(chord.System), io.Discard); err != nil {
		t.Fatal(err)
	}
	if members == nil || members.Len() != nodes {
		t.Fatalf("node set %v", members)
	}
	if len(rings) != 1 {
		t.Fatalf("%d ring tables for %d nodes, want one shared", len(rings), nodes)
	}
}

// A copy of a node (a checkpoint, a fork) shares the ring table: copied,
// a checkpoint of 5,000 nodes held 25 million entries and check --jobs 2
// took 2.7 GB.
func TestCopiesShareTheRingTable(t *testing.T) {
	cfg := system.NewConfig("none", chord.System.NodeIDs(50), nil)
	h := chord.System.New("n1", cfg).(*chord.Node)
	c := state.Clone(h)
	if c == h || c.Ring != h.Ring {
		t.Fatal("the copy has a ring table of its own")
	}
}
