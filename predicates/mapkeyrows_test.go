package predicates_test

import (
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/system"
)

type keyedPeer struct{ Name string }

type keyedProgress struct{ Match int }

// byPeer keeps its rows in a map keyed by pointers, two of them to equal
// peers.
type byPeer struct {
	progress map[*keyedPeer]*keyedProgress
}

func (b *byPeer) Init(node.Env) {
	b.progress = map[*keyedPeer]*keyedProgress{{"n1"}: {1}, {"n1"}: {2}, {"n2"}: {3}}
}
func (*byPeer) Receive(node.Env, node.ID, node.Message) {}
func (*byPeer) Timer(node.Env, node.Timer)              {}

// TestRowsUnderMapKeysThatPrintAlikeAreRows: a row's path names it, and
// the paths of a map's entries whose keys printed alike (every pointer
// key read as its type's name) were one: the three rows under a map
// keyed by pointers were one row.
func TestRowsUnderMapKeysThatPrintAlikeAreRows(t *testing.T) {
	sys := &system.System{Name: "bypeer", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &byPeer{} },
		Sim: system.SimDefaults{Nodes: 1, Steps: 3, Time: time.Second}}
	c, err := predicates.LoadSource("c.star", []byte(`P = table("predicates_test.keyedProgress")
safety("ThreeRows", lambda: len(P) == 3 and sorted([p.Match for p in P]) == [1, 2, 3])
`), simReplayer(t, sys), predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Run(predicates.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) > 0 || len(rep.Violations) > 0 {
		t.Fatalf("errors %v, %d violations: the rows under pointer keys are not three", rep.Errors, len(rep.Violations))
	}
}
