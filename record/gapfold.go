package record

import "github.com/replaycheck/replaycheck/internal/printable"

// What a file's gap records may hold in memory. A gap's reason is at most
// MaxReasonLen bytes, but lz4 packs 200,000 records of near-identical
// 4 KB reasons into 5 MB: kept as written they took 1.9 GB in every verb.
// Equal reasons share one string; once the distinct ones reach
// maxGapReasonBytes, each further one keeps its first clippedGapReason
// bytes.
const (
	maxGapReasonBytes = 1 << 20
	clippedGapReason  = 120
)

// gapFold keeps a file's gaps small: it folds a node's gap into the one
// before it when the two follow on (the seqs of one stretch, written in
// pieces) and shares equal reasons.
type gapFold struct {
	last        map[string]int // a node's latest gap, by index in the file's list
	reasons     map[string]string
	reasonBytes int
}

// add appends g to gaps, or folds it into the node's latest gap, and
// returns the list.
func (f *gapFold) add(gaps []Gap, g Gap) []Gap {
	if f.last == nil {
		f.last = map[string]int{}
	}
	if f.reasons == nil {
		f.reasons = map[string]string{} // shared across segments
	}
	id := string(g.Node)
	if i, ok := f.last[id]; ok {
		prev := &gaps[i]
		// A gap that begins inside or right after the node's latest one
		// (which did not run to the end) is the same stretch. One that
		// begins further on leaves seqs between them that were recorded
		// (or a gap to the end before it: a restart may follow it). A
		// gap to the end is kept apart: its reason is why the recording
		// stopped (a full disk after the recorder fell behind), which
		// the first reason of the stretch is not.
		if prev.To != 0 && g.To != 0 && prev.Killed == g.Killed && g.From >= prev.From && g.From <= prev.To+1 {
			prev.To = max(prev.To, g.To)
			return gaps
		}
	}
	g.Reason = f.reason(g.Reason)
	f.last[id] = len(gaps)
	return append(gaps, g)
}

// reason is s as kept: shared with an equal earlier reason, or clipped
// once the distinct reasons fill their budget.
func (f *gapFold) reason(s string) string {
	if r, ok := f.reasons[s]; ok {
		return r
	}
	if f.reasonBytes+len(s) > maxGapReasonBytes {
		if len(s) > clippedGapReason {
			return printable.Cut(s, clippedGapReason) + "…"
		}
		return s
	}
	f.reasonBytes += len(s)
	f.reasons[s] = s
	return s
}
