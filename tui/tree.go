package tui

import (
	"strings"

	"github.com/replaycheck/replaycheck/state"
)

// segment is one step of a state path: a field name, or a bracketed index
// or map key ("[3]", `["n1"]`). end is where it ends in the path, so
// path[:end] names the subtree it opens.
type segment struct {
	name string
	end  int
}

// splitPath splits a state.Flatten path (Leader.Lasts[0].From,
// Accepts[8]["n1"], Seen[[1 2]].At) into its segments. Map keys may
// nest brackets and hold quoted dots and brackets.
func splitPath(p string) []segment {
	var out []segment
	i := 0
	for i < len(p) {
		switch p[i] {
		case '.':
			i++
		case '[':
			j := len(p)
			if n := state.BracketLen(p[i:]); n > 0 {
				j = i + n
			} else if n := strings.IndexByte(p[i:], ']'); n > 0 {
				j = i + n + 1 // unbalanced (a String method's name): to the first ]
			}
			out = append(out, segment{p[i:j], j})
			i = j
		default:
			j := i
			for j < len(p) && p[j] != '.' && p[j] != '[' {
				j++
			}
			out = append(out, segment{p[i:j], j})
			i = j
		}
	}
	return out
}

// treeRow is one row of the state tree: a subtree header or a leaf.
type treeRow struct {
	key     string // the path of the leaf, or the prefix of the subtree
	depth   int
	label   string
	value   string // leaves only
	leaf    bool
	changed bool // the leaf changed at the cursor's step, or the subtree holds one that did
}

// buildTree turns leaves (in canonical order) into tree rows, skipping what
// lies under a collapsed subtree.
func buildTree(leaves []leafView, collapsed map[string]bool) []treeRow {
	var rows []treeRow
	var open []string // keys of the subtrees the previous leaf was in
	for _, l := range leaves {
		segs := splitPath(l.path)
		if len(segs) == 0 {
			segs = []segment{{l.path, len(l.path)}}
		}
		// Reuse the subtrees shared with the previous leaf.
		shared := 0
		for shared < len(open) && shared < len(segs)-1 && open[shared] == l.path[:segs[shared].end] {
			shared++
		}
		open = open[:shared]
		hidden := false
		for _, k := range open {
			if collapsed[k] {
				hidden = true
			}
		}
		for d := shared; d < len(segs)-1; d++ {
			key := l.path[:segs[d].end]
			open = append(open, key)
			if !hidden {
				rows = append(rows, treeRow{key: key, depth: d, label: segs[d].name})
			}
			if collapsed[key] {
				hidden = true
			}
		}
		if hidden {
			if l.changed {
				markChanged(rows, l.path)
			}
			continue
		}
		rows = append(rows, treeRow{key: l.path, depth: len(segs) - 1, label: segs[len(segs)-1].name, value: l.value, leaf: true, changed: l.changed})
		if l.changed {
			markChanged(rows, l.path)
		}
	}
	return rows
}

// markChanged flags the headers of the subtrees holding path.
func markChanged(rows []treeRow, path string) {
	for i := range rows {
		if !rows[i].leaf && isAncestor(rows[i].key, path) {
			rows[i].changed = true
		}
	}
}

// isAncestor reports whether the subtree key holds path.
func isAncestor(key, path string) bool {
	return len(path) > len(key) && strings.HasPrefix(path, key) && (path[len(key)] == '.' || path[len(key)] == '[')
}

// leafView is a leaf as the tree shows it.
type leafView struct {
	path, value string
	changed     bool
}
