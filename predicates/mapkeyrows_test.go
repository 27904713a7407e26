package predicates_test

import (
	"slices"
	"testing"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
)

type keyedPeer struct{ Name string }

type keyedProgress struct{ Match int }

// byPeer keeps its rows in a map keyed by pointers, two of them to equal
// peers.
type byPeer struct {
	progress map[*keyedPeer]*keyedProgress
}

func (b *byPeer) Init(node.Env) {
	b.progress = map[*keyedPeer]*keyedProgress{{"n1"}: {1}, {"n1"}: {2}, {"n2"}: {3}}
}
func (*byPeer) Receive(node.Env, node.ID, node.Message) {}
func (*byPeer) Timer(node.Env, node.Timer)              {}

// TestRowsUnderMapKeysThatPrintAlikeAreRows: a row's path names it, and
// the paths of a map's entries whose keys printed alike (every pointer
// key read as its type's name) were one: the three rows under a map
// keyed by pointers were one row.
func TestRowsUnderMapKeysThatPrintAlikeAreRows(t *testing.T) {
	holdsOnOneNode(t, "bypeer", func() node.Handler { return &byPeer{} }, `P = table("predicates_test.keyedProgress")
safety("ThreeRows", lambda: len(P) == 3 and sorted([p.Match for p in P]) == [1, 2, 3])
`)
}

type slotEntry struct{ Slot int }

// bySlot keeps its rows in a map keyed by ints, as a log or a table of
// transactions does.
type bySlot struct{ slots map[int]*slotEntry }

func (b *bySlot) Init(node.Env) {
	b.slots = map[int]*slotEntry{}
	for i := range 12 {
		b.slots[i+1] = &slotEntry{i + 1}
	}
}
func (*bySlot) Receive(node.Env, node.ID, node.Message) {}
func (*bySlot) Timer(node.Env, node.Timer)              {}

// TestRowsUnderIntKeysIterateInNumberOrder: the rows of a map keyed by
// ints iterated as their paths sort as text, 1, 10, 11, 12, 2, ...: a
// derived dict over them, printed in an aux, read so, and the first
// failing row was slots[10], not slots[2].
func TestRowsUnderIntKeysIterateInNumberOrder(t *testing.T) {
	holdsOnOneNode(t, "byslot", func() node.Handler { return &bySlot{} }, `S = table("predicates_test.slotEntry")
want = list(range(1, 13))
safety("InOrder", lambda: [s.Slot for s in S] == want)
safety("RowsInOrder", lambda: [s.Slot for s in S.rows("n1")] == want)
`)
}

// comparePaths is a total order: numbers by value, then text.
func TestComparePathsOrder(t *testing.T) {
	paths := []string{"M[10]", "M[2]", "M[1].X", "M[1]", "M[01]", "M[-3]", "M[\"a10\"]", "M[\"a9\"]", "L[3]", "M[9][10]", "M[9][9]"}
	slices.SortFunc(paths, predicates.ComparePaths)
	want := []string{"L[3]", "M[\"a9\"]", "M[\"a10\"]", "M[-3]", "M[01]", "M[1]", "M[1].X", "M[2]", "M[9][9]", "M[9][10]", "M[10]"}
	if !slices.Equal(paths, want) {
		t.Fatalf("sorted %q\nwant   %q", paths, want)
	}
}

// Rows whose keys tie in an ordered index come in the tables' order,
// numbers in their paths by value (they came in text order, Slot[10]
// before Slot[2], a review's find).
func TestOrderedTiesInNumberOrder(t *testing.T) {
	holdsOnOneNode(t, "byslot", func() node.Handler { return &bySlot{} }, `S = table("predicates_test.slotEntry")
O = ordered("all", S, by = lambda s: 0)
want = list(range(1, 13))
safety("TiesInOrder", lambda: [s.Slot for s in O] == want)
`)
}
