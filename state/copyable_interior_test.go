package state_test

import (
	"testing"

	"github.com/replaycheck/replaycheck/state"
)

type interiorHead struct{ Data any }

type interiorLog struct {
	head    interiorHead // first: a pointer to it has the log's address
	onApply func()
}

// interiorNode points at its log's head before it points at the log.
type interiorNode struct {
	head    *interiorHead
	log     *interiorLog
	applied int
}

func (n *interiorNode) apply() { n.applied++ }

// TestCopyableFollowsEveryPointerOfAnAddress: the walk skipped a pointer
// to an address it had visited, and a pointer to a struct's first field
// has the struct's address: the log behind it, with a method value bound
// to the node, went unseen, and the node was taken for copyable. A
// checkpoint's copy would then apply to the original node.
func TestCopyableFollowsEveryPointerOfAnAddress(t *testing.T) {
	n := &interiorNode{log: &interiorLog{}}
	n.head = &n.log.head
	n.log.onApply = n.apply
	if state.Copyable(n) {
		t.Fatal("a node whose log holds a method value bound to it is copyable")
	}
	n.log.onApply = nil
	if !state.Copyable(n) {
		t.Fatal("a node without a bound function is not copyable")
	}
}
