package world_test

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/world"
)

type counter struct{ N int }

func (c *counter) Init(node.Env)                           {}
func (c *counter) Receive(node.Env, node.ID, node.Message) { c.N++ }
func (c *counter) Timer(node.Env, node.Timer)              {}

type noSource struct{}

func (noSource) Clock() int64                  { return 0 }
func (noSource) Seed() uint64                  { return 0 }
func (noSource) DiskGet(string) ([]byte, bool) { return nil, false }
func (noSource) CryptoRead([]byte)             {}

func twoNodes(t *testing.T) (*world.World, *node.Instance) {
	t.Helper()
	ids := []node.ID{"a", "b"}
	w := &world.World{System: "test", Bug: "none", Nodes: ids, Node: map[node.ID]*world.Node{}, Step: 1}
	var first *node.Instance
	for _, id := range ids {
		in := node.NewInstance(node.Config{ID: id, Nodes: ids, Store: node.NewMemStore(), New: func() node.Handler { return &counter{} }})
		if err := in.Dispatch(&node.Event{Kind: node.KindInit}, noSource{}); err != nil {
			t.Fatal(err)
		}
		w.Node[id] = &world.Node{ID: id, Started: true, Up: true, Seq: 1, Lamport: 1, Incarnation: 1, State: in.Snapshot(world.Share)}
		if first == nil {
			first = in
		}
	}
	return w, first
}

func TestCheck(t *testing.T) {
	w, _ := twoNodes(t)
	if err := w.Check(); err != nil {
		t.Fatal(err)
	}
	w.InFlight = []world.Message{
		{ID: node.MsgID{From: "a", Seq: 1, Index: 0}, To: "b", SendStep: 0},
		{ID: node.MsgID{From: "a", Seq: 1, Index: 1}, To: "b", SendStep: 0},
	}
	if err := w.Check(); err != nil {
		t.Fatal(err)
	}
	w.InFlight[0], w.InFlight[1] = w.InFlight[1], w.InFlight[0]
	if err := w.Check(); err == nil || !strings.Contains(err.Error(), "out of send order") {
		t.Fatalf("unsorted: %v", err)
	}
	w.SortInFlight()
	w.InFlight[1].To = "c"
	if err := w.Check(); err == nil || !strings.Contains(err.Error(), "not a node") {
		t.Fatalf("unknown receiver: %v", err)
	}
	w.InFlight = nil
	w.Node["b"].Started = false
	if err := w.Check(); err == nil || !strings.Contains(err.Error(), "never started") {
		t.Fatalf("up but not started: %v", err)
	}
	if got := w.NotStarted(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("not started: %v", got)
	}
	w.Node["b"].Started, w.Node["b"].Up = true, false
	if got := w.Down(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("down: %v", got)
	}
	delete(w.Node, "a")
	if err := w.Check(); err == nil || !strings.Contains(err.Error(), "no state") {
		t.Fatalf("missing node: %v", err)
	}
}

// A world shares its nodes' handlers (Share); a Copy does not.
func TestCopyIsIndependent(t *testing.T) {
	w, a := twoNodes(t)
	cp := w.Copy(state.Copier)
	a.Handler().(*counter).N = 7
	restore := func(w *world.World) int {
		in := node.NewInstance(node.Config{ID: "a", Nodes: w.Nodes, Store: node.NewMemStore(), New: func() node.Handler { return &counter{} }})
		in.Restore(w.Node["a"].State, world.Share)
		return in.Handler().(*counter).N
	}
	if got := restore(w); got != 7 {
		t.Fatalf("the world does not share the instance's handler: N=%d", got)
	}
	if got := restore(cp); got != 0 {
		t.Fatalf("the copy shares the instance's handler: N=%d", got)
	}
}
