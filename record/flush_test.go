package record

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/syncbuf"
	"github.com/replaycheck/replaycheck/node"
)

// TestFlushWritesWhatAWakeLeft: a block's worth of records wakes the
// compressor, which writes the full block and keeps the rest in the block
// it fills; a Flush (or the flush interval) that then finds no new record
// must still write that rest. It did not: everything flushed was not
// readable, and a kill then left a record cut at the block's end, which
// readers report as a truncated file.
func TestFlushWritesWhatAWakeLeft(t *testing.T) {
	w, buf := oneNodeWriter(t)
	// Up to the record that wakes the compressor and no further, and
	// let it take them: the Flush then finds nothing new.
	evs := appendUntilWake(t, w, oneNodeEvents(400))
	waitTaken(t, w)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	data := bytes.Clone(buf.Bytes())
	defer w.Close(End{})
	f, err := Read(bytes.NewReader(data), "killed.lz4", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Damage != nil || len(f.Events) != len(evs) {
		t.Fatalf("after Flush: %d of %d events readable, damage: %v", len(f.Events), len(evs), f.Damage)
	}
}

// TestDamageInTheFirstBlockNamesIt: a file cut where the first record
// not recovered began in the first lz4 block says the loss starts at that
// block, after the frame header (it said byte offset 0, the whole file).
func TestDamageInTheFirstBlockNamesIt(t *testing.T) {
	w, buf := oneNodeWriter(t)
	for _, ev := range oneNodeEvents(400) {
		w.Append(ev)
	}
	if err := w.Close(End{}); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	cut := data[:len(data)-50_000] // inside the second block
	f, err := Read(bytes.NewReader(cut), "cut.lz4", int64(len(cut)))
	if err != nil {
		t.Fatal(err)
	}
	d := f.Damage
	if d == nil || len(f.Events) == 0 || len(f.Events) >= 400 {
		t.Fatalf("%d events, damage %v", len(f.Events), d)
	}
	// Our frames' header: magic, flags, block descriptor, checksum.
	// The record cut short began in the first block, which the damage
	// is not in: the loss is that block's end and everything from the
	// damage on, not "at most" every byte from the first block (a new
	// user read it as contradicting the records recovered from there).
	want := fmt.Sprintf("lost: the rest of the file after the last event recovered: the end of the lz4 block that starts at byte offset 7, from the record cut short on (the block's records before it were recovered), and the %d bytes from byte offset %d to the end", int64(len(cut))-d.Offset, d.Offset)
	if d.LostFrom != 7 || d.Offset <= 7 || !strings.Contains(d.Error(), want) {
		t.Fatalf("lost from %d: %v", d.LostFrom, d)
	}
	// A file cut short lost what was written after its end too, which
	// the bytes it still has do not bound (an SRE's cut file lost 12 s of
	// its node, said "at most 3785 bytes").
	if !strings.Contains(d.Error(), "and whatever was written after the file's end") {
		t.Fatalf("a cut file's loss is given as bounded: %v", d)
	}
}

// appendUntilWake appends events until one makes a block's worth pending
// (which wakes the compressor) and returns those appended.
func appendUntilWake(t *testing.T, w *Writer, evs []*node.Event) []*node.Event {
	t.Helper()
	w.mu.Lock()
	taken := w.taken
	w.mu.Unlock()
	for i, ev := range evs {
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
		// Woken: a block's worth waits, or the compressor already took
		// it (nothing else makes it take records here: no flush, no
		// interval).
		w.mu.Lock()
		woke := len(w.pending) >= blockSizeByte || w.taken > taken
		w.mu.Unlock()
		if woke {
			return evs[:i+1]
		}
	}
	t.Fatalf("%d events never made a block's worth pending", len(evs))
	return nil
}

// waitTaken waits until the compressor has taken every pending record.
func waitTaken(t *testing.T, w *Writer) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		w.mu.Lock()
		taken := len(w.pending) == 0
		w.mu.Unlock()
		if taken {
			return
		}
	}
	t.Fatal("the compressor did not take the pending records")
}

// TestKilledBusyWriterIsNotDamaged: a busy node killed after a wake wrote
// a full block, before the next flush: the file ends at a block's end,
// inside a record the next flush would have finished. That is an unclosed
// segment, as any kill between flushes leaves, with every event before
// the torn record readable; it was read as a truncated file.
func TestKilledBusyWriterIsNotDamaged(t *testing.T) {
	evs := oneNodeEvents(800)
	w, buf := oneNodeWriter(t)
	defer w.Close(End{})
	for _, ev := range evs[:100] {
		w.Append(ev)
	}
	if err := w.Flush(); err != nil { // a tick: everything so far is written
		t.Fatal(err)
	}
	flushed := len(buf.Bytes())
	evs = append(evs[:100], appendUntilWake(t, w, evs[100:])...)
	waitTaken(t, w)
	// The wake writes the block it filled.
	for deadline := time.Now().Add(10 * time.Second); len(buf.Bytes()) == flushed; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the compressor did not write the block it filled")
		}
	}
	data := bytes.Clone(buf.Bytes()) // killed before the next tick
	f, err := Read(bytes.NewReader(data), "killed.lz4", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Damage != nil || f.Ended || len(f.Events) <= 100 || len(f.Events) >= len(evs) {
		t.Fatalf("%d of %d events, ended %v, damage: %v", len(f.Events), len(evs), f.Ended, f.Damage)
	}
	for i, ev := range f.Events {
		if ev.Seq != evs[i].Seq || !bytes.Equal(ev.Payload, evs[i].Payload) {
			t.Fatalf("event %d reads back as seq %d", i, ev.Seq)
		}
	}
}

// oneNodeWriter is a writer of node a's events into memory.
func oneNodeWriter(t *testing.T) (*Writer, *syncbuf.Buffer) {
	t.Helper()
	h := testHeader()
	h.Recorded = []node.ID{"a"}
	buf := new(syncbuf.Buffer)
	w, err := NewWriter(buf, h, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return w, buf
}
