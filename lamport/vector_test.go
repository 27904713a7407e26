package lamport

import (
	"math/rand/v2"
	"testing"
)

// TestVectorsSimple checks the three rules on a hand-made run:
// n0: a(0) send→ c(2) on n1; n1: b(1) local; n2: d(3) local.
func TestVectorsSimple(t *testing.T) {
	vs := NewVectors(3, 4)
	a := vs.Add(0, -1)
	b := vs.Add(1, -1)
	c := vs.Add(1, a) // receives a's message
	d := vs.Add(2, -1)
	if got := vs.At(a).Compare(vs.At(c)); got != Before {
		t.Errorf("send a vs receive c: %v, want before", got)
	}
	if got := vs.At(b).Compare(vs.At(c)); got != Before {
		t.Errorf("b then c on one node: %v, want before", got)
	}
	if got := vs.At(a).Compare(vs.At(b)); got != Concurrent {
		t.Errorf("a and b: %v, want concurrent", got)
	}
	if got := vs.At(d).Compare(vs.At(c)); got != Concurrent {
		t.Errorf("d and c: %v, want concurrent", got)
	}
	if got := vs.At(c).Compare(vs.At(a)); got != After {
		t.Errorf("c vs a: %v, want after", got)
	}
	want := Vector{1, 2, 0}
	if vs.At(c).Compare(want) != Equal {
		t.Errorf("clock of c %v, want %v", vs.At(c), want)
	}
}

// TestVectorsMatchHappensBefore builds random message-passing runs and
// checks that e happened before f (by reachability over program order
// and send→receive edges) exactly when e's clock is below f's.
func TestVectorsMatchHappensBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for run := range 200 {
		procs := 1 + r.IntN(5)
		n := 1 + r.IntN(40)
		proc := make([]int, n)
		cause := make([]int, n)
		vs := NewVectors(procs, n)
		for i := range n {
			proc[i] = r.IntN(procs)
			cause[i] = -1
			if i > 0 && r.IntN(2) == 0 {
				cause[i] = r.IntN(i)
			}
			vs.Add(proc[i], cause[i])
		}
		// hb[i][j]: i happened before j (i != j), by transitive closure
		// over edges to later events.
		hb := make([][]bool, n)
		for j := range n {
			hb[j] = make([]bool, n)
			for i := range j {
				direct := proc[i] == proc[j] || cause[j] == i
				if direct {
					hb[j][i] = true
				}
			}
			for i := range j {
				if hb[j][i] {
					for k := range i {
						if hb[i][k] {
							hb[j][k] = true
						}
					}
				}
			}
		}
		for i := range n {
			// A process's own entry counts its events: 1, 2, 3, ...
			seen := 0
			for k := range i + 1 {
				if proc[k] == proc[i] {
					seen++
				}
			}
			if got := vs.At(i)[proc[i]]; got != uint64(seen) {
				t.Fatalf("run %d: event %d's own entry %d, want %d", run, i, got, seen)
			}
			for j := i + 1; j < n; j++ {
				got := vs.At(i).Compare(vs.At(j))
				want := Concurrent
				if hb[j][i] {
					want = Before
				}
				if got != want {
					t.Fatalf("run %d: events %d (p%d) and %d (p%d): clocks %v %v compare %v, happens-before says %v",
						run, i, proc[i], j, proc[j], vs.At(i), vs.At(j), got, want)
				}
			}
		}
	}
}
