package state

import (
	"reflect"
	"testing"
)

type nestPeer struct{ ID string }

type nestClient struct {
	Acked map[*nestPeer]int // sorted by the general walk
}

type nestOuter struct {
	Clients map[string]*nestClient // walked without reflection (refMapHash)
}

type nestBack struct {
	Peers map[*nestPeer]*nestRef // the general walk
}

type nestRef struct {
	Byname map[string]*nestPeer // refMapHash inside it
}

// The two ways of walking a map with references kept their scratch per
// nesting level in two lists but counted levels together: a map of one
// kind inside the other indexed past its list. A pooled hasher that had
// hashed a deeper state before had room, so it panicked only on a fresh
// one (after a garbage collection emptied the pool): a new user's check
// died at random.
func TestMapsOfOneWalkInsideTheOther(t *testing.T) {
	p1, p2 := &nestPeer{"r1"}, &nestPeer{"r2"}
	states := []any{
		&nestOuter{Clients: map[string]*nestClient{"c1": {Acked: map[*nestPeer]int{p1: 1, p2: 2}}}},
		&nestBack{Peers: map[*nestPeer]*nestRef{p1: {Byname: map[string]*nestPeer{"a": p1, "b": p2}}}},
	}
	for i, s := range states {
		fresh := newHasher()
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("state %d: a fresh hasher panicked: %v", i, r)
				}
			}()
			fresh.value(reflect.ValueOf(s), 0)
		}()
		if got, want := fresh.sum(), specHash(s); got != want {
			t.Errorf("state %d: hash %x, the spec's %x", i, got, want)
		}
	}
}
