package state

// Change is one difference between two flattened states.
type Change struct {
	Path string
	Old  string // "" when added
	New  string // "" when removed
}

// Diff lists what changed from a to b, in path order of a with b's
// additions merged in where they appear.
func Diff(a, b []Leaf) []Change {
	old := make(map[string]string, len(a))
	for _, l := range a {
		old[l.Path] = l.Value
	}
	seen := make(map[string]bool, len(b))
	var out []Change
	for _, l := range b {
		seen[l.Path] = true
		if o, ok := old[l.Path]; !ok {
			out = append(out, Change{Path: l.Path, New: l.Value})
		} else if o != l.Value {
			out = append(out, Change{Path: l.Path, Old: o, New: l.Value})
		}
	}
	for _, l := range a {
		if !seen[l.Path] {
			out = append(out, Change{Path: l.Path, Old: l.Value})
		}
	}
	return out
}
