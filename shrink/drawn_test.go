package shrink

import (
	"bytes"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// A scenario that draws an input's content from the nodes' state, as
// randtree's join names a contact among the joined nodes: n2's Report
// carries how many ticks n1 has seen. The last node is crashed and
// restarted by the scenario, for the fewer-nodes test below.

type report struct{ Seen int }

type seer struct{ Seen, Reported int }

func (s *seer) Init(node.Env) {}
func (s *seer) Input(_ node.Env, m node.Message) {
	switch m := m.(type) {
	case Tick:
		s.Seen++
	case report:
		s.Reported = m.Seen
	}
}
func (s *seer) Receive(node.Env, node.ID, node.Message) {}
func (s *seer) Timer(node.Env, node.Timer)              {}

var seerSystem = &system.System{
	Name:  "seer",
	Codec: node.NewCodec().MustRegister(Tick{}, report{}),
	New:   func(node.ID, system.Config) node.Handler { return &seer{} },
	Sim:   system.SimDefaults{Nodes: 3, Time: time.Second},
	Scenario: func(ctl system.Controller) {
		for i := 1; i <= 3; i++ {
			ctl.At(time.Duration(i)*10*time.Millisecond, func() { ctl.Input("n1", Tick{i}) })
		}
		ctl.At(50*time.Millisecond, func() {
			ctl.Input("n2", report{Seen: ctl.Handler("n1").(*seer).Seen})
		})
		last := ctl.Nodes()[len(ctl.Nodes())-1]
		ctl.At(60*time.Millisecond, func() { ctl.Crash(last) })
		ctl.At(80*time.Millisecond, func() { ctl.Restart(last) })
	},
}

func seerBase(t *testing.T) (*base, sim.Config) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Churn, cfg.Drop = 1, 0, 0
	cfg = cfg.WithDefaults(seerSystem)
	var buf bytes.Buffer
	if _, err := sim.Run(seerSystem, cfg, &buf); err != nil {
		t.Fatal(err)
	}
	f, tr := readTrace(t, buf.Bytes())
	b, err := newBase(f, tr)
	if err != nil {
		t.Fatal(err)
	}
	return b, cfg
}

// With a tick left out, n2's report carries another count: the filter
// lets it through (matched by node and time) and the chooser runs it as
// the kept entry it stands for. It ran as an event the base never had,
// so the kept entry never came and the run went on to its deadline.
func TestAnInputDrawnFromStateIsTheEntryItStandsFor(t *testing.T) {
	b, cfg := seerBase(t)
	keep := all(len(b.entries))
	tick, rep := -1, -1
	for i, e := range b.entries {
		switch {
		case e.Kind == node.KindInput && e.Node == "n1" && tick < 0:
			tick = i
		case e.Kind == node.KindInput && e.Node == "n2":
			rep = i
		}
	}
	if tick < 0 || rep < 0 {
		t.Fatal("the base has no tick or no report")
	}
	keep[tick] = false
	ch := newChooser(b, keep, policy{}, 2*cfg.LatencyMax)
	cfg.Chooser, cfg.Observe = ch, ch.observe
	var out bytes.Buffer
	s := &shrinker{sys: seerSystem, cfg: cfg}
	if _, err := sim.Run(s.filtered(b, keep, b.nodes), cfg, &out); err != nil {
		t.Fatal(err)
	}
	if !ch.done[rep] {
		t.Fatal("the report with its new content did not run as the kept entry it stands for")
	}
}

// A candidate with fewer nodes than its base must not crash or restart a
// node it does not have: the simulator refused, and the candidate failed.
func TestFewerNodesDoNotInjectARemovedNodesFaults(t *testing.T) {
	b, cfg := seerBase(t)
	keep := onFewerNodes(b, seerSystem.NodeIDs(2))
	ch := newChooser(b, keep, policy{}, 2*cfg.LatencyMax)
	cfg.Nodes = 2
	cfg = cfg.WithDefaults(seerSystem)
	cfg.Chooser, cfg.Observe = ch, ch.observe
	s := &shrinker{sys: seerSystem, cfg: cfg}
	if _, err := sim.Run(s.filtered(b, keep, 2), cfg, &bytes.Buffer{}); err != nil {
		t.Fatalf("a candidate on 2 nodes of a run that crashed n3: %v", err)
	}
}

// Two inputs to one node at one time are matched by content only: with
// one kept and one left out, the left-out one, drawn again with other
// content, passed for the kept one by node and time.
func TestTwoInputsAtOneTimeAreToldApartByContent(t *testing.T) {
	at := 10 * time.Millisecond
	in := func(digest uint64) entry {
		return entry{ScheduledEvent: sim.ScheduledEvent{Pending: sim.Pending{Kind: node.KindInput, Node: "n1"}},
			key: key{kind: node.KindInput, node: "n1", by: -1, at: at, digest: digest}}
	}
	b := &base{nodes: 1, entries: []entry{in(1), in(2)}, inputsAt: map[key]int{{kind: node.KindInput, node: "n1", by: -1, at: at}: 2}}
	f := newFilter(b, []bool{true, false}, 1)
	other := key{kind: node.KindInput, node: "n1", by: -1, at: at, digest: 3}
	if !f.does(b.entries[0].key) || f.does(b.entries[1].key) || f.does(other) {
		t.Fatalf("kept %v, left out %v, redrawn content %v: want true, false, false", f.does(b.entries[0].key), f.does(b.entries[1].key), f.does(other))
	}
	// The only input at its node and time is matched by them.
	b.entries, b.inputsAt = b.entries[:1], map[key]int{other.loose(): 1}
	if f := newFilter(b, []bool{true}, 1); !f.does(other) {
		t.Fatal("the only input at its node and time, drawn with other content, was left out")
	}
}
