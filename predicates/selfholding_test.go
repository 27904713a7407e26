package predicates_test

import (
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/system"
)

// document keeps generic documents whose entries lead back to them: a
// map holding itself, and a child map whose parent entry holds its
// parent, and a list holding itself.
type document struct {
	Root  map[string]any
	Items []any
}

func (d *document) Init(node.Env) {
	d.Root = map[string]any{"name": "root"}
	child := map[string]any{"name": "child", "parent": d.Root}
	d.Root["child"], d.Root["self"] = child, d.Root
	d.Items = []any{1, nil}
	d.Items[1] = d.Items
}
func (*document) Receive(node.Env, node.ID, node.Message) {}
func (*document) Timer(node.Env, node.Timer)              {}

// TestStateThatHoldsItselfConverts: a slice or map met again inside
// itself converted again, without end: reading such a field from a
// predicate overflowed the stack, and the process died (a fatal error,
// no report).
func TestStateThatHoldsItselfConverts(t *testing.T) {
	sys := &system.System{Name: "document", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &document{} },
		Sim: system.SimDefaults{Nodes: 1, Steps: 3, Time: time.Second}}
	c, err := predicates.LoadSource("c.star", []byte(`D = table("predicates_test.document")
safety("Root", lambda: forall(D, lambda d: d.Root["name"] == "root" and d.Root["self"] == None and d.Root["child"]["name"] == "child" and d.Root["child"]["parent"] == None))
safety("Items", lambda: forall(D, lambda d: d.Items[0] == 1 and d.Items[1] == None))
`), simReplayer(t, sys), predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Run(predicates.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) > 0 || len(rep.Violations) > 0 {
		for _, v := range rep.Violations {
			t.Errorf("%s fails", v.Predicate)
		}
		t.Fatalf("errors %v", rep.Errors)
	}
}
