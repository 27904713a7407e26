package node

import (
	"slices"
)

// Members is the node set of a system: sorted (byte order, as Peers), no
// duplicates, read-only. Drivers build one per run and share it between
// every Instance, so a run of N nodes holds one list, not N, and a handler
// that needs to look at the membership does it without copying it:
// Peers copies the whole list on every call, which costs O(nodes) per
// event in a system that asks on every event.
type Members struct {
	ids []ID
}

// NewMembers builds a node set from ids (copied, sorted, deduplicated).
func NewMembers(ids []ID) *Members {
	s := slices.Clone(ids)
	slices.Sort(s)
	return &Members{ids: slices.Compact(s)}
}

// Len is the number of nodes.
func (m *Members) Len() int { return len(m.ids) }

// At is the i-th node in sorted order.
func (m *Members) At(i int) ID { return m.ids[i] }

// Index is id's position in sorted order, and whether id is a member.
func (m *Members) Index(id ID) (int, bool) { return slices.BinarySearch(m.ids, id) }

// Contains reports whether id is a member.
func (m *Members) Contains(id ID) bool {
	_, ok := m.Index(id)
	return ok
}

// All returns a copy of the sorted node set.
func (m *Members) All() []ID { return slices.Clone(m.ids) }

// membership is implemented by Envs that can hand out the shared node set.
type membership interface{ Members() *Members }

// MembersOf returns the node set of env's system, Self included, without
// copying it: the cheap alternative to Peers for handlers of large
// systems (pick a random peer, walk the ring, test membership). An Env
// that does not share its node set (a test double) gets one built from
// Self and Peers.
func MembersOf(env Env) *Members {
	if m, ok := env.(membership); ok {
		return m.Members()
	}
	return NewMembers(append(env.Peers(), env.Self()))
}
