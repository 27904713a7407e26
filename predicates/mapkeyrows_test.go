package predicates_test

import (
	"testing"

	"github.com/replaycheck/replaycheck/node"
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
	holdsOnOneNode(t, "bypeer", func() node.Handler { return &byPeer{} }, `P = table("predicates_test.keyedProgress")
safety("ThreeRows", lambda: len(P) == 3 and sorted([p.Match for p in P]) == [1, 2, 3])
`)
}
