package predicates_test

import (
	"testing"

	"github.com/replaycheck/replaycheck/node"
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
	holdsOnOneNode(t, "document", func() node.Handler { return &document{} }, `D = table("predicates_test.document")
safety("Root", lambda: forall(D, lambda d: d.Root["name"] == "root" and d.Root["self"] == None and d.Root["child"]["name"] == "child" and d.Root["child"]["parent"] == None))
safety("Items", lambda: forall(D, lambda d: d.Items[0] == 1 and d.Items[1] == None))
`)
}
