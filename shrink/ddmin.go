package shrink

// ddmin is delta debugging's minimisation (Zeller and Hildebrandt,
// "Simplifying and Isolating Failure-Inducing Input", TSE 2002), in the
// complement-only form: it splits items into n chunks and tries each
// complement; a complement that still fails replaces items and n shrinks
// by one, and when none fails n doubles, until chunks are single items.
// The result is 1-minimal with respect to test (no single item can go)
// unless stop ends it early; items is assumed to fail (test(items) is not
// called). test is told the items to keep, in their original order.
func ddmin(items []int, test func(keep []int) bool, stop func() bool) []int {
	n := 2
	for len(items) >= 2 && !stop() {
		chunks := split(items, n)
		reduced := false
		for i := range chunks {
			if stop() {
				return items
			}
			comp := complement(chunks, i)
			if test(comp) {
				items, reduced = comp, true
				n = max(n-1, 2)
				break
			}
		}
		if reduced {
			continue
		}
		if n >= len(items) {
			break
		}
		n = min(2*n, len(items))
	}
	if len(items) == 1 && !stop() && test(nil) {
		return nil
	}
	return items
}

// split cuts items into n chunks of nearly equal size, in order.
func split(items []int, n int) [][]int {
	n = min(n, len(items))
	out := make([][]int, 0, n)
	start := 0
	for i := range n {
		end := start + (len(items)-start)/(n-i)
		out = append(out, items[start:end])
		start = end
	}
	return out
}

// complement is every chunk but the i-th, concatenated.
func complement(chunks [][]int, i int) []int {
	var out []int
	for j, c := range chunks {
		if j != i {
			out = append(out, c...)
		}
	}
	return out
}
