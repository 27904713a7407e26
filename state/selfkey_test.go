package state

import (
	"testing"
	"time"
)

type ackingPeer struct {
	ID   int
	Acks map[*ackingPeer]bool
}

// A map whose key reaches the map (a peer that acks itself) is sorted by
// its keys hashed alone, and hashing such a key hashed the map, which
// sorted its keys again: the stack overflowed, a fatal error no recover
// catches, in the simulator, replay and the index alike.
func TestMapsWhoseKeysReachThem(t *testing.T) {
	build := func() *ackingPeer {
		p := &ackingPeer{ID: 1, Acks: map[*ackingPeer]bool{}}
		q := &ackingPeer{ID: 2, Acks: map[*ackingPeer]bool{}}
		p.Acks[p], p.Acks[q], q.Acks[p] = true, true, false
		return p
	}
	done := make(chan [2]uint64, 1)
	go func() { done <- [2]uint64{Hash(build()), Hash(build())} }()
	select {
	case h := <-done:
		if h[0] != h[1] {
			t.Errorf("one state, two hashes: %x %x", h[0], h[1])
		}
		if got, want := h[0], specHash(build()); got != want {
			t.Errorf("hash %x, the spec's %x", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hashing did not end")
	}
	leaves := map[string]string{}
	for _, l := range Flatten(build()) {
		leaves[l.Path] = l.Value
	}
	if leaves["Acks[.]"] != "true" || leaves["Acks[&{ID:2 Acks:map[*state.ackingPeer]bool}]"] != "true" {
		t.Errorf("leaves %v", leaves)
	}
	other := build()
	other.Acks[other] = false
	if Hash(other) == Hash(build()) {
		t.Error("a changed self-ack does not change the hash")
	}
}
