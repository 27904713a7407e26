package predicates_test

import (
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/system"
)

// holdsOnOneNode simulates a one-node system of handler h (a few steps)
// and checks script on it: every predicate must hold and evaluate
// without error. The shapes tests use it: each names a handler whose
// state a walk once misread.
func holdsOnOneNode(t *testing.T, name string, h func() node.Handler, script string) {
	t.Helper()
	sys := &system.System{Name: name, Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return h() },
		Sim: system.SimDefaults{Nodes: 1, Steps: 3, Time: time.Second}}
	c, err := predicates.LoadSource("c.star", []byte(script), simReplayer(t, sys), predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Run(predicates.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		t.Errorf("%s fails", v.Predicate)
	}
	if len(rep.Errors) > 0 {
		t.Fatalf("errors %v", rep.Errors)
	}
}
