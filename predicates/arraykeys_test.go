package predicates_test

import (
	"testing"

	"github.com/replaycheck/replaycheck/node"
)

// edges keeps maps keyed by Go arrays: a pair of nodes, and a pair of
// pairs.
type edges struct {
	Links map[[2]string]int
	Grid  map[[2][2]int]bool
	Named map[any]string
}

func (e *edges) Init(node.Env) {
	e.Links = map[[2]string]int{{"n1", "n2"}: 3, {"n2", "n3"}: 4}
	e.Grid = map[[2][2]int]bool{{{0, 1}, {2, 3}}: true}
	e.Named = map[any]string{[2]int{1, 2}: "pair", "k": "string"}
}
func (*edges) Receive(node.Env, node.ID, node.Message) {}
func (*edges) Timer(node.Env, node.Timer)              {}

// TestMapsKeyedByArraysKeepTheirEntries: a Go array converts to a list,
// which a dict cannot take as a key, and the entry was dropped without a
// word: a map keyed by pairs read as an empty dict.
func TestMapsKeyedByArraysKeepTheirEntries(t *testing.T) {
	holdsOnOneNode(t, "edges", func() node.Handler { return &edges{} }, `E = table("predicates_test.edges")
safety("Links", lambda: forall(E, lambda e: len(e.Links) == 2 and e.Links[("n1", "n2")] == 3))
safety("Grid", lambda: forall(E, lambda e: e.Grid[((0, 1), (2, 3))]))
safety("Named", lambda: forall(E, lambda e: len(e.Named) == 2 and e.Named[(1, 2)] == "pair"))
`)
}
