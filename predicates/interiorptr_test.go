package predicates_test

import (
	"testing"

	"github.com/replaycheck/replaycheck/node"
)

type ipEntry struct{ Index int }

type ipHead struct{ First ipEntry }

type ipLog struct {
	head    ipHead // first: a pointer to it has the log's address
	entries []ipEntry
}

// ipNode points at its log's head before it points at the log: the two
// pointers share an address.
type ipNode struct {
	head *ipHead
	log  *ipLog
}

func (n *ipNode) Init(node.Env) {
	n.log = &ipLog{head: ipHead{ipEntry{0}}, entries: []ipEntry{{1}, {2}}}
	n.head = &n.log.head
}
func (*ipNode) Receive(node.Env, node.ID, node.Message) {}
func (*ipNode) Timer(node.Env, node.Timer)              {}

// TestRowsBehindAPointerToAFirstFieldAreSeen: the scan took a pointer
// it had followed before for an alias by its address alone, and a
// pointer to a struct's first field has the struct's address: the log
// reached after its head went unwalked, and its entries were no rows.
func TestRowsBehindAPointerToAFirstFieldAreSeen(t *testing.T) {
	holdsOnOneNode(t, "interior", func() node.Handler { return &ipNode{} }, `E = table("predicates_test.ipEntry")
safety("Entries", lambda: E.get("n1", path="log.entries[1]") != None and E.get("n1", path="log.entries[1]").Index == 2)
`)
}
