package record

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// A recorder that keeps falling behind while other nodes record writes
// one gap per stretch between their events: the reader keeps a node's
// gaps that follow on from each other as one. Gaps apart (seqs between
// them were recorded), of another node, or of a new segment stay apart.
func TestGapsThatFollowOnAreOne(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []Gap{
		{Node: "a", From: 3, To: 5, Reason: "fell behind"},
		{Node: "b", From: 2, To: 2, Reason: "fell behind"},
		{Node: "a", From: 6, To: 9, Reason: "fell behind again"}, // follows on from 3..5
		{Node: "a", From: 8, To: 12},                             // overlaps: 3..12
		{Node: "a", From: 20, To: 21},                            // apart
		{Node: "a", From: 22, Reason: "disk full"},               // to the end: apart, its reason kept
	} {
		if err := w.Gap(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(End{Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	f, err := readBounded(t, "gaps.lz4", buf.Bytes())
	if err != nil || f.Damage != nil {
		t.Fatalf("%v %v", err, f.Damage)
	}
	want := []Gap{
		{Node: "a", From: 3, To: 12, Reason: "fell behind"},
		{Node: "b", From: 2, To: 2, Reason: "fell behind"},
		{Node: "a", From: 20, To: 21, Reason: ""},
		{Node: "a", From: 22, To: 0, Reason: "disk full"},
	}
	if fmt.Sprint(f.Gaps) != fmt.Sprint(want) {
		t.Fatalf("gaps %+v, want %+v", f.Gaps, want)
	}
}

// 200,000 gap records of near-identical 4 KB reasons fit in 5 MB of lz4
// and took 1.9 GB kept as written. Equal reasons are shared, and distinct
// ones past a budget keep their first bytes, so what a file's gaps hold
// is bounded by their number, not by what lz4 packed.
func TestGapReasonsAreBounded(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	pad := strings.Repeat("x", MaxReasonLen-16)
	for i := range n {
		// Apart (odd seqs), so that none folds into another.
		if err := w.Gap(Gap{Node: "a", From: uint64(2*i + 1), To: uint64(2*i + 1), Reason: fmt.Sprintf("%06d %s", i, pad)}); err != nil {
			t.Fatal(err)
		}
		if err := w.Gap(Gap{Node: "b", From: uint64(2*i + 1), To: uint64(2*i + 1), Reason: "the same " + pad}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(End{Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	f, err := readBounded(t, "reasons.lz4", buf.Bytes())
	if err != nil || f.Damage != nil {
		t.Fatalf("%v %v", err, f.Damage)
	}
	if len(f.Gaps) != 2*n {
		t.Fatalf("%d gaps, want %d", len(f.Gaps), 2*n)
	}
	distinct := map[string]bool{}
	total := 0
	for _, g := range f.Gaps {
		if !distinct[g.Reason] {
			distinct[g.Reason] = true
			total += len(g.Reason)
		}
	}
	if limit := maxGapReasonBytes + n*(clippedGapReason+8); total > limit {
		t.Fatalf("the gaps' distinct reasons hold %d bytes, want at most %d", total, limit)
	}
	last := f.Gaps[len(f.Gaps)-2].Reason
	if !strings.HasPrefix(last, fmt.Sprintf("%06d ", n-1)) || !strings.HasSuffix(last, "…") {
		t.Fatalf("a reason past the budget reads %.40q..., want its first bytes and an ellipsis", last)
	}
}

// A forged gap reason, end reason or run value held escape sequences and
// a newline: every verb's warning printed them raw, setting the
// terminal's title and printing a line that read as replay's verdict.
// They are read escaped.
func TestTraceTextIsReadEscaped(t *testing.T) {
	const evil = "x\x1b[2J\nreplayed 0 steps\x1b]0;pwned\x07"
	h := testHeader()
	h.Run = map[string]string{"note": evil}
	data := rawTrace(headerRec(t, h), cborRec(t, TypeGap, Gap{Node: "a", From: 3, To: 4, Reason: evil}),
		cborRec(t, TypeEnd, End{Reason: evil}))
	f, err := readBounded(t, "evil.lz4", data)
	if err != nil || f.Damage != nil {
		t.Fatalf("%v %+v", err, f)
	}
	texts := []string{f.Gaps[0].Reason, f.Ends[0].Reason}
	for _, v := range f.Header.Run {
		texts = append(texts, v)
	}
	for _, s := range texts {
		if strings.ContainsAny(s, "\x1b\n\x07") {
			t.Errorf("read raw: %q", s)
		}
	}
	if !strings.Contains(f.Gaps[0].Reason, `\x1b[2J`) {
		t.Errorf("the reason reads %q, want its escapes shown", f.Gaps[0].Reason)
	}
}

// An equal reason is one string across a file's segments (a recorder
// restarted 300 times, stopping each time for the same reason): the
// reasons were forgotten at each segment, so the same one counted
// against the budget of distinct reasons again, and was clipped.
func TestGapReasonsAreSharedAcrossSegments(t *testing.T) {
	var buf bytes.Buffer
	reason := strings.Repeat("r", MaxReasonLen-1)
	for i := range 300 {
		h := testHeader()
		h.Segment = i
		w, err := NewWriter(&buf, h, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Gap(Gap{Node: "a", From: uint64(10*i + 1), To: uint64(10*i + 2), Reason: reason}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(End{Reason: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	f, err := readBounded(t, "segments.lz4", buf.Bytes())
	if err != nil || f.Damage != nil {
		t.Fatalf("%v %v", err, f.Damage)
	}
	if len(f.Gaps) != 300 || f.Gaps[299].Reason != reason {
		t.Fatalf("%d gaps, the last with a reason of %d bytes, want 300 and %d", len(f.Gaps), len(f.Gaps[len(f.Gaps)-1].Reason), len(reason))
	}
}
