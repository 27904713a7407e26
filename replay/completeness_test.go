package replay_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

// Gap records against the files given beside them: a gap another file
// covers is no loss, one that no file covers is where the node's
// recording stopped, and a node no file records is missing, not stopped.
func TestGapsAgainstOtherFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.CausalClocks = 3, true
	f := simulatedFile(t, cfg, dir)
	var others, n2 []*node.Event
	for _, ev := range f.Events {
		if ev.Node == "n2" {
			n2 = append(n2, ev)
		} else {
			others = append(others, ev)
		}
	}
	if len(n2) < 4 {
		t.Fatalf("n2 ran %d events", len(n2))
	}
	end := &record.End{Reason: "test", Time: f.Ends[0].Time}
	// write writes a file of events recording nodes, after gaps.
	write := func(name string, nodes []node.ID, events []*node.Event, gaps ...record.Gap) string {
		h := *f.Header
		h.Driver, h.Recorded, h.Run = "live", nodes, nil
		path := filepath.Join(dir, name)
		writeTrace(t, path, h, events, end, gaps...)
		return path
	}
	var rest []node.ID
	for _, id := range f.Header.Nodes {
		if id != "n2" {
			rest = append(rest, id)
		}
	}
	all := f.Header.Nodes
	half := len(n2) / 2
	lastSeq := n2[len(n2)-1].Seq
	// A merge of the others (n2 a gap from seq 1 on) and n2's own file.
	merged := write("rest.lz4", rest, others, record.Gap{Node: "n2", From: 1, Reason: "not given"})
	own := write("n2.lz4", []node.ID{"n2"}, n2)
	ownHalf := write("n2-half.lz4", []node.ID{"n2"}, n2[:half], record.Gap{Node: "n2", From: n2[half].Seq, Reason: "disk full"})
	// n2's file without two events in the middle, which a gap says were
	// lost (a live recorder that fell behind).
	ownMid := write("n2-mid.lz4", []node.ID{"n2"}, slices.Concat(n2[:half], n2[half+2:]),
		record.Gap{Node: "n2", From: n2[half].Seq, To: n2[half+1].Seq, Reason: "recorder fell behind"})
	for _, tc := range []struct {
		name      string
		paths     []string
		absent    uint64 // FirstAbsent(n2, 1)
		stoppedAt int    // n2's seq after which its recording stopped (0: none)
		missing   bool
	}{
		{"merge and n2's file", []string{merged, own}, lastSeq + 1, 0, false},
		{"the merge alone", []string{merged}, 1, 0, true},
		{"the merge and n2's stopped file", []string{merged, ownHalf}, n2[half].Seq, int(n2[half-1].Seq), false},
		{"the merge and n2's file with a gap", []string{merged, ownMid}, n2[half].Seq, int(n2[half-1].Seq), false},
	} {
		tr, err := replay.Load(tc.paths...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := tr.FirstAbsent("n2", 1); got != tc.absent {
			t.Errorf("%s: FirstAbsent(n2, 1) = %d, want %d", tc.name, got, tc.absent)
		}
		stops := tr.RecordingStops(all)
		switch {
		case tc.stoppedAt == 0 && len(stops) > 0:
			t.Errorf("%s: stops %+v, want none", tc.name, stops)
		case tc.stoppedAt > 0 && (len(stops) != 1 || stops[0].Node != "n2" || tr.Event(stops[0].After).Seq != uint64(tc.stoppedAt)):
			t.Errorf("%s: stops %+v, want n2 after seq %d", tc.name, stops, tc.stoppedAt)
		case tc.stoppedAt > 0 && (stops[0].Lost != "") != (tc.paths[1] == ownMid):
			t.Errorf("%s: the stop loses %q: a gap in the middle names its seqs, a stop none", tc.name, stops[0].Lost)
		}
		if got := slices.Contains(tr.MissingOf(all), "n2"); got != tc.missing {
			t.Errorf("%s: n2 missing %v, want %v", tc.name, got, tc.missing)
		}
		complete := tc.stoppedAt == 0 && !tc.missing
		if tr.Incomplete(all) == complete {
			t.Errorf("%s: incomplete %v, want %v", tc.name, tr.Incomplete(all), !complete)
		}
		if complete && len(tr.Unknown["n2"]) > 0 {
			t.Errorf("%s: n2 unknown %+v over events the trace has", tc.name, tr.Unknown["n2"])
		}
		tr.Close()
	}
}

// TestAFileWithoutItsEndGoesOnInTheNext: a run's trace split in two files,
// the first without an end record (as a recorder killed and started again
// over a new file leaves it when nothing was lost), the second holding
// every node's next seqs. Nothing is missing, so no node's state is
// unknown: the check of the two files was the check of the whole run,
// where a hostile pass found every node unknown from the split on and a
// violation after it missed (exit 0).
func TestAFileWithoutItsEndGoesOnInTheNext(t *testing.T) {
	dir := t.TempDir()
	sys, err := examples.Registry().Lookup("paxos")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug = 8, "spec"
	whole := simulateToFile(t, sys, cfg.WithDefaults(sys), dir)
	f, err := record.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	half := len(f.Events) / 2
	a, b := filepath.Join(dir, "a.lz4"), filepath.Join(dir, "b.lz4")
	writeTrace(t, a, *f.Header, f.Events[:half], nil)
	writeTrace(t, b, *f.Header, f.Events[half:], &f.Ends[0])
	tr, err := replay.Load(a, b)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.Len() != len(f.Events) {
		t.Fatalf("%d steps, want %d", tr.Len(), len(f.Events))
	}
	for id, us := range tr.Unknown {
		t.Errorf("%s unknown: %+v", id, us)
	}
	// Cut where nothing goes on, the same first file is a loss as before.
	tr, err = replay.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if len(tr.Unknown) == 0 {
		t.Error("the first file alone: no node unknown after its unended segment")
	}
}

// Gaps past a node's last recorded event lost its last events: its
// recording stopped early, so the check of the file is not the check of
// the run. They were passed over (verify exit 0). Many such gaps are one
// stretch of unknown state and one stop that counts them, not a reason
// and a stop per gap (200,000 of them took 1.9 GB and printed 828 MB).
func TestGapsPastTheLastEventAreALoss(t *testing.T) {
	dir := t.TempDir()
	cfg := sim.DefaultConfig()
	cfg.Seed = 3
	f := simulatedFile(t, cfg, dir)
	var last uint64
	for _, ev := range f.Events {
		if ev.Node == "n2" {
			last = ev.Seq
		}
	}
	const n = 500
	var gaps []record.Gap
	for i := range n {
		s := last + 10 + uint64(2*i)                                                                      // apart, so that the reader keeps each
		gaps = append(gaps, record.Gap{Node: "n2", From: s, To: s, Reason: fmt.Sprintf("forged; %d", i)}) // "; " as a stretch joins reasons
	}
	h := *f.Header
	path := filepath.Join(dir, "past.lz4")
	writeTrace(t, path, h, f.Events, &record.End{Reason: "test", Time: f.Ends[0].Time}, gaps...)
	tr, err := replay.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	stops := tr.RecordingStops(f.Header.Nodes)
	if len(stops) != 1 || stops[0].Node != "n2" || tr.Event(stops[0].After).Seq != last {
		t.Fatalf("stops %+v, want one of n2 after its last event (seq %d)", stops, last)
	}
	if want := fmt.Sprintf("and %d more gap(s)", n-1); !strings.Contains(stops[0].Lost, want) {
		t.Errorf("the stop loses %q, want it to say %q", stops[0].Lost, want)
	}
	if !tr.Incomplete(f.Header.Nodes) {
		t.Error("the trace is complete, with events of n2 lost after its last")
	}
	u := tr.Unknown["n2"]
	if len(u) != 1 {
		t.Fatalf("n2 has %d unknown stretches, want 1", len(u))
	}
	if got := strings.Count(u[0].Reason, "forged"); got != 3 || !strings.Contains(u[0].Reason, fmt.Sprintf("and %d more", n-got)) {
		t.Errorf("the stretch gives %d reasons: %.200q", got, u[0].Reason)
	}
}
