package replay_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/paxos"
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
	ren, ev := firstReceipt(t, "granter", grant{}, granter{})
	want := "replay_test.grant{Entry:&{Holder:c1 Expiry:2026-01-01T00:00:02.065326Z} Prev:<nil> At:2026-01-01T00:00:01.065326Z Tags:map[a:1 b:2]}"
	if got := ren.Summary(ev); !strings.HasPrefix(got, want) {
		t.Fatalf("received message renders as\n%s\nwant it to begin\n%s", got, want)
	}
}

// firstReceipt simulates two nodes of handler h, which send msg, and
// returns a renderer of the run and its first receive.
func firstReceipt(t *testing.T, name string, msg any, h node.Handler) (*replay.Renderer, *node.Event) {
	t.Helper()
	sys := &system.System{Name: name, Codec: node.NewCodec().MustRegister(msg),
		New: func(node.ID, system.Config) node.Handler { return h },
		Sim: system.SimDefaults{Nodes: 2, Time: 50 * time.Millisecond}}
	tr := simulate(t, sys, sim.Config{Seed: 1})
	for i := range tr.Len() {
		if ev := tr.Event(i); ev.Kind == node.KindRecv {
			return replay.NewRenderer(tr, sys.Codec), ev
		}
	}
	t.Fatal("no receive in the trace")
	return nil, nil
}

// A broadcast some receivers never got listed only those that got it
// ("to n2,n3 (never received: n1 (dropped))"), and one nobody got read
// "to nobody": a new user read both as sends to fewer nodes. Every
// receiver is now named after "to".
func TestEffectsNameEveryReceiverOfASend(t *testing.T) {
	sys := paxos.System
	tr := simulate(t, sys, sim.Config{Seed: 1, Drop: 0.3})
	ren := replay.NewRenderer(tr, sys.Codec)
	lost := 0
	for i := range tr.Len() {
		ev := tr.Event(i)
		eff := ren.Effects(ev)
		if strings.Contains(eff, " to nobody") {
			t.Fatalf("#%d reads as a send to nobody: %s", i, eff)
		}
		for j, s := range ev.Sends {
			f := tr.Fate(ev, j)
			if f.Fate != replay.Delivered {
				lost++
				if !strings.Contains(eff, string(s.To)+" ("+f.Fate.String()+")") {
					t.Fatalf("#%d: the send to %s (%s) is not in %q", i, s.To, f.Fate, eff)
				}
			}
			to := regexp.MustCompile(` to ([^ ;(]+)`).FindAllStringSubmatch(eff, -1)
			found := false
			for _, m := range to {
				if slices.Contains(strings.Split(m[1], ","), string(s.To)) {
					found = true
				}
			}
			if !found {
				t.Fatalf("#%d: the send to %s is missing from the receivers of %q", i, s.To, eff)
			}
		}
	}
	if lost == 0 {
		t.Fatal("the run lost no message: the test checks nothing")
	}
}

type vcEntry struct {
	Op    int
	Value string
}

type doViewChange struct {
	View    int
	Log     []vcEntry
	Peers   map[string]int
	OpNum   int
	Commit  int
	Short   []int
	LastNV  int
	Comment string
}

type viewChanger struct{}

func (viewChanger) Init(env node.Env) {
	if env.Self() == "n1" {
		m := doViewChange{View: 4, Peers: map[string]int{"n1": 1, "n2": 2, "n3": 3}, OpNum: 39, Commit: 36, Short: []int{1, 2}, LastNV: 3, Comment: "ok"}
		for i := range 39 {
			m.Log = append(m.Log, vcEntry{Op: i + 1, Value: fmt.Sprintf("c1-%d", i)})
		}
		env.Send("n2", m)
	}
}
func (viewChanger) Receive(node.Env, node.ID, node.Message) {}
func (viewChanger) Timer(node.Env, node.Timer)              {}

// An event line cut a view change inside its log, so OpNum and the
// fields after it never showed (a new user's VR system). A line too long
// now shows long containers by their length, and every field.
func TestEventLinesShowTheFieldsAfterALongContainer(t *testing.T) {
	ren, ev := firstReceipt(t, "vc", doViewChange{}, viewChanger{})
	want := "replay_test.doViewChange{View:4 Log:[...39 items] Peers:map[n1:1 n2:2 n3:3] OpNum:39 Commit:36 Short:[1 2] LastNV:3 Comment:ok}"
	if got := ren.Message(ev.MsgType, ev.Payload); got != want {
		t.Fatalf("the view change renders as\n%s\nwant\n%s", got, want)
	}
}
