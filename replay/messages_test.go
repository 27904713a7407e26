package replay_test

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
)

// memFile is a trace file read into memory, built by hand.
func memFile(path string, evs []*node.Event, gaps []record.Gap, segStarts []int, ended []bool) *record.File {
	h := &record.Header{System: "paxos", Bug: "none", Nodes: []node.ID{"n1", "n2"}, Recorded: []node.ID{"n1", "n2"}}
	f := &record.File{Path: path, Header: h, Events: evs, Gaps: gaps, SegmentStart: segStarts, SegmentEnded: ended}
	for range segStarts {
		f.Segments = append(f.Segments, h) // every segment's header says segment 0
	}
	f.Ended = ended[len(ended)-1]
	return f
}

func ev(id node.ID, seq uint64, kind node.Kind) *node.Event {
	return &node.Event{Node: id, Seq: seq, Lamport: seq, Kind: kind}
}

// A seq of 0 is reported as such, not as "seqs 1..18446744073709551615
// are missing".
func TestSeqZeroMessage(t *testing.T) {
	f := memFile("zero.lz4", []*node.Event{ev("n1", 0, node.KindInit)}, nil, []int{0}, []bool{true})
	_, err := replay.Merge([]*record.File{f})
	if err == nil || !strings.Contains(err.Error(), "seq 0") || strings.Contains(err.Error(), "18446744073709551615") {
		t.Fatalf("seq 0: %v", err)
	}
}

// Reasons for unknown state are well-formed: "seqs 3 onwards", not
// "seqs 3on"; segments named by their place in the file.
func TestUnknownReasonsReadWell(t *testing.T) {
	evs := []*node.Event{ev("n1", 1, node.KindInit), ev("n1", 2, node.KindTimer), ev("n2", 1, node.KindInit)}
	evs[1].Lamport, evs[2].Lamport = 3, 2
	f := memFile("t.lz4", evs, []record.Gap{{Node: "n1", From: 3, Reason: "recorder fell behind"}}, []int{0, 2}, []bool{false, false})
	tr, err := replay.Merge([]*record.File{f})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, us := range tr.Unknown {
		for _, u := range us {
			reasons = append(reasons, u.Reason)
		}
	}
	all := strings.Join(reasons, "\n")
	for _, want := range []string{"t.lz4: seqs 3 onwards of n1 were not recorded: recorder fell behind", "segment 1 has no end record"} {
		if !strings.Contains(all, want) {
			t.Errorf("reasons do not say %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "3on") || strings.Contains(all, "  ") {
		t.Errorf("malformed reasons:\n%s", all)
	}
}

// TestEmptyKilledSegmentIsNotFromTheStart: a process killed before it
// recorded anything leaves a segment with a header and no event. The
// node's state is unknown from its last event before that segment until
// its next restart, as for the segment before; it was unknown "from the
// start", so its whole first incarnation went unreplayed (found by a
// new-user trial killing a node right after it started).
func TestEmptyKilledSegmentIsNotFromTheStart(t *testing.T) {
	evs := []*node.Event{ev("n1", 1, node.KindInit), ev("n1", 2, node.KindTimer), // segment 0, killed
		// segment 1: killed before its first event
		ev("n1", 5, node.KindRestart), ev("n1", 6, node.KindTimer), // segment 2, ended
		ev("n2", 1, node.KindInit)}
	evs[4].Lamport = 1
	f := memFile("t.lz4", evs, nil, []int{0, 2, 2}, []bool{false, false, true})
	tr, err := replay.Merge([]*record.File{f})
	if err != nil {
		t.Fatal(err)
	}
	us := tr.Unknown["n1"]
	if len(us) != 1 || us[0].After != tr.NodeSteps("n1")[1] || us[0].Until != tr.NodeSteps("n1")[2] {
		t.Fatalf("n1's unknown stretches: %+v (its steps %v)", us, tr.NodeSteps("n1"))
	}
}
