package state

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

type memoRole int

func (r memoRole) String() string { return [...]string{"follower", "candidate", "leader"}[r%3] }

type memoEntry struct {
	Term  uint64
	Role  memoRole
	Data  []byte
	At    time.Time
	Votes []string
	Ratio float64
}

// memoNode's log is long and changes as logs do: appended to, cut back,
// an entry rewritten in place, its bytes changed past what a leaf shows.
type memoNode struct {
	Log    []memoEntry
	Peers  []string
	Ptrs   []*memoEntry // references: never remembered
	Shadow []memoEntry  `replay:"-"`
	Grid   [40][2]int
}

func (n *memoNode) mutate(rng *rand.Rand) {
	switch rng.IntN(8) {
	case 0, 1, 2:
		n.Log = append(n.Log, memoEntry{Term: uint64(rng.IntN(5)), Role: memoRole(rng.IntN(3)), Data: make([]byte, rng.IntN(40)),
			At: time.Unix(int64(rng.IntN(100)), 0), Votes: []string{"n1"}})
	case 3:
		if len(n.Log) > 2 {
			n.Log = n.Log[:len(n.Log)-rng.IntN(3)] // a log cut back at its end
		}
	case 4:
		if len(n.Log) > 0 {
			// Among the first few: the same entry changes again.
			e := &n.Log[rng.IntN(min(len(n.Log), 4))]
			switch rng.IntN(4) {
			case 0:
				e.Term++
			case 3:
				// nil and empty show apart: "nil", "0x".
				if e.Data == nil {
					e.Data = []byte{}
				} else {
					e.Data = nil
				}
			case 1:
				if len(e.Data) > 0 {
					// Past the 32 bytes a leaf shows too: the same leaves.
					e.Data[min(len(e.Data)-1, []int{0, 31, 32, 35}[rng.IntN(4)])]++
				}
			case 2:
				if v := e.Votes; len(v) >= 2 && len(v[0]) > 1 {
					// The same bytes in other strings: other leaves.
					v[0], v[1] = v[0][:len(v[0])-1], v[0][len(v[0])-1:]+v[1]
				} else {
					e.Votes = append(e.Votes, "n2")
				}
			}
		}
	case 5:
		if len(n.Log) > 3 && rng.IntN(4) == 0 {
			n.Log = n.Log[2:] // every later element moves
		}
	case 6:
		n.Grid[rng.IntN(40)][rng.IntN(2)]++
		n.Peers = append(n.Peers, fmt.Sprint(rng.IntN(9)))
		n.Ptrs = append(n.Ptrs, &memoEntry{Term: uint64(rng.IntN(3))})
		if len(n.Ptrs) > 1 && rng.IntN(2) == 0 {
			n.Ptrs[0] = n.Ptrs[len(n.Ptrs)-1] // aliasing: "(same as ...)"
		}
	case 7:
		n.Shadow = append(n.Shadow, memoEntry{})
		if len(n.Log) > 0 {
			n.Log[rng.IntN(len(n.Log))].Ratio += 0.5
		}
	}
}

// TestAppendMemoIsAppend: flattening with the memo of the previous step
// gives the leaves Flatten gives, and matches each leaf to the leaf of
// its path before, while copying most of a long log's elements.
func TestAppendMemoIsAppend(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := &memoNode{}
	var f Flattener
	memos := [2]*Memo{{}, {}}
	var prev []Leaf
	matched, kept := 0, 0 // leaves matched, of those whose path was there before
	head := []Leaf{{Path: "@status", Value: "up"}}
	for step := range 1500 {
		n.mutate(rng)
		want := Flatten(n)
		in, out := memos[(step+1)%2], memos[step%2]
		if step == 0 {
			in = nil
		}
		got := f.AppendMemo(slices.Clone(head), n, prev, in, out)
		if !slices.Equal(got[len(head):], want) {
			for i := range min(len(want), len(got)-len(head)) {
				if got[len(head)+i] != want[i] {
					t.Fatalf("step %d: leaf %d is %v, Flatten's %v", step, i, got[len(head)+i], want[i])
				}
			}
			t.Fatalf("step %d: %d leaves, Flatten %d", step, len(got)-len(head), len(want))
		}
		before := map[string]bool{}
		for _, l := range prev {
			before[l.Path] = true
		}
		for j, i := range f.Matched() {
			path := got[len(head)+j].Path
			if i >= 0 && prev[i].Path != path {
				t.Fatalf("step %d: leaf %s matched to #%d", step, path, i)
			}
			if before[path] {
				kept++
				if i >= 0 {
					matched++
				}
			}
		}
		prev = got[len(head):]
	}
	if matched < kept*9/10 {
		t.Errorf("%d of %d leaves whose path was there the step before were matched to it", matched, kept)
	}
	if f.copied < 10000 {
		t.Errorf("%d elements copied in 1500 steps: the memo is hardly used", f.copied)
	}
	t.Logf("%d elements copied; the log ends %d entries long", f.copied, len(n.Log))
}
