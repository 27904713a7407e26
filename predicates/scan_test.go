package predicates

import (
	"reflect"
	"testing"

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
