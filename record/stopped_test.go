package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
)

// fillingDisk takes whole writes while they fit in room and fails the rest
// with ENOSPC, as a file system does once full (the live recorder's file
// cuts a partial write back, so a write is all or nothing).
type fillingDisk struct {
	mu    sync.Mutex
	data  []byte
	room  int
	fails int
}

func (d *fillingDisk) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(p) > d.room {
		d.fails++
		return 0, fmt.Errorf("write trace: %w", syscall.ENOSPC)
	}
	d.room -= len(p)
	d.data = append(d.data, p...)
	return len(p), nil
}

func (d *fillingDisk) bytes() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return bytes.Clone(d.data)
}

func (d *fillingDisk) grow(n int) {
	d.mu.Lock()
	d.room += n
	d.mu.Unlock()
}

// oneNodeEvents are events of node a with incompressible payloads, so
// that blocks are large and the disk fills.
func oneNodeEvents(n int) []*node.Event {
	r := rand.New(rand.NewPCG(5, 6))
	var evs []*node.Event
	for i := range n {
		p := make([]byte, 1000)
		for j := range p {
			p[j] = byte(r.Uint32())
		}
		ev := &node.Event{Node: "a", Seq: uint64(i + 1), Lamport: uint64(i + 1), Kind: node.KindInput,
			MsgType: "t.Ping", Payload: p, Time: int64(i)}
		if i == 0 {
			ev.Kind, ev.MsgType, ev.Payload = node.KindInit, "", nil
		}
		evs = append(evs, ev)
	}
	return evs
}

// recordUntilFull records events with a flush every 20 (as the live
// recorder's interval makes blocks) onto a disk that fills, runs atClose
// before closing, and returns the OnError report.
func recordUntilFull(t *testing.T, d io.Writer, evs []*node.Event, atClose func()) (*Writer, error) {
	t.Helper()
	h := testHeader()
	h.Recorded = []node.ID{"a"}
	got := make(chan error, 1)
	w, err := NewWriter(d, h, WriterOptions{Lossy: true, OnError: func(err error) { got <- err }})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		w.Append(ev)
		if i%20 == 19 {
			w.Flush()
		}
	}
	if atClose != nil {
		atClose()
	}
	closeErr := w.Close(End{Reason: "test"})
	select {
	case err := <-got:
		if closeErr == nil || closeErr.Error() != err.Error() {
			t.Fatalf("Close returned %v, OnError was told %v", closeErr, err)
		}
		return w, err
	case <-time.After(5 * time.Second):
		t.Fatal("OnError not called")
	}
	return nil, nil
}

// checkStopped reads what a writer stopped by a full disk left and wants
// it to say so: a gap from the first seq not in the file on, and an end.
func checkStopped(t *testing.T, data []byte, report error) {
	t.Helper()
	var se *StoppedError
	if !errors.As(report, &se) || !errors.Is(report, syscall.ENOSPC) {
		t.Fatalf("the report %v is not a StoppedError wrapping ENOSPC", report)
	}
	f, err := Read(bytes.NewReader(data), "full.lz4", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Damage != nil {
		t.Fatalf("damage: %v", f.Damage)
	}
	if len(f.Events) == 0 {
		t.Fatal("nothing recorded before the disk filled")
	}
	last := f.Events[len(f.Events)-1].Seq
	want := fmt.Sprintf("recording stopped: disk full at seq %d", last)
	if !strings.HasPrefix(report.Error(), want+" of node a: ") {
		t.Fatalf("report %q does not begin %q", report, want)
	}
	if len(f.Segments) != 1 || !f.Ended || len(f.Gaps) != 1 {
		t.Fatalf("%d segments, ended %v, gaps %v: want the notice folded into the one segment", len(f.Segments), f.Ended, f.Gaps)
	}
	g := f.Gaps[0]
	if g.Node != "a" || g.From != last+1 || g.To != 0 || g.Reason != want {
		t.Fatalf("gap %+v, want a from %d on: %q", g, last+1, want)
	}
	if r := f.Ends[0].Reason; !strings.HasPrefix(r, want) {
		t.Fatalf("end reason %q", r)
	}
}

// A full disk stops recording; the writer leaves a notice saying so at
// once (the space of the failed block is free again), and the trace then
// says "recording stopped: disk full at seq N" instead of looking killed.
func TestDiskFullLeavesANotice(t *testing.T) {
	d := &fillingDisk{room: 150_000}
	_, report := recordUntilFull(t, d, oneNodeEvents(400), nil)
	if d.fails == 0 {
		t.Fatal("the disk never filled")
	}
	checkStopped(t, d.bytes(), report)
}

// When not even the notice fits, the writer tries again at Close.
func TestDiskFullNoticeRetriedAtClose(t *testing.T) {
	d := &fillingDisk{room: 150_000}
	evs := oneNodeEvents(400)
	_, report := recordUntilFull(t, &fullAfter{d: d}, evs, func() { d.grow(10_000) })
	checkStopped(t, d.bytes(), report)
}

// fullAfter leaves no room at all once a write has failed, until the test
// grows the disk.
type fullAfter struct{ d *fillingDisk }

func (f *fullAfter) Write(p []byte) (int, error) {
	n, err := f.d.Write(p)
	if err != nil {
		f.d.mu.Lock()
		f.d.room = 0
		f.d.mu.Unlock()
	}
	return n, err
}

// A writer that fails on its first block leaves a notice that stands as a
// segment of its own, even after a killed writer's unclosed segment.
func TestNoticeOfAnEmptySegment(t *testing.T) {
	killed, n := unclosedTrace(t, 50)
	d := &fillingDisk{room: 0}
	h := testHeader()
	h.Segment, h.Recorded = 1, []node.ID{"a"}
	w, err := NewWriter(d, h, WriterOptions{Lossy: true})
	if err != nil {
		t.Fatal(err)
	}
	w.Append(&node.Event{Node: "a", Seq: 70000, Lamport: 70000, Kind: node.KindRestart})
	w.Flush()
	d.grow(4096)
	w.Close(End{})
	data := append(bytes.Clone(killed), d.bytes()...)
	f, err := Read(bytes.NewReader(data), "restarted.lz4", int64(len(data)))
	if err != nil || f.Damage != nil {
		t.Fatalf("%v %v", err, f.Damage)
	}
	if len(f.Segments) != 2 || len(f.Events) != n || len(f.Gaps) != 1 || f.Gaps[0].From != 70000 || !f.Ended {
		t.Fatalf("segments %d events %d gaps %+v ended %v", len(f.Segments), len(f.Events), f.Gaps, f.Ended)
	}
	if want := "recording stopped: disk full before seq 70000"; f.Gaps[0].Reason != want {
		t.Fatalf("gap reason %q, want %q", f.Gaps[0].Reason, want)
	}
}
