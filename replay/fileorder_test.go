package replay_test

import (
	"path/filepath"
	"testing"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
)

// The files of one trace load the same whatever order they are given in:
// the first file's header was the trace's, and its start the time base,
// so `history 3 2 1` showed every time 3 ms off `history 1 2 3`'s. Times
// count from the earliest start of any file, so none is negative.
func TestFilesLoadInOneOrderWhateverOrderTheyAreGivenIn(t *testing.T) {
	dir := t.TempDir()
	ids := []node.ID{"n1", "n2", "n3"}
	var paths []string
	for i, id := range ids {
		// Each process started its recorder 3 ms before the one before.
		start := int64(1_000_000_000 - 3_000_000*i)
		h := record.Header{System: "paxos", Nodes: ids, Recorded: []node.ID{id}, Driver: "live", Start: start}
		var events []*node.Event
		for seq := uint64(1); seq <= 5; seq++ {
			kind := node.KindTimer
			if seq == 1 {
				kind = node.KindInit
			}
			events = append(events, &node.Event{Node: id, Seq: seq, Lamport: seq, Kind: kind, Time: start + int64(seq)*1_000_000})
		}
		p := filepath.Join(dir, string(id)+".lz4")
		writeTrace(t, p, h, events, &record.End{Time: start + 1e9})
		paths = append(paths, p)
	}
	times := func(paths ...string) (int64, []string, map[node.ID]int64) {
		tr, err := replay.Load(paths...)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		first := map[node.ID]int64{}
		for i := 0; i < tr.Len(); i++ {
			ev := tr.Event(i)
			if _, ok := first[ev.Node]; !ok {
				first[ev.Node] = int64(tr.Time(ev))
			}
		}
		return tr.Header.Start, record.Paths(tr.Files), first
	}
	start, files, first := times(paths[0], paths[1], paths[2])
	rstart, rfiles, rfirst := times(paths[2], paths[1], paths[0])
	if start != rstart || start != 1_000_000_000-6_000_000 {
		t.Errorf("time base %d given in order, %d given backwards, want the earliest start, %d", start, rstart, 1_000_000_000-6_000_000)
	}
	for i := range files {
		if files[i] != rfiles[i] {
			t.Errorf("files %v given in order, %v given backwards", files, rfiles)
			break
		}
	}
	for _, id := range ids {
		if first[id] != rfirst[id] || first[id] < 0 {
			t.Errorf("%s's first event at %v given in order, %v given backwards", id, first[id], rfirst[id])
		}
	}
}
