package state_test

import (
	"container/list"
	"testing"

	"github.com/replaycheck/replaycheck/state"
)

// lruFirst holds lists the ways handlers do: a list by value and its
// elements indexed by key, a list by pointer whose elements a slice also
// holds, an emptied list and one never used. lruLast declares the same
// with the references to elements before the lists, so that a copy meets
// an element (and through it the list's sentinel) before the list.
type lruFirst struct {
	Order   list.List
	ByKey   map[int]*list.Element
	Queue   *list.List
	Pending []*list.Element
	Emptied list.List
	Zero    list.List
}

type lruLast struct {
	ByKey   map[int]*list.Element
	Pending []*list.Element
	Order   list.List
	Queue   *list.List
	Emptied list.List
	Zero    list.List
}

// lruBehind holds its lists behind an interface, as a role would.
type lruBehind struct{ Role any }

func (n *lruBehind) parts() (*list.List, map[int]*list.Element, *list.List, *[]*list.Element, *list.List, *list.List) {
	return n.Role.(*lruLast).parts()
}

type lists interface {
	parts() (order *list.List, byKey map[int]*list.Element, queue *list.List, pending *[]*list.Element, emptied, zero *list.List)
}

func (n *lruFirst) parts() (*list.List, map[int]*list.Element, *list.List, *[]*list.Element, *list.List, *list.List) {
	return &n.Order, n.ByKey, n.Queue, &n.Pending, &n.Emptied, &n.Zero
}

func (n *lruLast) parts() (*list.List, map[int]*list.Element, *list.List, *[]*list.Element, *list.List, *list.List) {
	return &n.Order, n.ByKey, n.Queue, &n.Pending, &n.Emptied, &n.Zero
}

func fillLists(n lists) {
	order, byKey, queue, pending, emptied, _ := n.parts()
	for k := range 6 {
		byKey[k] = order.PushBack(k * 10)
	}
	for k := range 3 {
		*pending = append(*pending, queue.PushBack(k))
	}
	emptied.Remove(emptied.PushBack("gone"))
}

// useLists changes every list through every kind of reference: a list
// operation on an element checks that the element is of that list, so a
// copy whose elements point at another list (or at a copy of its
// sentinel) does nothing, or breaks the ring.
func useLists(n lists) {
	order, byKey, queue, pending, emptied, zero := n.parts()
	order.MoveToFront(byKey[3])
	order.Remove(byKey[1])
	delete(byKey, 1)
	byKey[7] = order.InsertAfter(70, byKey[5])
	queue.Remove((*pending)[0])
	*pending = append((*pending)[1:], queue.PushFront(9))
	emptied.PushBack("back")
	zero.PushFront("first")
}

// A world holding lists is copied for each fork (predict, explore --from,
// critical) only if Copyable says the copy behaves as the original; a
// world it refuses is rebuilt by replay for every fork. Lists were
// refused (the sentinel inside a List is an element a pointer reaches),
// so every fork of a new user's key-value store replayed from #0.
func TestListsAreCopyable(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func() lists
	}{
		{"lists first", func() lists { return &lruFirst{ByKey: map[int]*list.Element{}, Queue: list.New()} }},
		{"elements first", func() lists { return &lruLast{ByKey: map[int]*list.Element{}, Queue: list.New()} }},
		{"behind an interface", func() lists {
			return &lruBehind{Role: &lruLast{ByKey: map[int]*list.Element{}, Queue: list.New()}}
		}},
	} {
		for round := range 20 { // map order varies which element a copy meets first
			n := tc.make()
			fillLists(n)
			if !state.Copyable(n) {
				t.Fatalf("%s: not Copyable", tc.name)
			}
			c := state.Clone(n)
			if state.Hash(c) != state.Hash(n) {
				t.Fatalf("%s, round %d: the copy hashes apart before any change", tc.name, round)
			}
			useLists(n)
			useLists(c)
			if state.Hash(c) != state.Hash(n) {
				t.Fatalf("%s, round %d: copy and original, changed alike, end apart", tc.name, round)
			}
			o, _, q, _, _, _ := c.parts()
			if o.Len() != 6 || q.Len() != 3 || o.Front().Value != 30 {
				t.Fatalf("%s, round %d: the copy's lists hold %d and %d, front %v", tc.name, round, o.Len(), q.Len(), o.Front().Value)
			}
		}
	}
}

// A List held by value where a copy cannot reach it in place (a map's
// value) cannot be mended: such a state is not Copyable.
func TestListsInMapValuesAreNotCopyable(t *testing.T) {
	var l list.List
	l.PushBack(1)
	n := &struct{ ByName map[string]list.List }{ByName: map[string]list.List{"a": l}}
	if state.Copyable(n) {
		t.Error("a state with a List as a map value is Copyable")
	}
}

type movedLists struct{ Old, Cur list.List }

type bucket struct {
	L list.List
	K int
}

// A List copied by value (assigned, or moved when an append grows the
// slice of structs holding it) has elements that point at the List it
// was copied from: the original's operations treat them as foreign, a
// mended copy's would not. Such a state is not Copyable, and Clone does
// not panic on it.
func TestListsCopiedByValueAreNotCopyable(t *testing.T) {
	assigned := &movedLists{}
	assigned.Cur.PushBack(1)
	assigned.Cur.PushBack(2)
	assigned.Old = assigned.Cur
	assigned.Cur.Remove(assigned.Cur.Front())

	reset := &movedLists{}
	reset.Cur.PushBack(1)
	reset.Cur.PushBack(2)
	reset.Old = reset.Cur
	reset.Cur.Init()

	grown := &struct{ Bs []bucket }{Bs: make([]bucket, 1, 1)}
	grown.Bs[0].L.PushBack(1)
	grown.Bs[0].L.PushBack(2)
	grown.Bs = append(grown.Bs, bucket{})

	var emptied list.List
	emptied.Remove(emptied.PushBack(1))
	copiedEmpty := &movedLists{Cur: emptied}
	copiedEmpty.Old = copiedEmpty.Cur

	for name, v := range map[string]any{"assigned": assigned, "reset": reset, "moved by append": grown, "an emptied list copied": copiedEmpty} {
		if state.Copyable(v) {
			t.Errorf("%s: Copyable", name)
		}
		_ = state.Clone(v) // must not panic
	}
}
