package replay_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// ticker appends its tick count to a log on every timer; changed, it
// appends something else at tick changeAt: a code change that alters
// state but no effect, which only state hashes can see.
type ticker struct {
	Ticks    int
	Log      []int
	changeAt int `replay:"-"`
}

func (t *ticker) Init(env node.Env) { env.After(time.Millisecond, "tick") }
func (t *ticker) Receive(node.Env, node.ID, node.Message) {
}
func (t *ticker) Timer(env node.Env, _ node.Timer) {
	t.Ticks++
	v := t.Ticks
	if t.Ticks == t.changeAt {
		v = -1
	}
	t.Log = append(t.Log, v)
	env.After(time.Millisecond, "tick")
}

func tickerSystem(changeAt int) *system.System {
	return &system.System{Name: "ticker", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &ticker{changeAt: changeAt} },
		Sim: system.SimDefaults{Nodes: 1, Steps: 21}}
}

// A state change between two spaced hashes is found at the next hash,
// and the report names the window of events that holds it.
func TestSpacedHashesNameTheWindow(t *testing.T) {
	tr := simulate(t, tickerSystem(0), sim.Config{Seed: 1, HashEvery: 5})
	hashed := 0
	for i := range tr.Len() {
		if tr.Event(i).HasStateHash {
			hashed++
		}
	}
	if hashed == 0 || hashed > 6 {
		t.Fatalf("%d of %d events carry a hash with --hash-every 5", hashed, tr.Len())
	}
	// Tick 7 is event #7 (init is #0); hashes follow #0, #5, #10, ...
	r, err := replay.New(tr, system.NewRegistry(tickerSystem(7)), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = r.RunTo(tr.Len()-1, nil)
	var d *replay.Divergence
	if !errors.As(err, &d) {
		t.Fatalf("the changed state was not found: %v", err)
	}
	if d.Step != 10 || !strings.Contains(d.What, "#6..#10") {
		t.Fatalf("found at #%d: %s; want #10 naming the window #6..#10", d.Step, d.What)
	}
}

// A change after a node's last hashed event is found through the end
// record's final state hash.
func TestFinalStateHashCoversTheLastEvents(t *testing.T) {
	tr := simulate(t, tickerSystem(0), sim.Config{Seed: 1, HashEvery: 100})
	last := tr.Len() - 1
	if tr.Event(last).HasStateHash {
		t.Fatalf("the last event carries a hash; the test needs one that does not")
	}
	r, err := replay.New(tr, system.NewRegistry(tickerSystem(last)), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = r.RunTo(last, nil)
	var d *replay.Divergence
	if !errors.As(err, &d) || d.Step != last || !strings.Contains(d.What, "final state") {
		t.Fatalf("a change at the last event #%d: %v", last, err)
	}
	// The unchanged code replays clean, final states included.
	r2, _ := replay.New(tr, system.NewRegistry(tickerSystem(0)), replay.Options{})
	if err := r2.RunTo(last, nil); err != nil {
		t.Fatalf("unchanged: %v", err)
	}
}

// Spacing by bytes keeps hashing cost per event bounded as state grows:
// the bytes hashed over a run grow with the events, not with events times
// state size.
func TestHashBytesSpacingIsAmortised(t *testing.T) {
	const budget = 64
	sys := tickerSystem(0)
	sys.Sim.Steps = 2001
	tr := simulate(t, sys, sim.Config{Seed: 1, HashBytes: budget})
	hashed := 0
	for i := range tr.Len() {
		if tr.Event(i).HasStateHash {
			hashed++
		}
	}
	// The log grows by ~9 bytes an event; hashing every event would be
	// quadratic. Spaced, the hashes thin out as the state grows.
	if hashed > 200 {
		t.Fatalf("%d of %d events hashed at %d bytes per event: not spaced", hashed, tr.Len(), budget)
	}
	if tr.Files[0].Header.HashBytes != budget {
		t.Fatalf("header says hash_bytes %d", tr.Files[0].Header.HashBytes)
	}
	r, _ := replay.New(tr, system.NewRegistry(sys), replay.Options{})
	if err := r.RunTo(tr.Len()-1, nil); err != nil {
		t.Fatal(err)
	}
}
