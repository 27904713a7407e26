package state

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// plainEntry's shown parts are all in its own memory; Seen is not shown.
type plainEntry struct {
	Index, Term uint64
	Op          string
	Acked       bool
	Seen        *int `replay:"-"`
}

type plainNode struct {
	Log   []plainEntry
	log   []plainEntry // unexported: observed too
	Clock [40]plainEntry
}

func (n *plainNode) mutate(rng *rand.Rand) {
	pick := func(l []plainEntry) *plainEntry { return &l[rng.IntN(len(l))] }
	switch rng.IntN(10) {
	case 0, 1, 2:
		for range 1 + rng.IntN(3) {
			e := plainEntry{Index: uint64(len(n.Log) + 1), Term: uint64(rng.IntN(3)), Op: strings.Repeat("x", rng.IntN(4))}
			n.Log, n.log = append(n.Log, e), append(n.log, e)
		}
	case 3:
		if k := len(n.Log); k > 0 {
			n.Log = n.Log[:k-rng.IntN(min(k, 3))+0] // cut back at the end
		}
	case 4:
		if len(n.Log) > 0 {
			e := pick(n.Log)
			switch rng.IntN(4) {
			case 0:
				e.Term++
			case 1: // the same text in another string: nothing shown changes
				e.Op = strings.Clone(e.Op + "")
				b := []byte(e.Op)
				e.Op = string(b)
			case 2: // other text of the same length
				e.Op = strings.Repeat("y", len(e.Op))
			case 3:
				x := rng.IntN(9)
				e.Seen = &x // unshown: memory changes, leaves do not
			}
		}
	case 5:
		if len(n.Log) > 3 && rng.IntN(3) == 0 {
			n.Log = n.Log[1+rng.IntN(2):] // every later element moves
		}
	case 6:
		n.Log = slices.Clone(n.Log) // another array, the same elements
	case 7:
		if len(n.Log) > 1 {
			i, j := rng.IntN(len(n.Log)), rng.IntN(len(n.Log))
			n.Log[i], n.Log[j] = n.Log[j], n.Log[i]
		}
	case 8:
		if len(n.log) > 0 {
			pick(n.log).Acked = !pick(n.log).Acked
		}
		pick(n.Clock[:]).Index++
	case 9:
		if len(n.log) > 40 && rng.IntN(4) == 0 {
			n.log = n.log[:rng.IntN(len(n.log))]
		}
	}
}

// TestAppendMemoComparesPlainMemory: elements whose shown parts are all
// in their own memory are found unchanged by comparing it with a copy;
// the leaves are still Flatten's however the slice changed (cut, moved,
// swapped, another array, equal text in another string, an unshown
// field), most elements are copied, and a memo read twice (its copy
// taken over by the first) still gives the right leaves.
func TestAppendMemoComparesPlainMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	n := &plainNode{}
	var f Flattener
	memos := [2]*Memo{{}, {}}
	var prev []Leaf
	for step := range 2000 {
		n.mutate(rng)
		want := Flatten(n)
		in, out := memos[(step+1)%2], memos[step%2]
		if step == 0 {
			in = nil
		}
		if step%97 == 50 {
			// Flattened from the same memo twice: the first takes its
			// copies over, the second must not find them.
			again := &Memo{}
			_ = f.AppendMemo(nil, n, prev, in, again)
		}
		got := f.AppendMemo(nil, n, prev, in, out)
		sameAsFlatten(t, step, got, want, prev, f.Matched())
		prev = got
	}
	if f.copiedPlain < f.copied*3/4 {
		t.Errorf("%d elements copied in 2000 steps, %d of them by comparing memory: memory is hardly compared", f.copied, f.copiedPlain)
	}
	t.Logf("%d elements copied (%d by memory); the logs end %d and %d entries long", f.copied, f.copiedPlain, len(n.Log), len(n.log))
}

type mapRole uint8

func (r mapRole) String() string {
	return [...]string{"follower", "candidate", "leader", "learner"}[r%4]
}

type mapNode struct {
	KV    map[string]string
	Roles map[int]mapRole
	kv    map[uint32]bool // unexported: observed too
	Alias map[string]string
	Peers map[string]*plainEntry // values are references: never remembered
}

func (n *mapNode) mutate(rng *rand.Rand) {
	key := func() string { return fmt.Sprintf("k%02d", rng.IntN(60)) }
	switch rng.IntN(9) {
	case 0, 1:
		n.KV[key()] = fmt.Sprint(rng.IntN(5))
	case 2:
		delete(n.KV, key())
	case 3: // a new map of the same length and other contents
		m := map[string]string{}
		for k, v := range n.KV {
			m[k+"x"] = v
		}
		n.KV = m
	case 4: // a new map of the same contents
		n.KV = maps.Clone(n.KV)
	case 5:
		n.Roles[rng.IntN(50)] = mapRole(rng.IntN(4))
		if rng.IntN(3) == 0 {
			delete(n.Roles, rng.IntN(50))
		}
	case 6:
		n.kv[uint32(rng.IntN(40))] = rng.IntN(2) == 0
	case 7: // one map at two paths: the second shows "(same as KV)"
		if rng.IntN(2) == 0 {
			n.Alias = n.KV
		} else {
			n.Alias = map[string]string{}
		}
	case 8:
		if len(n.KV) > 0 && rng.IntN(4) == 0 {
			for k := range n.KV {
				if len(n.KV) > 5 {
					delete(n.KV, k) // shrinks below what a memo remembers
				}
			}
		}
		n.Peers[key()] = &plainEntry{Term: uint64(rng.IntN(3))}
	}
}

// TestAppendMemoRemembersMapsOfScalars: a long map of scalar keys and
// values whose entries sum as before has its leaves copied; the leaves
// are still Flatten's however the map changed (an entry set or deleted,
// another map of the same length, the same map at two paths, shrunk
// below what is remembered and grown back).
func TestAppendMemoRemembersMapsOfScalars(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	n := &mapNode{KV: map[string]string{}, Roles: map[int]mapRole{}, kv: map[uint32]bool{}, Alias: map[string]string{}, Peers: map[string]*plainEntry{}}
	var f Flattener
	memos := [2]*Memo{{}, {}}
	var prev []Leaf
	for step := range 3000 {
		n.mutate(rng)
		want := Flatten(n)
		in, out := memos[(step+1)%2], memos[step%2]
		if step == 0 {
			in = nil
		}
		got := f.AppendMemo(nil, n, prev, in, out)
		sameAsFlatten(t, step, got, want, prev, f.Matched())
		prev = got
	}
	if f.copiedMaps < 2000 {
		t.Errorf("%d maps copied in 3000 steps: maps are hardly remembered", f.copiedMaps)
	}
	t.Logf("%d maps copied; KV ends with %d entries", f.copiedMaps, len(n.KV))
}

// sameAsFlatten fails t unless got, what AppendMemo gave at step, is
// Flatten's want, each leaf matched (matched: Flattener.Matched) to the
// leaf of its path in prev.
func sameAsFlatten(t *testing.T, step int, got, want, prev []Leaf, matched []int) {
	t.Helper()
	if !slices.Equal(got, want) {
		for i := range min(len(want), len(got)) {
			if got[i] != want[i] {
				t.Fatalf("step %d: leaf %d is %v, Flatten's %v", step, i, got[i], want[i])
			}
		}
		t.Fatalf("step %d: %d leaves, Flatten %d", step, len(got), len(want))
	}
	if len(matched) != len(got) {
		t.Fatalf("step %d: %d matched for %d leaves", step, len(matched), len(got))
	}
	for j, i := range matched {
		if i >= 0 && prev[i].Path != got[j].Path {
			t.Fatalf("step %d: leaf %s matched to #%d (%s)", step, got[j].Path, i, prev[i].Path)
		}
	}
}
