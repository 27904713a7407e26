package state

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

type inner struct {
	N int
	s string
}

type tnode struct {
	Name    string
	count   int
	M       map[string]int
	K       map[inner]bool
	P       *inner
	Q       *inner
	Self    *tnode
	When    time.Time
	private time.Time
	Hidden  int `replay:"-"`
	Any     any
	F       func()
}

func build(keysReversed bool) *tnode {
	n := &tnode{Name: "a", count: 3, M: map[string]int{}, K: map[inner]bool{}}
	keys := []string{"x", "y", "z", "w", "v"}
	if keysReversed {
		for i := len(keys) - 1; i >= 0; i-- {
			n.M[keys[i]] = i
			n.K[inner{i, keys[i]}] = i%2 == 0
		}
	} else {
		for i, k := range keys {
			n.M[k] = i
			n.K[inner{i, k}] = i%2 == 0
		}
	}
	n.P = &inner{1, "p"}
	n.Q = n.P
	n.Self = n
	n.When = time.Unix(100, 5)
	n.private = time.Unix(7, 0)
	n.Any = []any{1, "two"}
	return n
}

func TestHashCanonical(t *testing.T) {
	a, b := build(false), build(true)
	if Hash(a) != Hash(b) {
		t.Fatal("equal states built in different orders hash differently")
	}
	// Time with a monotonic reading and another location is the same instant.
	b.When = time.Unix(100, 5).In(time.FixedZone("X", 3600))
	b.private = time.Unix(7, 0).Add(0)
	if Hash(a) != Hash(b) {
		t.Fatal("same instants in different representations hash differently")
	}
	// Hidden fields do not count.
	b.Hidden = 99
	if Hash(a) != Hash(b) {
		t.Fatal("a field tagged replay:\"-\" changed the hash")
	}
}

func TestHashSensitive(t *testing.T) {
	base := Hash(build(false))
	mutations := map[string]func(n *tnode){
		"exported int in map": func(n *tnode) { n.M["x"] = 42 },
		"unexported int":      func(n *tnode) { n.count++ },
		"struct key map":      func(n *tnode) { n.K[inner{9, "q"}] = true },
		"pointer target":      func(n *tnode) { n.P.N = 2 },
		"aliasing broken":     func(n *tnode) { n.Q = &inner{1, "p"} },
		"unexported time":     func(n *tnode) { n.private = time.Unix(8, 0) },
		"interface content":   func(n *tnode) { n.Any = []any{1, "three"} },
		"interface type":      func(n *tnode) { n.Any = []int{1} },
		"func nil-ness":       func(n *tnode) { n.F = func() {} },
		"nil vs empty map":    func(n *tnode) { n.M = nil },
	}
	for name, mutate := range mutations {
		n := build(false)
		mutate(n)
		if Hash(n) == base {
			t.Errorf("%s: hash did not change", name)
		}
	}
}

func TestHashTimeInternals(t *testing.T) {
	// The hash reads time.Time field by field; check the decoding against
	// the time package for wall-clock times with and without monotonic
	// readings.
	type holder struct{ t time.Time }
	for _, tm := range []time.Time{time.Now(), time.Unix(0, 0), time.Unix(1e10, 999), time.Date(1850, 1, 1, 0, 0, 0, 1, time.UTC), time.Now().Round(0)} {
		want := Hash(&holder{tm.Round(0).UTC()})
		if got := Hash(&holder{tm}); got != want {
			t.Errorf("%v: hash %x, want %x (same instant without monotonic reading)", tm, got, want)
		}
	}
}

type selfRef struct {
	V    int
	Next *selfRef
	Kids []selfRef
	M    map[string]*selfRef
}

func TestHashRecursiveTypesConcurrently(t *testing.T) {
	build := func(n int) *selfRef {
		root := &selfRef{V: n, M: map[string]*selfRef{}}
		root.Next = &selfRef{V: n + 1, Next: root}
		root.Kids = []selfRef{{V: 7}, {V: 8, M: map[string]*selfRef{"up": root}}}
		root.M["self"] = root
		return root
	}
	want := Hash(build(1))
	done := make(chan uint64)
	for range 8 {
		go func() { done <- Hash(build(1)) }()
	}
	for range 8 {
		if got := <-done; got != want {
			t.Fatal("concurrent hashes of equal recursive values differ")
		}
	}
	if Hash(build(2)) == want {
		t.Fatal("different recursive values hash equal")
	}
}

// TestRefFreeMapsHashCanonically: maps whose entries hold no references
// take the order-independent path; equal maps built in different orders
// and of different histories (deletions, growth) hash equal, and any
// change of a key or value changes the hash.
func TestRefFreeMapsHashCanonically(t *testing.T) {
	type entry struct {
		A int
		B string
		C [2]float64
	}
	type holder struct {
		M map[string]entry
		N map[int64][]byte
	}
	build := func(order []int, extra bool) *holder {
		h := &holder{M: map[string]entry{}, N: map[int64][]byte{}}
		if extra {
			for i := range 500 { // grow, then delete: a different internal layout
				h.M[fmt.Sprint("tmp", i)] = entry{}
			}
			for i := range 500 {
				delete(h.M, fmt.Sprint("tmp", i))
			}
		}
		for _, i := range order {
			h.M[fmt.Sprint("k", i)] = entry{A: i, B: fmt.Sprint("v", i), C: [2]float64{float64(i), 0.5}}
			h.N[int64(i)] = []byte{byte(i)}
		}
		return h
	}
	a := build([]int{1, 2, 3, 4, 5, 6, 7, 8, 9}, false)
	b := build([]int{9, 8, 7, 6, 5, 4, 3, 2, 1}, true)
	if Hash(a) != Hash(b) {
		t.Fatal("equal maps built differently hash differently")
	}
	b.M["k3"] = entry{A: 3, B: "v3", C: [2]float64{3, 0.25}}
	if Hash(a) == Hash(b) {
		t.Fatal("a changed value did not change the hash")
	}
	c := build([]int{1, 2, 3, 4, 5, 6, 7, 8, 9}, false)
	c.N[10] = c.N[9]
	delete(c.N, 9)
	if Hash(a) == Hash(c) {
		t.Fatal("a moved value (other key) did not change the hash")
	}
}

// A pooled hasher that hashed a state with many references (its map of
// visited ones then dropped rather than cleared) hashes a small value as
// a fresh one does, back-references included.
func TestHashAfterABigStateIsTheSame(t *testing.T) {
	type cell struct{ M map[string]int }
	shared := &cell{M: map[string]int{"a": 1}}
	small := []*cell{shared, shared, {M: map[string]int{"b": 2}}}
	want := HashValue(reflect.ValueOf(small))
	big := make([]*cell, 1000)
	for i := range big {
		big[i] = &cell{M: map[string]int{"k": i}}
	}
	for range 3 {
		HashValue(reflect.ValueOf(big))
		if got := HashValue(reflect.ValueOf(small)); got != want {
			t.Fatalf("after a big state: %x, fresh: %x", got, want)
		}
	}
	// A big map of visited references is kept while hashes fill it (the
	// same big state again), and dropped after one that used little of
	// it, rather than cleared at its full capacity by every small hash.
	h := newHasher()
	h.value(reflect.ValueOf(big), 0)
	h.reset()
	if h.seen == nil {
		t.Fatal("the map of a big state dropped after hashing it")
	}
	h.value(reflect.ValueOf(small), 0)
	h.reset()
	if h.seen != nil {
		t.Fatalf("a map grown to %d references kept after a hash of %d", len(big), 2)
	}
}

// A handler's maps behind unexported fields hash as exported ones do:
// every kind of map (of scalars, of reference-free entries, and of
// entries holding references) once made hashing panic there.
func TestUnexportedMapsHash(t *testing.T) {
	type key struct{ a, b int8 }
	type hidden struct {
		scalars map[string]int
		small   map[int8]string
		structs map[key]string
		refs    map[string]*inner
		nested  map[int64]map[string]string
	}
	build := func(reversed bool) *hidden {
		h := &hidden{scalars: map[string]int{}, small: map[int8]string{}, structs: map[key]string{},
			refs: map[string]*inner{}, nested: map[int64]map[string]string{}}
		for j := range 6 {
			i := j
			if reversed {
				i = 5 - j
			}
			h.scalars[fmt.Sprint("s", i)] = i
			h.small[int8(i)] = fmt.Sprint(i)
			h.structs[key{int8(i), 1}] = fmt.Sprint(i)
			h.refs[fmt.Sprint("r", i)] = &inner{N: i}
			h.nested[int64(i)] = map[string]string{fmt.Sprint("n", i): "v"}
		}
		return h
	}
	a, b := build(false), build(true)
	if Hash(a) != Hash(b) {
		t.Fatal("equal unexported maps built in another order hash differently")
	}
	for name, change := range map[string]func(*hidden){
		"scalars": func(h *hidden) { h.scalars["s1"] = 7 },
		"small":   func(h *hidden) { h.small[1] = "x" },
		"structs": func(h *hidden) { h.structs[key{1, 1}] = "x" },
		"refs":    func(h *hidden) { h.refs["r1"].N = 7 },
		"nested":  func(h *hidden) { h.nested[1]["n1"] = "x" },
	} {
		c := build(false)
		change(c)
		if Hash(a) == Hash(c) {
			t.Errorf("a change in %s did not change the hash", name)
		}
	}
}
