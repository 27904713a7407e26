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
