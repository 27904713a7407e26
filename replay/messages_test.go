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

// nodeFile is one node's file of a two-node run (n1, n2), as a live
// process writes it: its header lists the run's nodes and records only
// id; one segment, ended or not.
func nodeFile(id node.ID, evs []*node.Event, gaps []record.Gap, ended bool) *record.File {
	h := &record.Header{System: "paxos", Bug: "none", Nodes: []node.ID{"n1", "n2"}, Recorded: []node.ID{id}}
	return &record.File{Path: string(id) + ".lz4", Header: h, Events: evs, Gaps: gaps,
		SegmentStart: []int{0}, SegmentEnded: []bool{ended}, Segments: []*record.Header{h}, Ended: ended}
}

// recvFrom is n2's receive, at seq and time at (s), of a message n1 sent
// as msgSeq.
func recvFrom(seq, msgSeq uint64, at int64) *node.Event {
	e := ev("n2", seq, node.KindRecv)
	e.From, e.MsgSeq, e.SendLamport, e.Lamport, e.Time = "n1", msgSeq, msgSeq, 100000+seq, at*1e9
	return e
}

// Receives of messages a node sent as seqs its recording does not hold
// were taken for granted: a process of n1 that did not record (its file
// ended after no event, a port already taken) traded thousands of
// messages with n2, and the run checked "complete" (a new user's live
// primary-backup store); a file cut where a restarted process's segment
// began hid 24 s of that process (a hostile pass). After a clean end they
// make the trace invalid; after a killed process's end, receives for
// longer than its unwritten tail could be in transit make its recording
// stopped (exit 2 in check and verify).
func TestReceivesFromSeqsNoFileHolds(t *testing.T) {
	n1 := func(ended bool) *record.File {
		return nodeFile("n1", []*node.Event{ev("n1", 1, node.KindInit), ev("n1", 2, node.KindTimer)}, nil, ended)
	}
	n2 := func(evs ...*node.Event) *record.File {
		return nodeFile("n2", append([]*node.Event{ev("n2", 1, node.KindInit)}, evs...), nil, true)
	}
	t.Run("after a clean end", func(t *testing.T) {
		_, err := replay.Merge([]*record.File{n1(true), n2(recvFrom(2, 3, 1))})
		if err == nil || !strings.Contains(err.Error(), "n1's recording (n1.lz4) ends cleanly at seq 2") {
			t.Fatalf("got %v, want the receive of n1's seq 3 refused", err)
		}
	})
	t.Run("from an empty recording", func(t *testing.T) {
		_, err := replay.Merge([]*record.File{nodeFile("n1", nil, nil, true), n2(recvFrom(2, 7, 1), recvFrom(3, 9, 2))})
		if err == nil || !strings.Contains(err.Error(), "holds no event") || !strings.Contains(err.Error(), "2 receive(s) of messages n1 sent as seqs 7..9") {
			t.Fatalf("got %v, want the receives from the empty recording refused", err)
		}
	})
	t.Run("a killed process's tail", func(t *testing.T) {
		tr, err := replay.Merge([]*record.File{n1(false), n2(recvFrom(2, 3, 1))})
		if err != nil {
			t.Fatal(err)
		}
		if us := tr.Unknown["n1"]; len(us) != 1 || !us[0].Killed || len(tr.RecordingStops(tr.Nodes)) != 0 {
			t.Fatalf("n1: %+v, stops %v; want a killed end and no stop", us, tr.RecordingStops(tr.Nodes))
		}
	})
	t.Run("a missing restarted segment", func(t *testing.T) {
		tr, err := replay.Merge([]*record.File{n1(false), n2(recvFrom(2, 3, 1), recvFrom(3, 70000, 30))})
		if err != nil {
			t.Fatal(err)
		}
		stops := tr.RecordingStops(tr.Nodes)
		if len(stops) != 1 || stops[0].Node != "n1" || !strings.Contains(stops[0].Reason, "2 message(s) it sent as seqs 3..70000 after its last recorded event were received over 29s") {
			t.Fatalf("stops %+v: want n1's recording stopped, saying why", stops)
		}
	})
	// A review: a process killed before its first flush (its file a
	// header alone), one whose disk filled before it wrote an event (a
	// stop notice alone), and one that idled a minute before the sends
	// it was killed with are no missing recording.
	t.Run("killed before its first event was written", func(t *testing.T) {
		tr, err := replay.Merge([]*record.File{nodeFile("n1", nil, nil, false), n2(recvFrom(2, 1, 1), recvFrom(3, 2, 1))})
		if err != nil || len(tr.RecordingStops(tr.Nodes)) != 0 {
			t.Fatalf("got %v, stops %v; want a killed process's tail", err, tr.RecordingStops(tr.Nodes))
		}
	})
	t.Run("stopped before its first event was written", func(t *testing.T) {
		f := nodeFile("n1", nil, []record.Gap{{Node: "n1", From: 1, Reason: "recording stopped: disk full"}}, true)
		tr, err := replay.Merge([]*record.File{f, n2(recvFrom(2, 1, 1))})
		if err != nil || len(tr.RecordingStops(tr.Nodes)) != 1 {
			t.Fatalf("got %v, stops %v; want the stop alone", err, tr.RecordingStops(tr.Nodes))
		}
	})
	t.Run("killed after idling", func(t *testing.T) {
		tr, err := replay.Merge([]*record.File{n1(false), n2(recvFrom(2, 3, 61))})
		if err != nil || len(tr.RecordingStops(tr.Nodes)) != 0 {
			t.Fatalf("got %v, stops %v; want a killed process's tail", err, tr.RecordingStops(tr.Nodes))
		}
	})
	t.Run("a merge keeps a killed end a crash", func(t *testing.T) {
		// What `replay merge` writes for n1's killed end: a gap to the
		// end marked killed. Unmarked, it is a recording that stopped.
		for _, killed := range []bool{true, false} {
			f := nodeFile("n1", []*node.Event{ev("n1", 1, node.KindInit)}, []record.Gap{{Node: "n1", From: 2, Reason: "no end record", Killed: killed}}, true)
			tr, err := replay.Merge([]*record.File{f, n2()})
			if err != nil {
				t.Fatal(err)
			}
			if stopped := len(tr.RecordingStops(tr.Nodes)) > 0; stopped == killed || tr.Unknown["n1"][0].Killed != killed {
				t.Fatalf("killed %v: stops %v, unknown %+v", killed, tr.RecordingStops(tr.Nodes), tr.Unknown["n1"])
			}
		}
	})
}

// TestCrashesCountsKilledProcesses: a killed process (a segment without
// an end record) is a crash of its node with no crash event: "ever
// crashed" (crashes(n) > 0 in a script) missed it. It counts from the
// step after its last recorded event on; the node is not "down" there
// (its state is unknown), so DownAt says no.
func TestCrashesCountsKilledProcesses(t *testing.T) {
	evs := []*node.Event{ev("n1", 1, node.KindInit), ev("n1", 2, node.KindTimer), // segment 0, killed
		ev("n1", 3, node.KindRestart), ev("n1", 4, node.KindTimer), // segment 1, ended
		ev("n2", 1, node.KindInit)}
	evs[4].Lamport = 1
	f := memFile("t.lz4", evs, nil, []int{0, 2}, []bool{false, true})
	tr, err := replay.Merge([]*record.File{f})
	if err != nil {
		t.Fatal(err)
	}
	steps := tr.NodeSteps("n1")
	lastBefore, restart := steps[1], steps[2]
	if got := tr.Crashes("n1", lastBefore); got != 0 {
		t.Errorf("at its last recorded event before the kill, n1 has crashed %d times", got)
	}
	if got := tr.Crashes("n1", restart); got != 1 {
		t.Errorf("at its restart after the kill, n1 has crashed %d times, want 1 (unknown: %+v)", got, tr.Unknown["n1"])
	}
	for s := range tr.Len() {
		if _, down := tr.DownAt("n1", s); down {
			t.Errorf("n1 reads as down at #%d: a killed process's node is unknown, not down", s)
		}
	}
}
