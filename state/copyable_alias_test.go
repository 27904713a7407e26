package state_test

import (
	"testing"

	"github.com/replaycheck/replaycheck/state"
)

type aliasRole struct{ Term int }

type aliasEntry struct {
	Term int
	Data []byte
}

// aliasNode holds references of every kind a handler keeps: into its own
// fields (role), into a slice's elements (last), a slice of part of
// another's array (pending), and plain shared ones (the same pointer,
// slice or map twice, a pointer to itself), which Clone keeps together.
type aliasNode struct {
	leader   aliasRole
	follower aliasRole
	role     any // &leader or &follower
	log      []aliasEntry
	last     *aliasEntry
	pending  []aliasEntry
	self     *aliasNode
	peer     *aliasRole
	peerToo  *aliasRole
	votes    map[string]int
	votesToo map[string]int
	logToo   []aliasEntry
}

func newAliasNode() *aliasNode {
	n := &aliasNode{log: []aliasEntry{{1, []byte("a")}, {2, []byte("b")}, {3, nil}}, peer: &aliasRole{1}, votes: map[string]int{"n1": 1}}
	n.self, n.peerToo, n.votesToo, n.logToo = n, n.peer, n.votes, n.log
	return n
}

// TestCopyableOnlyWhenTheCopyBehavesTheSame: Copyable promises that a
// Clone behaves as the original does, but Clone copies a reference into
// an object reached otherwise apart from that object: a checkpoint of a
// node whose role points at its own leader field, or whose pending
// entries are a slice of its log, updated one and not the other after it
// was restored, and the replay diverged from the recording.
func TestCopyableOnlyWhenTheCopyBehavesTheSame(t *testing.T) {
	for _, tc := range []struct {
		name     string
		build    func(n *aliasNode)
		mutate   func(n *aliasNode)
		copyable bool
	}{
		{"plain sharing", func(*aliasNode) {}, func(n *aliasNode) {
			n.self.peer.Term++
			n.votes["n2"] = 2
			n.log[0].Term = 9
		}, true},
		{"role points at a field", func(n *aliasNode) { n.role = &n.leader }, func(n *aliasNode) { n.role.(*aliasRole).Term = 5 }, false},
		{"pointer to a log entry", func(n *aliasNode) { n.last = &n.log[2] }, func(n *aliasNode) { n.last.Term = 7 }, false},
		{"pending is part of the log", func(n *aliasNode) { n.pending = n.log[1:] }, func(n *aliasNode) { n.pending[0].Term = 8 }, false},
		{"a prefix of the log", func(n *aliasNode) { n.pending = n.log[:1] }, func(n *aliasNode) { n.pending = append(n.pending, aliasEntry{Term: 4}) }, false},
		{"bytes of another entry", func(n *aliasNode) { n.log[2].Data = n.log[0].Data[:0] }, func(n *aliasNode) { n.log[2].Data = append(n.log[2].Data, 'z') }, false},
	} {
		n := newAliasNode()
		tc.build(n)
		if got := state.Copyable(n); got != tc.copyable {
			t.Errorf("%s: Copyable %v, want %v", tc.name, got, tc.copyable)
		}
		// What Copyable says is what Clone does: the copy, changed as the
		// original is, ends equal to it (or, for shapes it cannot copy,
		// does not).
		c := state.Clone(n)
		tc.mutate(n)
		tc.mutate(c)
		if same := state.Hash(n) == state.Hash(c); same != tc.copyable {
			t.Errorf("%s: copy and original, changed alike, end equal: %v; Copyable says %v", tc.name, same, tc.copyable)
		}
	}
}
