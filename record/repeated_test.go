package record

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/node"
)

// A live node restarted with its data directory wiped starts again at
// seq 1 and appends to its old file: every verb refused the file as "a
// file concatenated with another recording of the run?", the wrong cause
// (a new user's backup). A fresh start (run key restart=false) is named.
func TestRepeatedSeqsNamesAFreshStart(t *testing.T) {
	evs := func(seqs ...uint64) []*node.Event {
		var out []*node.Event
		for _, s := range seqs {
			out = append(out, &node.Event{Node: "b1", Seq: s, Lamport: s})
		}
		return out
	}
	file := func(restart string) *File {
		h0 := &Header{Recorded: []node.ID{"b1"}, Run: map[string]string{"restart": "false"}}
		h1 := &Header{Recorded: []node.ID{"b1"}, Run: map[string]string{"restart": restart}}
		return &File{Segments: []*Header{h0, h1}, SegmentStart: []int{0, 3}, Events: append(evs(1, 2, 3), evs(1, 2)...)}
	}
	if got := file("false").RepeatedSeqs(); !strings.Contains(got, "segment 1 starts node b1 afresh at seq 1") || !strings.Contains(got, "seqs 1..3") {
		t.Fatalf("a fresh start: %q", got)
	}
	if got := file("true").RepeatedSeqs(); !strings.Contains(got, "a file concatenated with another recording") {
		t.Fatalf("a restart that repeats seqs: %q", got)
	}
	ok := &File{Segments: []*Header{{}, {}}, SegmentStart: []int{0, 2}, Events: append(evs(1, 2), evs(65540, 65541)...)}
	if got := ok.RepeatedSeqs(); got != "" {
		t.Fatalf("a restart above its reservation: %q", got)
	}
}
