package state

import (
	"slices"
	"testing"
)

type filling struct {
	Commits []struct {
		Version int
		Value   string
	}
	Votes map[string]int
	Boss  *struct{ ID, Term int }
}

// A nil slice, map or pointer that fills up is no longer a leaf of the
// flattened state: the diff says what it holds now instead of calling it
// removed, and the other way round when it empties.
func TestDiffOfContainersThatFillUp(t *testing.T) {
	var empty filling
	full := filling{Votes: map[string]int{"n1": 1, `a]"b`: 2}, Boss: &struct{ ID, Term int }{3, 4}}
	full.Commits = append(full.Commits, struct {
		Version int
		Value   string
	}{1, "w1"})
	a, b := Flatten(&empty), Flatten(&full)
	changed := func(cs []Change) map[string][2]string {
		m := map[string][2]string{}
		for _, c := range cs {
			m[c.Path] = [2]string{c.Old, c.New}
		}
		return m
	}
	filled := changed(Diff(a, b))
	for path, want := range map[string][2]string{
		"Commits":          {"nil", "[1 element]"},
		"Votes":            {"nil", "[2 elements]"},
		"Boss":             {"nil", "{2 fields}"},
		"Commits[0].Value": {"", `"w1"`},
	} {
		if got := filled[path]; got != want {
			t.Errorf("filling up: %s changed %q, want %q", path, got, want)
		}
	}
	emptied := changed(Diff(b, a))
	if got, want := emptied["Commits"], [2]string{"[1 element]", "nil"}; got != want {
		t.Errorf("emptying: Commits changed %q, want %q", got, want)
	}
	if got := emptied["Commits[0].Version"]; got != [2]string{"1", ""} {
		t.Errorf("emptying: an element's field changed %q, want it removed", got)
	}
	if _, ok := Composite(b, "Commits[0].Value"); ok {
		t.Error("a leaf is described as a composite")
	}
	if _, ok := Composite(b, "Gone"); ok {
		t.Error("a path with nothing below it is described as a composite")
	}
	if !slices.Equal(Diff(a, a), nil) {
		t.Error("a state differs from itself")
	}
}

// Maps keyed by a struct or an array name each entry by its key's
// content: the type's name gave every entry the same path, so the state,
// history and diffs showed one path twice (and predicates one row for
// several).
func TestCompositeKeysHaveTheirOwnPaths(t *testing.T) {
	type pair struct {
		A int
		B string
	}
	v := struct {
		M map[pair]int
		K map[[2]int]bool
	}{M: map[pair]int{{1, "x"}: 10, {2, "y]"}: 20}, K: map[[2]int]bool{{1, 2}: true, {3, 4}: false}}
	seen := map[string]bool{}
	for _, l := range Flatten(&v) {
		if seen[l.Path] {
			t.Fatalf("two leaves at %s", l.Path)
		}
		seen[l.Path] = true
	}
	for _, p := range []string{`M[{A:1 B:"x"}]`, `M[{A:2 B:"y]"}]`, `K[[1 2]]`, `K[[3 4]]`} {
		if !seen[p] {
			t.Errorf("no leaf at %s: %v", p, seen)
		}
	}
}

// A container's summary counts its entries by their whole keys: a struct
// key whose string holds "]" was cut there, and two such keys were
// counted as one.
func TestCompositeCountsKeysHoldingBrackets(t *testing.T) {
	type addr struct{ Host string }
	st := struct {
		Seen  map[addr]int
		Pairs map[[2]int]bool
	}{
		Seen:  map[addr]int{{"x]1"}: 1, {"x]2"}: 2},
		Pairs: map[[2]int]bool{{1, 2}: true, {1, 3}: true, {2, 2}: false},
	}
	leaves := Flatten(&st)
	for path, want := range map[string]string{"Seen": "[2 elements]", "Pairs": "[3 elements]"} {
		if got, _ := Composite(leaves, path); got != want {
			t.Errorf("%s is described as %q, want %q (leaves %v)", path, got, want, leaves)
		}
	}
}

func TestBracketLen(t *testing.T) {
	for s, want := range map[string]int{
		`[3].X`:             3,
		`["a]b"].X`:         7,
		`[[1 2]].X`:         7,
		`[{Host:"x]"}]`:     13,
		`[{A:[1 2] B:"["}]`: 17,
		`[3`:                -1,
		`X[3]`:              -1,
		`[say "hi]`:         9,
	} {
		if got := BracketLen(s); got != want {
			t.Errorf("BracketLen(%q) = %d, want %d", s, got, want)
		}
	}
}
