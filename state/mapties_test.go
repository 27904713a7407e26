package state

import (
	"strings"
	"testing"
)

type tiePeer struct {
	Name  string
	Match int
}

// tied holds maps with two entries that hash alike alone (keys pointing
// to equal peers, and equal values), one of which is also reached
// before the map: a key through leader, a value through target.
type tied struct {
	leader *tiePeer
	target *tiePeer
	acks   map[*tiePeer]int
	next   map[*tiePeer]*tiePeer
}

func tiedState(reversed bool) *tied {
	k1, k2 := &tiePeer{"n1", 1}, &tiePeer{"n1", 1}
	v1, v2 := &tiePeer{"n2", 5}, &tiePeer{"n2", 5}
	s := &tied{leader: k1, target: v1, acks: map[*tiePeer]int{}, next: map[*tiePeer]*tiePeer{}}
	if reversed {
		k1, k2, v1, v2 = k2, k1, v2, v1
	}
	s.acks[k1], s.acks[k2] = 1, 1
	s.next[k1], s.next[k2] = v1, v2
	return s
}

// TestMapEntriesThatHashAlikeAloneOrderCanonically: a map's entries are
// ordered by their keys' and values' hashes, each taken alone; two
// entries alike in both came in the iterator's random order. Which one
// comes first decides which is numbered first and which shows as a
// back-reference (or "(same as PATH)") to an object reached before the
// map, so one state hashed, and flattened, two ways from run to run.
func TestMapEntriesThatHashAlikeAloneOrderCanonically(t *testing.T) {
	want := Hash(tiedState(false))
	wantLeaves := flatText(tiedState(false))
	for i := range 40 {
		s := tiedState(i%2 == 1)
		if got := Hash(s); got != want {
			t.Fatalf("build %d: hash %#x, and %#x before", i, got, want)
		}
		if got := flatText(s); got != wantLeaves {
			t.Fatalf("build %d flattened another way:\n%s\n---\n%s", i, wantLeaves, got)
		}
	}
	// That the leader is one of the keys is part of the state.
	s := tiedState(false)
	s.leader = &tiePeer{"n1", 1}
	if Hash(s) == want {
		t.Fatal("a leader that is none of the keys hashes as one that is")
	}
}

func flatText(v any) string {
	var b strings.Builder
	for _, l := range Flatten(v) {
		b.WriteString(l.Path + "=" + l.Value + "\n")
	}
	return b.String()
}

// untied holds the same maps as tied, with the fields that reach one of
// the tied entries after them: the order the entries are hashed in
// numbers what they reach, and the fields are back-references to it.
type untied struct {
	acks   map[*tiePeer]int
	next   map[*tiePeer]*tiePeer
	leader *tiePeer
	target *tiePeer
	both   []*tiePeer
}

func untiedState() *untied {
	k1, k2 := &tiePeer{"n1", 1}, &tiePeer{"n1", 1}
	v1, v2 := &tiePeer{"n2", 5}, &tiePeer{"n2", 5}
	return &untied{leader: k1, target: v1, acks: map[*tiePeer]int{k1: 1, k2: 1},
		next: map[*tiePeer]*tiePeer{k1: v1, k2: v2}, both: []*tiePeer{k1, k2}}
}

// TestTiedEntriesReachedAfterTheMapHashCanonically: the fields after
// the map that point at one of two tied entries' objects were
// back-references to the number the iterator's order gave it.
func TestTiedEntriesReachedAfterTheMapHashCanonically(t *testing.T) {
	want, wantLeaves := Hash(untiedState()), flatText(untiedState())
	for i := range 40 {
		s := untiedState()
		if got := Hash(s); got != want {
			t.Fatalf("build %d: hash %#x, and %#x before", i, got, want)
		}
		if got := flatText(s); got != wantLeaves {
			t.Fatalf("build %d flattened another way:\n%s\n---\n%s", i, wantLeaves, got)
		}
	}
	// Which objects the later fields share is still the state.
	s := untiedState()
	s.leader = &tiePeer{"n1", 1}
	if Hash(s) == want {
		t.Fatal("a leader that is none of the keys hashes as one that is")
	}
	s = untiedState()
	s.both = []*tiePeer{s.leader, s.leader}
	if Hash(s) == want {
		t.Fatal("both keys and one key twice hash alike")
	}
}
