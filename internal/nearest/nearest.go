// Package nearest finds the names closest to one a user typed, for the
// "nearest: ..." and "did you mean" hints of error messages.
package nearest

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
)

// Names returns up to k of names closest to want, ignoring case: those
// containing it (or most of it) first, the nearer in length first,
// then by edit distance; ties in natural order (n2 before n10). So both a
// typo and a partial path find what was meant.
func Names(names []string, want string, k int) []string {
	type scored struct {
		name string
		d    int
	}
	lw := strings.ToLower(want)
	all := make([]scored, 0, len(names))
	for _, n := range names {
		ln := strings.ToLower(n)
		d := Distance(ln, lw)
		// A name inside what was typed counts only if it is most of it:
		// a one-letter field is not what "Agent.Promissed" meant.
		if lw != "" && (strings.Contains(ln, lw) || 2*len(ln) >= len(lw) && strings.Contains(lw, ln)) {
			d = -1000 + abs(len(ln)-len(lw))
		}
		all = append(all, scored{n, d})
	}
	slices.SortStableFunc(all, func(a, b scored) int {
		if c := cmp.Compare(a.d, b.d); c != 0 {
			return c
		}
		switch {
		case node.NaturalLess(a.name, b.name):
			return -1
		case node.NaturalLess(b.name, a.name):
			return 1
		}
		return 0
	})
	out := make([]string, 0, min(k, len(all)))
	for _, s := range all[:min(k, len(all))] {
		out = append(out, s.name)
	}
	return out
}

// Typo returns the one name want is most likely a misspelling of: the
// nearest within two edits, or the only name it begins; "" if none.
func Typo(names []string, want string) string {
	best, bestD := "", 3
	var prefixed []string
	lw := strings.ToLower(want)
	for _, n := range names {
		ln := strings.ToLower(n)
		if d := Distance(ln, lw); d < bestD {
			best, bestD = n, d
		}
		if len(lw) >= 3 && strings.HasPrefix(ln, lw) {
			prefixed = append(prefixed, n)
		}
	}
	if best == "" && len(prefixed) == 1 {
		best = prefixed[0]
	}
	return best
}

// Distance is the Levenshtein distance between a and b, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// IndexHint says, for a path that asks for an index a list does not have
// (Done[999].Ver where Done holds 386 elements), which indexes it has:
// "Done has indexes 0..385". Edit distance would offer Done[99].Ver, a
// different element that merely looks alike. "" when every index the
// path asks for is there, or names hold no list it indexes.
func IndexHint(names []string, want string) string {
	for i := 0; i < len(want); i++ {
		if want[i] != '[' {
			continue
		}
		// Brackets as the flattening writes them: a quoted key may hold
		// brackets of its own.
		n := state.BracketLen(want[i:])
		if n < 0 {
			return ""
		}
		idx, err := strconv.Atoi(want[i+1 : i+n-1])
		if err != nil {
			i += n - 1
			continue
		}
		lo, hi, found, have := -1, -1, false, false
		for _, name := range names {
			rest, ok := strings.CutPrefix(name, want[:i])
			if !ok {
				continue
			}
			k := state.BracketLen(rest)
			if k < 0 {
				continue
			}
			x, err := strconv.Atoi(rest[1 : k-1])
			if err != nil {
				continue
			}
			have = true
			found = found || x == idx
			if lo < 0 || x < lo {
				lo = x
			}
			hi = max(hi, x)
		}
		switch {
		case !have:
			return ""
		case !found:
			return fmt.Sprintf("%s has indexes %d..%d", want[:i], lo, hi)
		}
		i += n - 1
	}
	return ""
}
