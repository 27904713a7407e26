package predicates_test

import (
	"testing"

	"github.com/replaycheck/replaycheck/node"
)

// ring holds a struct that leads back to itself through a pointer.
type ringNode struct {
	V    int
	Next *ringNode
}

type ringHolder struct{ Head *ringNode }

func (r *ringHolder) Init(node.Env) {
	r.Head = &ringNode{V: 1}
	r.Head.Next = &ringNode{V: 2, Next: r.Head}
}
func (*ringHolder) Receive(node.Env, node.ID, node.Message) {}
func (*ringHolder) Timer(node.Env, node.Timer)              {}

// TestKeptStructThatLeadsBackToItself: a Go struct kept in a derived
// value is frozen field by field; one whose pointer leads back to it
// was frozen without end, and the stack overflow killed the process. It
// is kept, equal to the live value, with its fields readable.
func TestKeptStructThatLeadsBackToItself(t *testing.T) {
	holdsOnOneNode(t, "ring", func() node.Handler { return &ringHolder{} }, `R = table("predicates_test.ringHolder")
def _head():
    for r in R:
        return r.Head
    return None
head = derived("head", _head)
def same():
    h = head()
    for r in R:
        return h == r.Head and h.V == 1 and h.Next.V == 2
    return True
safety("KeptHeadIsLive", same)
`)
}
