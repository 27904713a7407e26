package tui

import (
	"slices"
	"testing"
)

// Keys of arrays and structs nest brackets, and strings in keys may hold
// any: a path splits where its key closes, not at its first "]".
func TestSplitPathAtWholeKeys(t *testing.T) {
	for path, want := range map[string][]string{
		`Log[3].Term`:                  {"Log", "[3]", "Term"},
		`Votes["n1"]`:                  {"Votes", `["n1"]`},
		`Votes["a].b"].At`:             {"Votes", `["a].b"]`, "At"},
		`Pairs[[1 2]].Seen`:            {"Pairs", "[[1 2]]", "Seen"},
		`Peers[{Host:"x]" Port:1}].Up`: {"Peers", `[{Host:"x]" Port:1}]`, "Up"},
		`M[3 (odd[)].X`:                {"M", "[3 (odd[)]", "X"},
	} {
		var got []string
		for _, s := range splitPath(path) {
			got = append(got, s.name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("splitPath(%q) = %q, want %q", path, got, want)
		}
	}
}
