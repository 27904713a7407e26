package state

import (
	"container/list"
	"strings"
	"testing"
)

type lruEntry struct {
	Key  string
	Seen int
}

type lru struct {
	Order *list.List
	Index map[string]*list.Element
	Empty list.List
}

type lruIndexFirst struct {
	Index map[string]*list.Element
	Order *list.List
}

// A container/list shows as the sequence it holds and an element as its
// value: walked as Go values, a list of two read as a ring of pointers
// with a phantom element, each path as long as its position.
func TestListsShowAsSequences(t *testing.T) {
	l := &lru{Order: list.New(), Index: map[string]*list.Element{}}
	for _, k := range []string{"a", "b", "c"} {
		l.Index[k] = l.Order.PushBack(&lruEntry{Key: k, Seen: len(k)})
	}
	l.Order.MoveToFront(l.Index["c"])
	got := map[string]string{}
	for _, leaf := range Flatten(l) {
		got[leaf.Path] = leaf.Value
		if strings.Contains(leaf.Path, "root") || strings.Contains(leaf.Path, "next") || strings.Contains(leaf.Path, TypePath) {
			t.Errorf("the ring, or the type of each element's any, shows: %s", leaf.Path)
		}
	}
	for path, want := range map[string]string{
		"Order[0].Key": `"c"`, "Order[1].Key": `"a"`, "Order[2].Key": `"b"`,
		`Index["a"]`: "(same as Order[1])", `Index["c"]`: "(same as Order[0])",
		"Empty": "[]",
	} {
		if got[path] != want {
			t.Errorf("%s = %q, want %q (all: %v)", path, got[path], want, got)
		}
	}
	// Reached through the map first, an element shows there, and the
	// list refers to it.
	m := &lruIndexFirst{Index: l.Index, Order: l.Order}
	got = map[string]string{}
	for _, leaf := range Flatten(m) {
		got[leaf.Path] = leaf.Value
	}
	if got[`Index["b"].Key`] != `"b"` || got["Order[2]"] != `(same as Index["b"])` {
		t.Errorf("index first: %v", got)
	}
	// The hash still walks the ring: moving an element is a change.
	before := Hash(l)
	l.Order.MoveToBack(l.Index["c"])
	if Hash(l) == before {
		t.Error("reordering the list does not change the hash")
	}
}
