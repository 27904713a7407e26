package tui

import "github.com/replaycheck/replaycheck/statedb"

// A filter remembers which steps it was tried on and which matched. A
// filter that matches little made every redraw read up to maxScan steps
// each way from the database: seconds per key on a long trace, and a
// background index slowed to a crawl by the redraws. Steps do not change
// once indexed, so what was looked at once is known for good.
type filterMemo struct{ seen, hit []uint64 }

func (f *filterMemo) known(i int) (seen, hit bool) {
	w, b := i/64, uint64(1)<<(i%64)
	if w >= len(f.seen) {
		return false, false
	}
	return f.seen[w]&b != 0, f.hit[w]&b != 0
}

func (f *filterMemo) note(i int, hit bool) {
	w, b := i/64, uint64(1)<<(i%64)
	for w >= len(f.seen) {
		f.seen, f.hit = append(f.seen, 0), append(f.hit, 0)
	}
	f.seen[w] |= b
	if hit {
		f.hit[w] |= b
	}
}

// scanFiltered calls fn with the steps the filter matches from step from
// toward step to (inclusive, either way) until fn returns false or
// maxScan steps were looked at, reading from the database only steps the
// filter was not tried on yet.
func (m *Model) scanFiltered(from, to int, fn func(*statedb.Step) bool) {
	n := m.db.Len()
	if from < 0 || from >= n {
		return
	}
	to = min(max(to, 0), n-1)
	f := m.filter
	if f == nil {
		m.db.Steps(from, to, fn) // every step matches: fn says when to stop
		return
	}
	dir := 1
	if to < from {
		dir = -1
	}
	within := func(i int) bool { return dir > 0 && i <= to || dir < 0 && i >= to }
	scanned := 0
	for i := from; within(i) && scanned < maxScan; {
		if seen, hit := f.memo.known(i); seen {
			scanned++
			if hit {
				s, err := m.db.Step(i)
				if err != nil || !fn(s) {
					return
				}
			}
			i += dir
			continue
		}
		// The run of steps not tried yet from i, read in one pass.
		end := i
		for k := 0; k < 4096 && within(end+dir); k++ {
			if seen, _ := f.memo.known(end + dir); seen {
				break
			}
			end += dir
		}
		next, stop := i, false
		m.db.Steps(i, end, func(s *statedb.Step) bool {
			scanned++
			next = s.Step + dir
			hit := f.match(s)
			f.memo.note(s.Step, hit)
			if hit && !fn(s) {
				stop = true
				return false
			}
			return scanned < maxScan
		})
		if stop || next == i { // fn is done, or nothing could be read
			return
		}
		i = next
	}
}
