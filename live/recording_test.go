//go:build record

package live

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/syncbuf"
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
	// Each segment names the build that recorded it (replay's note when
	// another build's recording diverges).
	for i, h := range f.Segments {
		if b := h.Run[record.RunBuild]; !strings.Contains(b, " go1.") {
			t.Fatalf("segment %d: build %q", i, b)
		}
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

// fillingFile is a trace file on a disk with limit bytes of room: a write
// that does not fit writes what fits and fails with ENOSPC. Reserve
// allocates room ahead, as fallocate does: a reservation that does not
// fit fails whole.
type fillingFile struct {
	*os.File
	mu        sync.Mutex
	size      int64
	limit     int64
	reserved  int64
	noReserve bool // a file system without fallocate
	// shared: the disk is shared, and room a cut-back write frees is
	// taken at once by other files (the node's data, other nodes).
	shared bool
}

func (f *fillingFile) Reserve(off, n int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.noReserve:
		return syscall.EOPNOTSUPP
	case off+n > f.limit:
		return syscall.ENOSPC
	}
	f.reserved = max(f.reserved, off+n)
	return nil
}

func (f *fillingFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	room := f.limit - f.size
	if int64(len(p)) <= room {
		n, err := f.File.Write(p)
		f.size += int64(n)
		return n, err
	}
	n, _ := f.File.Write(p[:room])
	f.size += int64(n)
	return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
}

func (f *fillingFile) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.shared && size < f.size {
		f.limit -= f.size - size
	}
	f.size = size
	return f.File.Truncate(size)
}

func (f *fillingFile) grow(n int64) {
	f.mu.Lock()
	f.limit += n
	f.mu.Unlock()
}

// A full disk stops the recording, not the node: it keeps serving, its
// Close at SIGTERM succeeds, its log says "recording stopped: disk full
// at seq N", and so does the trace, which replay info then reports
// instead of blaming a kill.
func TestDiskFullStopsRecordingNotTheNode(t *testing.T) {
	// With fallocate, the notice goes into room kept for it while the
	// disk stays full (it found none, and the trace read as killed);
	// without, into room freed before the node stops.
	t.Run("disk stays full", func(t *testing.T) { diskFull(t, false, false, false) })
	// The hostile pass's tmpfs: what the failed write freed was gone
	// again before the notice came.
	t.Run("shared disk stays full", func(t *testing.T) { diskFull(t, false, false, true) })
	t.Run("no fallocate, room freed", func(t *testing.T) { diskFull(t, true, true, false) })
}

func diskFull(t *testing.T, noReserve, freed, shared bool) {
	var file *fillingFile
	defer func(open func(string) (traceFile, error)) { openTraceFile = open }(openTraceFile)
	openTraceFile = func(path string) (traceFile, error) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		file = &fillingFile{File: f, limit: 200 << 10, noReserve: noReserve, shared: shared}
		return file, nil
	}
	addrs, lns := cluster(t, 1)
	traces := t.TempDir()
	var logs syncbuf.Buffer
	n, err := Start(Options{System: testSystem, ID: "1", Addrs: addrs, DataDir: t.TempDir(), Listener: lns["1"],
		TraceDir: traces, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	ctx := context.Background()
	for i := 0; n.RecordingErr() == nil; i++ {
		if i == 2000 {
			t.Fatal("the disk never filled")
		}
		v := make([]byte, 1500)
		for j := range v {
			v[j] = 'a' + byte(r.IntN(26))
		}
		if err := n.Input(ctx, Add{Value: string(v)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // let the flush interval cut blocks
	}
	for range 5 {
		if err := n.Input(ctx, Add{Value: "after"}); err != nil {
			t.Fatalf("the node stopped serving when recording stopped: %v", err)
		}
	}
	if freed {
		file.grow(64 << 10) // space freed before the node is stopped
	}
	if err := n.Close("signal: terminated"); err != nil {
		t.Fatalf("Close after recording stopped: %v (a SIGTERM would exit non-zero)", err)
	}
	f, err := record.ReadFile(filepath.Join(traces, TraceFileName("1")))
	if err != nil {
		t.Fatal(err)
	}
	if f.Damage != nil || len(f.Events) == 0 {
		t.Fatalf("damage %v, %d events", f.Damage, len(f.Events))
	}
	last := f.Events[len(f.Events)-1].Seq
	want := fmt.Sprintf("recording stopped: disk full at seq %d", last)
	if len(f.Gaps) != 1 || f.Gaps[0].Reason != want || f.Gaps[0].From != last+1 || !f.Ended {
		t.Fatalf("gaps %+v, ended %v: want one saying %q", f.Gaps, f.Ended, want)
	}
	if !strings.Contains(logs.String(), want) {
		t.Fatalf("the log does not say %q:\n%s", want, logs.String())
	}
}
