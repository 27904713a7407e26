package predicates_test

import (
	"container/list"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
)

type contact struct {
	ID   string
	Seen int
}

// bucket is a k-bucket as Go programmers write one: a container/list in
// LRU order and a map into it.
type bucket struct {
	Order *list.List
	Index map[string]*list.Element
}

func (b *bucket) Init(env node.Env) {
	b.Order, b.Index = list.New(), map[string]*list.Element{}
	for i, id := range []string{"n2", "n3", "n4"} {
		b.Index[id] = b.Order.PushBack(&contact{ID: id, Seen: i})
	}
	env.After(10*time.Millisecond, "tick")
}
func (b *bucket) Receive(node.Env, node.ID, node.Message) {}
func (b *bucket) Timer(env node.Env, _ node.Timer) {
	b.Order.MoveToFront(b.Order.Back())
	env.After(10*time.Millisecond, "tick")
}

// Rows in a container/list are at its positions, Order[0], ..., as
// replay state shows them, and a column holding the list reads as a list
// of its values: the ring of elements showed as rows under
// Order.root.next.next.Value, and reading it gave its internals.
func TestListsInTables(t *testing.T) {
	holdsOnOneNode(t, "kbucket", func() node.Handler { return &bucket{} }, `
Contacts = table("predicates_test.contact")
Buckets = table("predicates_test.bucket")
safety("AtPositions", lambda: sorted([c.path for c in Contacts]) == ["Order[0]", "Order[1]", "Order[2]"])
safety("ListOfValues", lambda: forall(Buckets, lambda b: sorted([c.ID for c in b.Order]) == ["n2", "n3", "n4"]))
safety("IndexToValues", lambda: forall(Buckets, lambda b: b.Index["n3"].ID == "n3"))
`)
}
