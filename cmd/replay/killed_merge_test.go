package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/syncbuf"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// Per-node files of a live-like recording: n3's recorder is killed with
// its node (segment 0 without an end record, its crash lost with its
// buffer) and its restart is recorded in segment 1. Merged, the killed
// end is a gap that reaches the restart: not a loss, as it is not in the
// files themselves (the merge exited 2 when every gap in the middle was
// taken for a recorder that fell behind).
func TestKilledNodeMergedIsNotALoss(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "full.lz4"))
	f, err := record.ReadFile(filepath.Join(dir, "full.lz4"))
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
		os.WriteFile(p, file, 0o644)
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
		if id != "n3" {
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
		seg0 := evs[:r-1] // the crash never reached the file
		paths = append(paths, write(string(id)+".lz4", id, [][]*node.Event{seg0, evs[r:]}, []bool{false, true}))
	}
	mustOK(t, replay(t, dir, append([]string{"verify"}, paths...)...))
	mustOK(t, replay(t, dir, append(append([]string{"merge"}, paths...), "-o", "m.lz4")...))
	r := replay(t, dir, "verify", "m.lz4")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "n3: state unknown after") || strings.Contains(r.stderr, "lost events") {
		t.Fatalf("verify of the merge:\n%s%s", r.stdout, r.stderr)
	}
}
