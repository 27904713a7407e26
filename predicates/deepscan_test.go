package predicates_test

import (
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/system"
)

// cell is a linked list element; its V is what the predicate checks.
type cell struct {
	V    int
	Next *cell
}

// chain keeps a linked list of Len cells whose last one holds -1.
type chain struct {
	Len  int
	Head *cell
}

func (c *chain) Init(env node.Env) {
	var head *cell
	for i := range c.Len {
		v := i
		if i == 0 {
			v = -1 // the tail, after the loop prepends the rest
		}
		head = &cell{V: v, Next: head}
	}
	c.Head = head
}
func (c *chain) Receive(node.Env, node.ID, node.Message) {}
func (c *chain) Timer(node.Env, node.Timer)              {}

func checkChain(t *testing.T, n int) *predicates.Report {
	t.Helper()
	sys := &system.System{Name: "chain", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &chain{Len: n} },
		Sim: system.SimDefaults{Nodes: 1, Steps: 10, Time: time.Second}}
	c, err := predicates.LoadSource("c.star", []byte(`Cell = table("predicates_test.cell")
safety("NoNegativeCell", lambda: forall(Cell, lambda c: c.V >= 0))
`), simReplayer(t, sys), predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Run(predicates.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// Rows deep in a node's state are rows: a linked list of 1,000 cells is
// read whole (the scan stopped at 128 and the violation in the last cell
// went unseen, exit 0), and one too deep to read fails the check, naming
// where, instead of checking what it could reach.
func TestRowsDeepInAStateAreSeenOrTheCheckFails(t *testing.T) {
	rep := checkChain(t, 1000)
	if len(rep.Errors) > 0 || len(rep.Violations) == 0 {
		t.Fatalf("1,000 cells: errors %v, %d violations; want the tail's violation", rep.Errors, len(rep.Violations))
	}
	rep = checkChain(t, 5000)
	if len(rep.Errors) == 0 {
		t.Fatalf("5,000 cells: no error, %d violations: the check read part of the state and said nothing", len(rep.Violations))
	}
	if msg := rep.Errors[0].String(); !strings.Contains(msg, "node n1's state") || !strings.Contains(msg, "Head.Next.Next") || rep.Err() == nil {
		t.Fatalf("the error does not name the node and the path: %s", msg)
	}
}
