//go:build record

package live

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// Run with: go test -tags record ./live
func TestRecordsSegmentPerProcess(t *testing.T) {
	addrs, lns := cluster(t, 1)
	dir, traces := t.TempDir(), t.TempDir()
	ctx := context.Background()
	start := func(ln net.Listener) *Node {
		n, err := Start(Options{System: testSystem, ID: "1", Addrs: addrs, DataDir: dir, Listener: ln,
			TraceDir: traces, Logger: quietLogger(), StateHashes: true})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := start(lns["1"])
	for range 10 {
		if err := n.Input(ctx, Add{Value: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Close("first run over"); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addrs["1"])
	if err != nil {
		t.Fatal(err)
	}
	n = start(ln)
	if err := n.Input(ctx, Add{Value: "y"}); err != nil {
		t.Fatal(err)
	}
	if err := n.Close("second run over"); err != nil {
		t.Fatal(err)
	}

	f, err := record.ReadFile(filepath.Join(traces, TraceFileName("1")))
	if err != nil {
		t.Fatal(err)
	}
	if f.Damage != nil || !f.Ended || len(f.Segments) != 2 || len(f.Ends) != 2 {
		t.Fatalf("damage %v ended %v segments %d ends %d", f.Damage, f.Ended, len(f.Segments), len(f.Ends))
	}
	if f.Segments[0].Segment != 0 || f.Segments[1].Segment != 1 || f.Header.Driver != "live" {
		t.Fatalf("segment numbers %d, %d; driver %q", f.Segments[0].Segment, f.Segments[1].Segment, f.Header.Driver)
	}
	kinds := map[node.Kind]int{}
	var prev *node.Event
	for _, ev := range f.Events {
		kinds[ev.Kind]++
		if !ev.HasStateHash {
			t.Fatalf("seq %d has no state hash", ev.Seq)
		}
		if prev != nil && (ev.Seq <= prev.Seq || ev.Lamport <= prev.Lamport) {
			t.Fatalf("seq %d Lamport %d follows seq %d Lamport %d", ev.Seq, ev.Lamport, prev.Seq, prev.Lamport)
		}
		prev = ev
	}
	if kinds[node.KindInit] != 1 || kinds[node.KindRestart] != 1 || kinds[node.KindInput] != 11 {
		t.Fatalf("events by kind: %v", kinds)
	}
}

// A node name over the trace format's limit makes a recording node refuse
// to start, with the writer's clear error, instead of writing a trace every
// verb would choke on.
func TestRecordingRefusesOverlongNodeName(t *testing.T) {
	addrs, lns := cluster(t, 1)
	long := node.ID(strings.Repeat("p", record.MaxNameLen+1))
	addrs[long] = "127.0.0.1:1"
	n, err := Start(Options{System: testSystem, ID: "1", Addrs: addrs, DataDir: t.TempDir(), Listener: lns["1"],
		TraceDir: t.TempDir(), Logger: quietLogger()})
	if err == nil {
		n.Close("test")
		t.Fatal("a node with a 257-byte peer name started recording")
	}
	if want := fmt.Sprintf("(%d bytes) is longer than %d bytes", record.MaxNameLen+1, record.MaxNameLen); !strings.Contains(err.Error(), want) {
		t.Fatalf("%v does not say %q", err, want)
	}
}
