package predicates

import (
	"reflect"
	"slices"
	"strings"
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

// A string's memory is only its header: within one event its bytes could
// be freed and another string's allocated at the same address, leaving a
// list's memory as it was. The memo holds the strings it hashed, so that
// their bytes stay where they are, and takes up those of appended
// elements.
func TestListMemoHoldsItsStrings(t *testing.T) {
	type rec struct {
		V    int
		Tags [2]string
		S    string
	}
	type holder struct{ L []rec }
	c := &Checker{tables: []*Table{{name: node.TypeName(reflect.TypeFor[rec]())}}}
	s := newScanner(c)
	if got := s.stringsOf(reflect.TypeFor[rec]()); len(got) != 3 {
		t.Fatalf("rec's strings at %v, want three offsets", got)
	}
	h := &holder{}
	for i := range 40 {
		h.L = append(h.L, rec{V: i, Tags: [2]string{"x", strings.Repeat("t", i+1)}, S: strings.Repeat("s", i+1)})
	}
	h.L = slices.Clip(h.L)
	check := func(n int) {
		t.Helper()
		v := reflect.ValueOf(h).Elem().Field(0)
		s.listToWalk(v, "L")
		m := s.lists[listKey{"", "L"}]
		if m == nil || len(m.sums) != n || len(m.held) != 3*n {
			t.Fatalf("memo %+v, want %d elements and their %d strings held", m, n, 3*n)
		}
		for i, r := range h.L {
			for k, str := range []string{r.Tags[0], r.Tags[1], r.S} {
				if unsafe.StringData(m.held[3*i+k]) != unsafe.StringData(str) {
					t.Fatalf("element %d's string %d is not held", i, k)
				}
			}
		}
	}
	check(40)
	h.L = append(h.L[:40:cap(h.L)], rec{V: 40, S: "new"}) // moved: walked whole
	check(41)
	h.L = append(h.L, rec{V: 41, S: "appended"}) // in place when there is room
	check(42)
	h.L[3].S = "rewritten" // a changed element: all held again
	check(42)
}
