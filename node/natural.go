package node

import "slices"

// NaturalLess orders strings as people read them: runs of digits compare
// by their numeric value, so "n2" sorts before "n10". Traces keep node
// IDs in byte order (the header's Nodes, event records index into it);
// this order is only for what is shown: listings, JSON, the debugger.
// Equal numbers with different leading zeros ("n02", "n2") fall back to
// byte order so that the order is total and stable.
func NaturalLess(a, b string) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if isDigit(ca) && isDigit(cb) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			// Compare the runs without leading zeros: longer is larger,
			// then digit by digit (no overflow on long runs).
			na, nb := trimZeros(a[si:i]), trimZeros(b[sj:j])
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			continue
		}
		if ca != cb {
			return ca < cb
		}
		i++
		j++
	}
	if len(a)-i != len(b)-j {
		return len(a)-i < len(b)-j
	}
	return a < b
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func trimZeros(s string) string {
	for len(s) > 1 && s[0] == '0' {
		s = s[1:]
	}
	return s
}

// SortNatural sorts IDs in natural order (NaturalLess), in place.
func SortNatural(ids []ID) {
	slices.SortFunc(ids, func(a, b ID) int { return CompareNatural(string(a), string(b)) })
}

// SortNaturalStrings sorts strings in natural order, in place.
func SortNaturalStrings(ss []string) { slices.SortFunc(ss, CompareNatural) }

// CompareNatural is NaturalLess as a comparison (-1, 0, +1), for
// slices.SortFunc.
func CompareNatural(a, b string) int {
	switch {
	case NaturalLess(a, b):
		return -1
	case NaturalLess(b, a):
		return 1
	}
	return 0
}
