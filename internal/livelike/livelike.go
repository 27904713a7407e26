// Package livelike splits a simulated trace into the per-node files live
// processes write, with one node's process killed: a test helper for
// what a kill -9 leaves (a segment without an end record, its crash lost
// with its buffer, the restart in a segment of its own).
package livelike

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/replaycheck/replaycheck/internal/syncbuf"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// Killed is the node whose process is killed.
const Killed node.ID = "n3"

// Files splits the trace file in dir into one file per node there, as
// live processes write them; Killed's recorder is killed with its node
// at its first crash (segment 0 without an end record, the crash lost
// with its buffer), and its restart recorded in segment 1 (no restart:
// killed for good). keep may change Killed's segments (and whether each
// was ended) before they are written.
func Files(t testing.TB, dir, trace string, keep ...func(segs [][]*node.Event, ended []bool) ([][]*node.Event, []bool)) (*record.File, []string) {
	t.Helper()
	f, err := record.ReadFile(filepath.Join(dir, trace))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, id node.ID, segs [][]*node.Event, ended []bool) string {
		var file []byte
		for i, evs := range segs {
			var buf syncbuf.Buffer
			h := *f.Header
			h.Driver, h.Recorded, h.Segment, h.Run = "live", []node.ID{id}, i, nil
			w, err := record.NewWriter(&buf, h, record.WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if err := w.Append(ev); err != nil {
					t.Fatal(err)
				}
			}
			if !ended[i] {
				w.Flush()
				file = append(file, buf.Bytes()...)
				w.Close(record.End{})
				continue
			}
			w.Close(record.End{Reason: "done", Time: f.Ends[0].Time})
			file = append(file, buf.Bytes()...)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, file, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var paths []string
	for _, id := range f.Header.Nodes {
		var evs []*node.Event
		for _, ev := range f.Events {
			if ev.Node == id {
				evs = append(evs, ev)
			}
		}
		if id != Killed {
			paths = append(paths, write(string(id)+".lz4", id, [][]*node.Event{evs}, []bool{true}))
			continue
		}
		r := -1
		for i, ev := range evs {
			if ev.Kind == node.KindRestart {
				r = i
				break
			}
		}
		if r < 0 { // killed for good: no crash in the trace, no restart
			paths = append(paths, write(string(id)+".lz4", id, [][]*node.Event{evs}, []bool{false}))
			continue
		}
		seg0 := evs[:r-1] // the crash never reached the file
		segs, ended := [][]*node.Event{seg0, evs[r:]}, []bool{false, true}
		for _, k := range keep {
			segs, ended = k(segs, ended)
		}
		paths = append(paths, write(string(id)+".lz4", id, segs, ended))
	}
	return f, paths
}
