package statedb

import (
	"fmt"
	"slices"

	"github.com/replaycheck/replaycheck/state"
)

// delta is what one step changed in a node's flattened state. Leaves keep
// state.Flatten's canonical order, so applying a delta must put added
// leaves where they belong: each change carries its index in the new
// state. When the fields that stayed changed their relative order (an
// interface field now holding another type), the delta carries the whole
// new state instead.
type delta struct {
	removed []string
	set     []change
	full    []state.Leaf // non-nil: the whole new state
}

// change is a leaf added or whose value changed, at index in the new state.
type change struct {
	index int
	added bool
	path  string
	value string
}

// paths lists every path the delta touched.
func (d *delta) paths() []string {
	out := slices.Clone(d.removed)
	for _, c := range d.set {
		out = append(out, c.path)
	}
	return out
}

func (d *delta) empty() bool { return d.full == nil && len(d.removed) == 0 && len(d.set) == 0 }

// diffMatched computes the delta from old to cur as diffLeaves does,
// where from says for each leaf of cur the index in old of the leaf with
// its path (-1: none; state.Flattener.Matched), so that no index of
// paths is built. used is scratch of at least len(old). ok is false
// when from cannot tell (a path it did not find in old is there after
// all, or two leaves share a path): diffLeaves then must.
func diffMatched(old, cur []state.Leaf, from []int, used []bool) (d delta, ok bool) {
	used = used[:len(old)]
	clear(used)
	last, ordered := -1, true
	for j, l := range cur {
		i := from[j]
		if i < 0 {
			d.set = append(d.set, change{index: j, added: true, path: l.Path, value: l.Value})
			continue
		}
		if used[i] {
			return delta{}, false // two leaves of one path
		}
		used[i] = true
		if i < last {
			ordered = false
		}
		last = i
		if old[i].Value != l.Value {
			d.set = append(d.set, change{index: j, path: l.Path, value: l.Value})
		}
	}
	for i, u := range used {
		if !u {
			d.removed = append(d.removed, old[i].Path)
		}
	}
	if len(d.removed) > 0 {
		// A delta removes by path: a removed path must be no path of
		// cur (a leaf that moved further than the flattening looked).
		// Most of cur's paths are ruled out by their lengths alone, without
		// hashing them (a big state's removals paid a map lookup per leaf).
		gone := make(map[string]bool, len(d.removed))
		var lengths []uint64 // a bit per length of a removed path
		for _, p := range d.removed {
			gone[p] = true
			if w := len(p) / 64; w >= len(lengths) {
				lengths = append(lengths, make([]uint64, w+1-len(lengths))...)
			}
			lengths[len(p)/64] |= 1 << (len(p) % 64)
		}
		for _, l := range cur {
			n := len(l.Path)
			if n/64 < len(lengths) && lengths[n/64]&(1<<(n%64)) != 0 && gone[l.Path] {
				return delta{}, false
			}
		}
	}
	if !ordered {
		d.full = slices.Clone(cur)
	}
	return d, true
}

// indexPaths indexes leaves by path.
func indexPaths(leaves []state.Leaf) map[string]int {
	idx := make(map[string]int, len(leaves))
	for j, l := range leaves {
		idx[l.Path] = j
	}
	return idx
}

// diffLeaves computes the delta from old to cur by their paths: what
// diffMatched cannot tell. When the fields that stayed changed their
// relative order, or two leaves of cur share a path, the delta carries
// the whole new state.
func diffLeaves(old, cur []state.Leaf) delta {
	var d delta
	oldIdx, idx := indexPaths(old), indexPaths(cur)
	for _, l := range old {
		if _, ok := idx[l.Path]; !ok {
			d.removed = append(d.removed, l.Path)
		}
	}
	last, ordered := -1, len(idx) == len(cur)
	for j, l := range cur {
		i, ok := oldIdx[l.Path]
		switch {
		case !ok:
			d.set = append(d.set, change{index: j, added: true, path: l.Path, value: l.Value})
		case old[i].Value != l.Value:
			d.set = append(d.set, change{index: j, path: l.Path, value: l.Value})
		}
		if ok {
			if i < last {
				ordered = false
			}
			last = i
		}
	}
	if !ordered {
		d.full = slices.Clone(cur)
	}
	return d
}

// apply changes leaves (which it may modify) by d and returns the result.
func (d *delta) apply(leaves []state.Leaf) ([]state.Leaf, error) {
	if d.full != nil {
		return slices.Clone(d.full), nil
	}
	if len(d.removed) > 0 {
		gone := make(map[string]bool, len(d.removed))
		for _, p := range d.removed {
			gone[p] = true
		}
		leaves = slices.DeleteFunc(leaves, func(l state.Leaf) bool { return gone[l.Path] })
	}
	for _, c := range d.set {
		switch {
		case c.added && c.index <= len(leaves):
			leaves = slices.Insert(leaves, c.index, state.Leaf{Path: c.path, Value: c.value})
		case !c.added && c.index < len(leaves) && leaves[c.index].Path == c.path:
			leaves[c.index].Value = c.value
		default:
			return nil, fmt.Errorf("statedb: delta does not fit the state (%s at %d of %d)", c.path, c.index, len(leaves))
		}
	}
	return leaves, nil
}

func (d *delta) encode() []byte {
	var e encoder
	full := uint64(0)
	if d.full != nil {
		full = 1
	}
	e.uvarint(full)
	e.uvarint(uint64(len(d.removed)))
	for _, p := range d.removed {
		e.str(p)
	}
	e.uvarint(uint64(len(d.set)))
	for _, c := range d.set {
		x := uint64(c.index) << 1
		if c.added {
			x |= 1
		}
		e.uvarint(x)
		e.str(c.path)
		e.str(c.value)
	}
	if d.full != nil {
		e.b = append(e.b, encodeLeaves(d.full)...)
	}
	return e.b
}

func decodeDelta(b []byte) (delta, error) {
	var d delta
	dec := decoder{b: b}
	full := dec.uvarint()
	n := dec.uvarint()
	if n > uint64(len(b)) {
		return d, errCorrupt
	}
	for range n {
		d.removed = append(d.removed, dec.str())
	}
	n = dec.uvarint()
	if n > uint64(len(b)) {
		return d, errCorrupt
	}
	for range n {
		x := dec.uvarint()
		p := dec.str()
		v := dec.str()
		d.set = append(d.set, change{index: int(x >> 1), added: x&1 == 1, path: p, value: v})
	}
	if dec.err != nil {
		return d, fmt.Errorf("decode delta: %w", dec.err)
	}
	if full == 1 {
		leaves, err := decodeLeaves(dec.b)
		if err != nil {
			return d, err
		}
		d.full = leaves
	}
	return d, nil
}
