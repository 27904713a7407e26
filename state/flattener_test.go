package state

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"unsafe"
)

// flatState is a state with every shape a flattening walks: a map that
// gains and loses keys in the middle, a slice that grows and shrinks, an
// aliased pointer, bytes and a nested struct.
type flatState struct {
	Term    int
	Peers   map[string]*flatPeer
	Log     []flatEntry
	Leader  *flatPeer
	Digest  []byte
	Pending map[int]string
}

type flatPeer struct {
	Match, Next int
	Active      bool
}

type flatEntry struct {
	Term int
	Data string
}

// mutate makes one random change of the kinds a node's event makes.
func (s *flatState) mutate(r *rand.Rand) {
	switch r.IntN(8) {
	case 0:
		s.Term++
	case 1:
		s.Peers[fmt.Sprintf("n%02d", r.IntN(40))] = &flatPeer{Next: r.IntN(5)}
	case 2:
		for k := range s.Peers {
			if r.IntN(3) == 0 {
				delete(s.Peers, k)
			}
		}
	case 3:
		for range r.IntN(4) {
			s.Log = append(s.Log, flatEntry{s.Term, fmt.Sprint("put ", r.IntN(100))})
		}
	case 4:
		s.Log = s.Log[:r.IntN(len(s.Log)+1)]
	case 5:
		for _, p := range s.Peers {
			p.Match++
			s.Leader = p
			break
		}
	case 6:
		s.Digest = make([]byte, r.IntN(40))
		for i := range s.Digest {
			s.Digest[i] = byte(r.IntN(256))
		}
	case 7:
		if len(s.Pending) > 30 {
			clear(s.Pending)
		}
		s.Pending[r.IntN(100)] = "w"
	}
}

// TestAFlattenerMatchesFlatten flattens a state after each of a thousand
// random changes, against the last result, and compares with a
// flattening from nothing: reusing must never change what comes out.
func TestAFlattenerMatchesFlatten(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	s := &flatState{Peers: map[string]*flatPeer{}, Pending: map[int]string{}}
	var f Flattener
	var prev []Leaf
	shared := 0
	for i := range 1000 {
		s.mutate(r)
		got := f.Append(nil, s, prev)
		want := Flatten(s)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("change %d: reusing the last leaves gave\n%v\nwant\n%v", i, got, want)
		}
		for j := range got {
			if j < len(prev) && unsafe.StringData(got[j].Path) == unsafe.StringData(prev[j].Path) {
				shared++
			}
		}
		prev = got
	}
	if shared == 0 {
		t.Fatal("no path was shared with the previous leaves")
	}
}

// TestAFlattenerAllocatesForTheChange: flattening a big state again after
// one changed field allocates the new slice and the one changed value,
// not a path and value per leaf.
func TestAFlattenerAllocatesForTheChange(t *testing.T) {
	s := &flatState{Peers: map[string]*flatPeer{}, Pending: map[int]string{}}
	for i := range 200 {
		s.Log = append(s.Log, flatEntry{1, fmt.Sprint("put ", i)})
	}
	var f Flattener
	prev := f.Append(nil, s, nil)
	allocs := testing.AllocsPerRun(20, func() {
		s.Term++
		prev = f.Append(make([]Leaf, 0, len(prev)), s, prev)
	})
	// The slice, the term's new text, and what reflect and the map
	// walk allocate whatever the state's size.
	if allocs > 8 {
		t.Fatalf("%.0f allocations to flatten a %d-leaf state after one change", allocs, len(prev))
	}
}

// TestAFlattenerFindsPathsThatMovedFar: when many leaves vanish at once (a
// map losing most of its keys), the leaves after them are still shared,
// not allocated again.
func TestAFlattenerFindsPathsThatMovedFar(t *testing.T) {
	s := &flatState{Peers: map[string]*flatPeer{}, Pending: map[int]string{}}
	for i := range 300 {
		s.Peers[fmt.Sprintf("p%03d", i)] = &flatPeer{Match: i}
	}
	var f Flattener
	prev := f.Append(nil, s, nil)
	for i := range 200 {
		delete(s.Peers, fmt.Sprintf("p%03d", i))
	}
	var got []Leaf
	allocs := testing.AllocsPerRun(1, func() {
		got = f.Append(make([]Leaf, 0, len(prev)), s, prev)
	})
	if want := Flatten(s); !reflect.DeepEqual(got, want) {
		t.Fatalf("after removing 200 peers:\n%v\nwant\n%v", got, want)
	}
	// What flattening the same state again costs (reflect copies each
	// map key), and the index of the previous paths: nothing per leaf.
	same := testing.AllocsPerRun(1, func() { f.Append(make([]Leaf, 0, len(got)), s, got) })
	if allocs > same+30 {
		t.Fatalf("%.0f allocations to flatten %d leaves after 600 vanished, %.0f with nothing changed", allocs, len(got), same)
	}
}
