package predicates

import "strings"

// comparePaths orders row paths as a reader counts: a run of digits
// compares as a number, so that a map keyed by ints iterates Txs[2]
// before Txs[10] (as text, a log of 12 entries went 1, 10, 11, 12, 2, ...).
// Paths equal so (Txs[01], Txs[1]) fall back to their text.
func comparePaths(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			ei, ej := digitsEnd(a, i), digitsEnd(b, j)
			na, nb := strings.TrimLeft(a[i:ei], "0"), strings.TrimLeft(b[j:ej], "0")
			if len(na) != len(nb) {
				if len(na) < len(nb) {
					return -1
				}
				return 1
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			i, j = ei, ej
			continue
		}
		if a[i] != b[j] {
			if a[i] < b[j] {
				return -1
			}
			return 1
		}
		i++
		j++
	}
	switch {
	case len(a)-i < len(b)-j:
		return -1
	case len(a)-i > len(b)-j:
		return 1
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func digitsEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}
