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
	if !holdsBoundFunc(reflect.ValueOf(n)) {
		t.Fatal("the method value in the log, behind a pointer to its head, went unseen")
	}
	n.log.onApply = nil
	if holdsBoundFunc(reflect.ValueOf(n)) {
		t.Fatal("a function found where there is none")
	}
}

type pendingRequest struct {
	next *pendingRequest
	done func()
}

type requestQueue struct {
	head      *pendingRequest
	completed int
}

// TestBoundFuncDeepInAListIsSeen: the walk stopped at 256 levels and
// took what lay deeper for copyable: a queue of 200 pending requests, a
// linked list whose last one holds a closure over the node, was.
func TestBoundFuncDeepInAListIsSeen(t *testing.T) {
	q := &requestQueue{}
	for i := range 200 {
		r := &pendingRequest{next: q.head}
		if i == 0 {
			r.done = func() { q.completed++ }
		}
		q.head = r
	}
	if Copyable(q) {
		t.Fatal("a closure at the tail of a 200-long list went unseen")
	}
	// A slice that holds itself through an interface ends the walk.
	loop := []any{nil, func() {}}
	loop[0] = loop
	if !holdsBoundFunc(reflect.ValueOf(loop)) {
		t.Fatal("the closure beside a self-holding slice went unseen")
	}
}
