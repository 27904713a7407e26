package node_test

import (
	"slices"
	"testing"

	"github.com/replaycheck/replaycheck/node"
)

func TestMembersIsSortedAndShared(t *testing.T) {
	m := node.NewMembers([]node.ID{"n3", "n1", "n2", "n1"})
	if m.Len() != 3 || m.At(0) != "n1" || m.At(2) != "n3" {
		t.Fatalf("members %v", m.All())
	}
	if i, ok := m.Index("n2"); !ok || i != 1 {
		t.Fatalf("Index(n2) = %d, %v", i, ok)
	}
	if m.Contains("n4") {
		t.Fatal("n4 is no member")
	}
	// All is a copy: changing it changes nothing shared.
	all := m.All()
	all[0] = "zz"
	if m.At(0) != "n1" {
		t.Fatal("All exposed the shared list")
	}
	a := node.NewInstance(node.Config{ID: "n1", Nodes: m.All(), Members: m, Codec: node.NewCodec()})
	b := node.NewInstance(node.Config{ID: "n2", Nodes: m.All(), Members: m, Codec: node.NewCodec()})
	if a.Members() != m || b.Members() != m {
		t.Fatal("instances given one node set do not share it")
	}
	if got := b.Peers(); !slices.Equal(got, []node.ID{"n1", "n3"}) {
		t.Fatalf("Peers of n2 = %v", got)
	}
	// Peers is a copy too.
	p := a.Peers()
	p[0] = "zz"
	if a.Peers()[0] != "n2" {
		t.Fatal("Peers exposed the shared list")
	}
	// A node set that lacks the node itself is not used for it.
	c := node.NewInstance(node.Config{ID: "n9", Nodes: []node.ID{"n1", "n9"}, Members: m, Codec: node.NewCodec()})
	if !c.Members().Contains("n9") || c.Members().Contains("n2") {
		t.Fatalf("n9's members %v", c.Members().All())
	}
}
