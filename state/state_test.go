package state

import (
	"os"
	"reflect"
	"testing"
	"time"
)

type shared struct{ N int }

type holder struct {
	A, B   *shared
	M      map[string][]int
	ring   *ringNode
	When   time.Time
	File   *os.File
	Skip   int `replay:"-"`
	inner  struct{ x int }
	Bytes  []byte
	Parent map[int]*shared
}

type ringNode struct {
	V    int
	Next *ringNode
}

func sample() *holder {
	s := &shared{1}
	r1 := &ringNode{V: 1}
	r2 := &ringNode{V: 2, Next: r1}
	r1.Next = r2
	return &holder{A: s, B: s, M: map[string][]int{"b": {2}, "a": {1, 1}}, ring: r1,
		When: time.Unix(5, 0), File: os.Stderr, Bytes: []byte{1, 2}, Parent: map[int]*shared{3: s}}
}

func TestClonePreservesAliasingAndCycles(t *testing.T) {
	h := sample()
	c := Clone(h)
	if c == h || c.A == h.A {
		t.Fatal("clone shares the original's pointers")
	}
	if c.A != c.B || c.Parent[3] != c.A {
		t.Fatal("aliasing lost: fields that pointed at one object point at two copies")
	}
	if c.ring.Next.Next != c.ring {
		t.Fatal("cycle not preserved")
	}
	if c.File != os.Stderr {
		t.Fatal("an opaque *os.File was copied instead of shared")
	}
	if Hash(c) != Hash(h) {
		t.Fatal("clone hashes differently from the original")
	}
	c.A.N = 9
	c.M["a"][0] = 7
	if h.A.N != 1 || h.M["a"][0] != 1 {
		t.Fatal("mutating the clone changed the original")
	}
}

func TestFlattenAndDiff(t *testing.T) {
	h := sample()
	leaves := Flatten(h)
	paths := map[string]string{}
	var order []string
	for _, l := range leaves {
		paths[l.Path] = l.Value
		order = append(order, l.Path)
	}
	want := map[string]string{
		"A.N":            "1",
		"B":              "(same as A)",
		`M["a"][1]`:      "1",
		`M["b"][0]`:      "2",
		"ring.V":         "1",
		"ring.Next.Next": "(same as ring)",
		"When":           "1970-01-01T00:00:05Z",
		"File":           "(opaque *os.File)",
		"inner.x":        "0",
		"Bytes":          "0x0102",
		"Parent[3]":      "(same as A)",
	}
	for p, v := range want {
		if paths[p] != v {
			t.Errorf("%s = %q, want %q", p, paths[p], v)
		}
	}
	if _, ok := paths["Skip"]; ok {
		t.Error("a replay:\"-\" field was flattened")
	}
	if !reflect.DeepEqual(order[:2], []string{"A.N", "B"}) {
		t.Errorf("not in declaration order: %v", order[:2])
	}

	h2 := sample()
	h2.M["c"] = []int{3}
	delete(h2.M, "b")
	h2.A.N = 4
	changes := Diff(leaves, Flatten(h2))
	got := map[string]Change{}
	for _, c := range changes {
		got[c.Path] = c
	}
	if c := got["A.N"]; c.Old != "1" || c.New != "4" {
		t.Errorf("A.N change: %+v", c)
	}
	if c := got[`M["c"][0]`]; c.Old != "" || c.New != "3" {
		t.Errorf("added entry: %+v", c)
	}
	if c := got[`M["b"][0]`]; c.Old != "2" || c.New != "" {
		t.Errorf("removed entry: %+v", c)
	}
	if len(changes) != 3 {
		t.Errorf("%d changes, want 3: %+v", len(changes), changes)
	}
}
