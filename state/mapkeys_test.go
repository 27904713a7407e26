package state

import (
	"strings"
	"testing"
)

type keyPeer struct {
	Name string
	next *keyPeer
}

type hiddenKey struct {
	Node  string
	Epoch int `replay:"-"`
}

// keysAlike holds maps whose distinct keys printed alike: pointer keys
// (as their type's name), interfaces holding numbers of other types, byte
// arrays past the bytes shown, struct keys differing in a hidden field.
type keysAlike struct {
	acks   map[*keyPeer]int
	any    map[any]string
	digest map[[40]byte]int
	hidden map[hiddenKey]bool
}

// TestMapKeysThatPrintAlikeHaveTheirOwnPaths: every entry of a map is a
// path of its own. Entries whose keys print alike shared one, so a
// flattening showed one path twice (the index and `replay state` kept
// one of the values) and the predicates' rows, keyed by path, merged.
func TestMapKeysThatPrintAlikeHaveTheirOwnPaths(t *testing.T) {
	a, b := &keyPeer{Name: "n1"}, &keyPeer{Name: "n2"}
	a.next, b.next = b, a // keys that point to each other: their text ends
	var d1, d2 [40]byte
	d2[35] = 1
	s := &keysAlike{
		acks:   map[*keyPeer]int{a: 1, b: 2, {Name: "n1"}: 3, nil: 4},
		any:    map[any]string{1: "int", int64(1): "int64", uint8(1): "uint8", "1": "string"},
		digest: map[[40]byte]int{d1: 1, d2: 2},
		hidden: map[hiddenKey]bool{{"n1", 1}: true, {"n1", 2}: false},
	}
	leaves := Flatten(s)
	paths := map[string]bool{}
	var all []string
	for _, l := range leaves {
		if paths[l.Path] {
			t.Errorf("two leaves at %s", l.Path)
		}
		paths[l.Path] = true
		all = append(all, l.Path+"="+l.Value)
	}
	if len(leaves) != 4+4+2+2 {
		t.Errorf("%d leaves, want 12:\n%s", len(leaves), strings.Join(all, "\n"))
	}
	// A pointer key reads as what it points to.
	for _, want := range []string{`acks[&{Name:"n1" next:*state.keyPeer}]`, `acks[&{Name:"n1" next:nil}]=3`, `acks[nil]=4`, `any["1"]="string"`} {
		if !strings.Contains(strings.Join(all, "\n"), want) {
			t.Errorf("no %s in\n%s", want, strings.Join(all, "\n"))
		}
	}
	// The same paths every time, whatever order the maps iterate in.
	want := strings.Join(all, "\n")
	for range 20 {
		var again []string
		for _, l := range Flatten(s) {
			again = append(again, l.Path+"="+l.Value)
		}
		if got := strings.Join(again, "\n"); got != want {
			t.Fatalf("flattened two ways:\n%s\n---\n%s", want, got)
		}
	}
}

type ackPeer struct {
	id       string
	inflight int
}

type ackPrimary struct {
	peers []*ackPeer
	acked map[*ackPeer]uint64
	later map[*ackPeer]bool // keyed by peers the walk met before: the same names
	first map[*ackPeer]int  // before any holder: named by contents
	owned []*ackPeer
}

// A pointer key's path is where the state held its object before the
// map: named by the object's contents, it changed whenever they did (a
// new user's history of a 2-entry map listed 124 entries, each removed
// at the next change of its peer).
func TestPointerKeysAreNamedByWhereTheObjectIs(t *testing.T) {
	r2, r3 := &ackPeer{"r2", 0}, &ackPeer{"r3", 1}
	p := &ackPrimary{peers: []*ackPeer{r2, r3}, acked: map[*ackPeer]uint64{r2: 4, r3: 5},
		later: map[*ackPeer]bool{r3: true}}
	paths := func() map[string]string {
		m := map[string]string{}
		for _, l := range Flatten(p) {
			m[l.Path] = l.Value
		}
		return m
	}
	before := paths()
	r3.inflight = 7
	after := paths()
	for path, want := range map[string]string{"acked[peers[0]]": "4", "acked[peers[1]]": "5", "later[peers[1]]": "true"} {
		if before[path] != want || after[path] != want {
			t.Errorf("%s is %q, then %q after the peer changed; want %q both times (leaves %v)", path, before[path], after[path], want, after)
		}
	}
	// A key whose object nothing before the map holds keeps its
	// contents' name.
	q := &ackPrimary{first: map[*ackPeer]int{r2: 1}, owned: []*ackPeer{r2}}
	leaves := map[string]string{}
	for _, l := range Flatten(q) {
		leaves[l.Path] = l.Value
	}
	if leaves[`first[&{id:"r2" inflight:0}]`] != "1" {
		t.Errorf("a key no earlier field holds is not named by its contents: %v", leaves)
	}
}

// Entries of a map keyed by pointers were in the order of what the keys
// point to, so a change of one swapped them: the index then stored the
// whole state at each such step (its leaves out of their previous
// order). They are now in the order of their keys' names, and each leaf
// is found in the previous flattening.
func TestPointerKeyedEntriesKeepTheirOrder(t *testing.T) {
	r2, r3 := &ackPeer{"r2", 0}, &ackPeer{"r3", 0}
	p := &ackPrimary{peers: []*ackPeer{r2, r3}, acked: map[*ackPeer]uint64{r2: 4, r3: 5}}
	var f Flattener
	prev := f.Append(nil, p, nil)
	order := func(leaves []Leaf) string {
		var b strings.Builder
		for _, l := range leaves {
			if strings.HasPrefix(l.Path, "acked") {
				b.WriteString(l.Path + " ")
			}
		}
		return b.String()
	}
	first := order(prev)
	if first != "acked[peers[0]] acked[peers[1]] " {
		t.Fatalf("entries in order %q", first)
	}
	for i := 1; i < 20; i++ {
		r2.inflight, r3.inflight = i, 20-i
		cur := f.Append(nil, p, prev)
		if got := order(cur); got != first {
			t.Fatalf("change %d: entries in order %q, were %q", i, got, first)
		}
		for j, k := range f.Matched() {
			if k < 0 {
				t.Fatalf("change %d: %s is not matched to the previous flattening, which has it:\n%v", i, cur[j].Path, prev)
			}
		}
		prev = cur
	}
}
