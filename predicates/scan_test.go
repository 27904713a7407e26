package predicates

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/replaycheck/replaycheck/node"
)

// Recursive state types: an A reaches rows directly and through B, and a
// B reaches rows only through its A.
type (
	scanRow struct{ V int }
	scanA   struct {
		B *scanB
		T scanRow
	}
	scanB struct{ A *scanA }
	scanC struct{ N int } // reaches nothing
	scanD struct {
		C    scanC
		Self *scanD
	}
)

// TestReachesIndependentOfOrder: whichever type of a cycle is asked about
// first, every type that can hold a row says so, and types that cannot
// say not. A provisional answer cached inside the cycle used to make *A
// (and so B) unreachable when A was asked first.
func TestReachesIndependentOfOrder(t *testing.T) {
	types := map[string]reflect.Type{
		"A": reflect.TypeFor[scanA](), "*A": reflect.TypeFor[*scanA](),
		"B": reflect.TypeFor[scanB](), "*B": reflect.TypeFor[*scanB](),
		"D": reflect.TypeFor[scanD](), "*D": reflect.TypeFor[*scanD](),
	}
	want := map[string]bool{"A": true, "*A": true, "B": true, "*B": true, "D": false, "*D": false}
	for _, order := range [][]string{
		{"A", "B", "*A", "*B", "D", "*D"},
		{"B", "A", "*B", "*A", "*D", "D"},
		{"*A", "*B", "A", "B", "D", "*D"},
		{"*B", "*A", "B", "A", "*D", "D"},
	} {
		c := &Checker{tables: []*Table{{name: node.TypeName(reflect.TypeFor[scanRow]())}}}
		s := newScanner(c)
		for _, name := range order {
			if got := s.reaches(types[name]); got != want[name] {
				t.Errorf("order %v: reaches(%s) = %v, want %v", order, name, got, want[name])
			}
		}
		// Answers cached along the way must agree too.
		for name, w := range want {
			if got := s.reaches(types[name]); got != w {
				t.Errorf("order %v, asked again: reaches(%s) = %v, want %v", order, name, got, w)
			}
		}
	}
}

// A string's memory is its header only: within one event its bytes may
// be freed and another string's allocated at the same address, so a
// list's hash takes the strings' bytes too. Here the bytes change under
// an unchanged header (a string made over a byte slice stands for the
// address reused): the hash must change with them.
func TestListHashReadsStringBytes(t *testing.T) {
	type rec struct {
		V    int
		Tags [2]string
		S    string
	}
	s := newScanner(&Checker{})
	if !s.flatType(reflect.TypeFor[rec]()) {
		t.Fatal("rec is flat")
	}
	strs := s.stringsOf(reflect.TypeFor[rec]())
	if len(strs) != 3 {
		t.Fatalf("rec's strings at %v, want three offsets", strs)
	}
	b := []byte("abcd")
	list := make([]rec, 40)
	for i := range list {
		list[i] = rec{V: i, Tags: [2]string{"x", unsafe.String(&b[0], 4)}, S: unsafe.String(&b[1], 3)}
	}
	data, size := unsafe.Pointer(&list[0]), unsafe.Sizeof(list[0])
	sum := func() uint64 { return foldElems(0, data, size, strs, 0, len(list)) }
	before := sum()
	// Folding a prefix and then the rest is folding the whole: how a list
	// appended to is recognised.
	if foldElems(foldElems(0, data, size, strs, 0, 17), data, size, strs, 17, len(list)) != before {
		t.Fatal("folding in two parts differs from folding at once")
	}
	b[3] = 'z' // in both strings of every element, headers unchanged
	if sum() == before {
		t.Fatal("the hash did not change with the strings' bytes")
	}
	b[3] = 'd'
	if sum() != before {
		t.Fatal("the same content hashed differently")
	}
}
