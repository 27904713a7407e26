package state

import (
	"reflect"
	"testing"
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

// TestBoundFuncFollowsEveryPointerOfAnAddress: the walk for functions
// skipped a pointer to an address it had visited, and a pointer to a
// struct's first field has the struct's address: the log behind it, with
// a method value bound to the node, went unseen, and the node was taken
// for copyable. (Such a node is not copyable anyway, since it points
// into its log: the walk is tested alone.)
func TestBoundFuncFollowsEveryPointerOfAnAddress(t *testing.T) {
	n := &interiorNode{log: &interiorLog{}}
	n.head = &n.log.head
	n.log.onApply = n.apply
	w := funcWalker{seen: map[refKey]bool{}}
	if !w.boundFunc(reflect.ValueOf(n), 0) {
		t.Fatal("the method value in the log, behind a pointer to its head, went unseen")
	}
	n.log.onApply = nil
	w = funcWalker{seen: map[refKey]bool{}}
	if w.boundFunc(reflect.ValueOf(n), 0) {
		t.Fatal("a function found where there is none")
	}
}
