package state

import (
	"fmt"
	"strconv"
	"strings"
)

// Change is one difference between two flattened states.
type Change struct {
	Path string
	Old  string // "" when added; what lay below, when the path was no leaf (Composite)
	New  string // "" when removed; what lies below, when the path is no leaf
}

// Diff lists what changed from a to b, in path order of a with b's
// additions merged in where they appear. A nil or empty container that
// filled up (or emptied) shows what lies below it instead of nothing
// (Composite).
func Diff(a, b []Leaf) []Change {
	old := make(map[string]string, len(a))
	for _, l := range a {
		old[l.Path] = l.Value
	}
	seen := make(map[string]bool, len(b))
	var out []Change
	var filled, emptied map[string]bool // container leaves that went, or came
	for _, l := range b {
		seen[l.Path] = true
		if o, ok := old[l.Path]; !ok {
			out = append(out, Change{Path: l.Path, New: l.Value})
			if isContainerLeaf(l.Value) {
				emptied = setAdd(emptied, l.Path)
			}
		} else if o != l.Value {
			out = append(out, Change{Path: l.Path, Old: o, New: l.Value})
		}
	}
	for _, l := range a {
		if !seen[l.Path] {
			out = append(out, Change{Path: l.Path, Old: l.Value})
			if isContainerLeaf(l.Value) {
				filled = setAdd(filled, l.Path)
			}
		}
	}
	if filled == nil && emptied == nil {
		return out
	}
	now, was := Composites(b, filled), Composites(a, emptied)
	for i, c := range out {
		switch {
		case c.New == "" && now[c.Path] != "":
			out[i].New = now[c.Path]
		case c.Old == "" && was[c.Path] != "":
			out[i].Old = was[c.Path]
		}
	}
	return out
}

// isContainerLeaf tells the leaves Flatten writes for a nil reference or
// an empty container: only such a path can have leaves below it at
// another step.
func isContainerLeaf(v string) bool { return v == "nil" || v == "[]" || v == "{}" }

func setAdd(s map[string]bool, k string) map[string]bool {
	if s == nil {
		s = map[string]bool{}
	}
	s[k] = true
	return s
}

// Composite describes the value at path when it is no leaf of leaves but
// has leaves below it: a nil slice, map or pointer (a "nil" leaf) that
// became non-empty is no longer a leaf, which is not its removal. The
// description counts what lies directly below: "[2 elements]" for a
// slice, array or map, "{3 fields}" for a struct. ok is false when
// nothing lies below path (it is gone, or a leaf).
func Composite(leaves []Leaf, path string) (desc string, ok bool) {
	desc = Composites(leaves, map[string]bool{path: true})[path]
	return desc, desc != ""
}

// Composites describes each of paths that has leaves below it (see
// Composite), in one pass over the leaves.
func Composites(leaves []Leaf, paths map[string]bool) map[string]string {
	if len(paths) == 0 {
		return nil
	}
	type below struct{ elems, fields map[string]bool }
	found := map[string]*below{}
	for _, l := range leaves {
		p := l.Path
		// Each prefix of the path that ends where a key or field starts
		// is an ancestor; a quoted key is skipped whole.
		for i := 0; i < len(p); i++ {
			switch p[i] {
			case '"':
				if q, err := strconv.QuotedPrefix(p[i:]); err == nil {
					i += len(q) - 1
				}
				continue
			case '[', '.':
			default:
				continue
			}
			if !paths[p[:i]] {
				continue
			}
			b := found[p[:i]]
			if b == nil {
				b = &below{map[string]bool{}, map[string]bool{}}
				found[p[:i]] = b
			}
			if p[i] == '[' {
				if key, ok := bracketed(p[i:]); ok {
					b.elems[key] = true
				}
			} else {
				name := p[i+1:]
				if j := strings.IndexAny(name, ".["); j >= 0 {
					name = name[:j]
				}
				if name != TypePath { // which type, not a field of it
					b.fields[name] = true
				}
			}
		}
	}
	out := make(map[string]string, len(found))
	for path, b := range found {
		switch {
		case len(b.elems) > 0:
			out[path] = fmt.Sprintf("[%d %s]", len(b.elems), plural(len(b.elems), "element"))
		case len(b.fields) > 0:
			out[path] = fmt.Sprintf("{%d %s}", len(b.fields), plural(len(b.fields), "field"))
		}
	}
	return out
}

// bracketed is the key of a path suffix that starts with "[KEY]".
func bracketed(s string) (string, bool) {
	n := BracketLen(s)
	if n < 0 {
		return "", false
	}
	return s[1 : n-1], true
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
