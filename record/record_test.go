package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/syncbuf"
	"github.com/replaycheck/replaycheck/node"
)

var testNodes = []node.ID{"a", "b", "c"}

func testHeader() Header {
	return Header{System: "test", Nodes: testNodes, Recorded: testNodes, Bug: "none",
		Types: []string{"t.Ping", "t.Pong"}, Driver: "sim", Start: 1_000_000_000, StateHashes: true}
}

// genEvents builds a varied, valid-looking event sequence.
func genEvents(n int, seed uint64) []*node.Event {
	r := rand.New(rand.NewPCG(seed, 1))
	seqs := map[node.ID]uint64{}
	var evs []*node.Event
	t := int64(1_000_000_000)
	for i := range n {
		id := testNodes[r.IntN(len(testNodes))]
		seqs[id]++
		t += int64(r.IntN(5_000_000))
		ev := &node.Event{Node: id, Seq: seqs[id], Lamport: uint64(i + 1), Time: t}
		switch seqs[id] {
		case 1:
			ev.Kind = node.KindInit
		default:
			ev.Kind = []node.Kind{node.KindRecv, node.KindTimer, node.KindInput, node.KindCrash}[r.IntN(4)]
		}
		switch ev.Kind {
		case node.KindRecv:
			ev.From = testNodes[r.IntN(3)]
			ev.MsgSeq, ev.MsgIndex, ev.SendLamport = uint64(r.IntN(100)), uint32(r.IntN(4)), uint64(i)
			ev.MsgType = "t.Pong"
			ev.Payload = bytes.Repeat([]byte{byte(i)}, r.IntN(40))
		case node.KindInput:
			ev.MsgType = "t.Ping"
			ev.Payload = []byte(fmt.Sprintf("input %d", i))
		case node.KindTimer:
			ev.TimerID, ev.TimerName = node.TimerID(r.IntN(9)+1), "tick"
		}
		if r.IntN(3) == 0 {
			ev.Nondet = append(ev.Nondet, node.Nondet{Kind: node.NondetClock, Int: t + int64(r.IntN(1000))})
			ev.Nondet = append(ev.Nondet, node.Nondet{Kind: node.NondetSeed, Int: int64(r.Uint64())})
			ev.Nondet = append(ev.Nondet, node.Nondet{Kind: node.NondetDisk, Key: "k", Found: true, Bytes: []byte("v")})
			ev.Nondet = append(ev.Nondet, node.Nondet{Kind: node.NondetCrypto, Bytes: []byte{1, 2, 3}})
		}
		for j := range r.IntN(3) {
			ev.Sends = append(ev.Sends, node.Send{To: testNodes[j], Type: "t.Ping", Digest: r.Uint64()})
		}
		if r.IntN(2) == 0 {
			ev.TimersSet = append(ev.TimersSet, node.TimerSet{ID: 3, Name: "tick", After: time.Duration(r.IntN(1e9))})
			ev.TimersCancelled = append(ev.TimersCancelled, 2)
		}
		if r.IntN(4) == 0 {
			ev.DiskWrites, ev.DiskDigest = 2, r.Uint64()
		}
		ev.HasStateHash, ev.StateHash = true, r.Uint64()
		evs = append(evs, ev)
	}
	return evs
}

func writeTrace(t testing.TB, evs []*node.Event, opts WriterOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(End{Reason: "test", Time: 42}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	evs := genEvents(5000, 1)
	data := writeTrace(t, evs, WriterOptions{})
	f, err := Read(bytes.NewReader(data), "t.lz4", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Damage != nil {
		t.Fatalf("clean trace reported damage: %v", f.Damage)
	}
	if !f.Ended || len(f.Ends) != 1 || f.Ends[0].Events != 5000 || f.Ends[0].Reason != "test" {
		t.Fatalf("end record: ended=%v ends=%+v", f.Ended, f.Ends)
	}
	if !reflect.DeepEqual(f.Header.Nodes, testNodes) || f.Header.Magic != Magic || f.Header.Version != Version {
		t.Fatalf("header: %+v", f.Header)
	}
	if len(f.Events) != len(evs) {
		t.Fatalf("read %d events, wrote %d", len(f.Events), len(evs))
	}
	for i := range evs {
		if !reflect.DeepEqual(normalize(evs[i]), normalize(f.Events[i])) {
			t.Fatalf("event %d differs:\nwrote %+v\nread  %+v", i, evs[i], f.Events[i])
		}
	}
	if f.Raw <= f.Size {
		t.Errorf("raw %d bytes compressed to %d: no compression", f.Raw, f.Size)
	}
}

// normalize drops what is not recorded and unifies nil and empty.
func normalize(ev *node.Event) node.Event {
	c := *ev
	for i := range c.Sends {
		c.Sends[i].Payload = nil
	}
	if len(c.Payload) == 0 {
		c.Payload = nil
	}
	if len(c.Nondet) == 0 {
		c.Nondet = nil
	}
	if len(c.Sends) == 0 {
		c.Sends = nil
	}
	if len(c.TimersSet) == 0 {
		c.TimersSet = nil
	}
	if len(c.TimersCancelled) == 0 {
		c.TimersCancelled = nil
	}
	for i := range c.Nondet {
		if len(c.Nondet[i].Bytes) == 0 {
			c.Nondet[i].Bytes = nil
		}
	}
	c.Logs = nil
	return c
}

func TestWriterDeterministic(t *testing.T) {
	evs := genEvents(20000, 7)
	a := writeTrace(t, evs, WriterOptions{})
	b := writeTrace(t, evs, WriterOptions{})
	if !bytes.Equal(a, b) {
		t.Fatal("same records produced different bytes")
	}
}

// TestTruncatedEverywhere cuts a trace at many offsets: every cut must yield
// a prefix of the events and a damage error that names the offset.
func TestTruncatedEverywhere(t *testing.T) {
	evs := genEvents(3000, 3)
	// A flush interval makes many small blocks, as a live recorder does.
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
		if i%200 == 0 {
			w.flushNow(t)
		}
	}
	if err := w.Close(End{Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	step := max(1, len(data)/700)
	prev := -1
	for cut := 0; cut < len(data); cut += step {
		f, err := Read(bytes.NewReader(data[:cut]), "cut.lz4", int64(cut))
		if err != nil {
			// Cut inside the first block: nothing to recover.
			var de *DamageError
			if cut > 0 && (!errors.As(err, &de) || !de.Truncated || !de.Nothing) {
				t.Fatalf("cut at %d: unexpected error %v", cut, err)
			}
			continue
		}
		if f.Damage == nil && cut < len(data) {
			// A cut at a block boundary is not damage, just an unclosed segment.
			if f.Ended {
				t.Fatalf("cut at %d of %d: reported as cleanly ended", cut, len(data))
			}
		}
		if f.Damage != nil {
			if !f.Damage.Truncated {
				t.Fatalf("cut at %d: damage not classified as truncation: %v", cut, f.Damage)
			}
			if f.Damage.Offset > int64(cut) || f.Damage.Size != int64(cut) {
				t.Fatalf("cut at %d: damage offset %d size %d", cut, f.Damage.Offset, f.Damage.Size)
			}
			if !strings.Contains(f.Damage.Error(), fmt.Sprintf("at byte offset %d", f.Damage.Offset)) {
				t.Fatalf("message does not name the offset: %v", f.Damage)
			}
		}
		for i, ev := range f.Events {
			if !reflect.DeepEqual(normalize(ev), normalize(evs[i])) {
				t.Fatalf("cut at %d: event %d is not the recorded one", cut, i)
			}
		}
		if len(f.Events) < prev {
			t.Fatalf("cut at %d recovered %d events, fewer than a shorter cut (%d)", cut, len(f.Events), prev)
		}
		prev = len(f.Events)
	}
	if prev < 2000 {
		t.Fatalf("cuts near the end recovered only %d of %d events", prev, len(evs))
	}
}

// flushNow forces a block boundary, as the flush interval does.
func (w *Writer) flushNow(t testing.TB) {
	w.mu.Lock()
	buf := w.pending
	w.pending = nil
	w.mu.Unlock()
	if _, err := w.zw.Write(buf); err != nil {
		t.Fatal(err)
	}
	if err := w.zw.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestKilledWriterLeavesReadablePrefix(t *testing.T) {
	// A writer with a flush interval that is never closed: what a kill -9
	// leaves behind. Everything flushed is readable; the file has no end.
	evs := genEvents(500, 4)
	pr := &syncbuf.Buffer{}
	w, err := NewWriter(pr, testHeader(), WriterOptions{FlushInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	var f *File
	for time.Now().Before(deadline) {
		data := pr.Bytes()
		f, err = Read(bytes.NewReader(data), "killed.lz4", int64(len(data)))
		if err == nil && len(f.Events) == len(evs) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if f == nil || len(f.Events) != len(evs) {
		t.Fatalf("flushed events not readable within 5s")
	}
	if f.Ended {
		t.Fatal("an unclosed trace reads as cleanly ended")
	}
	if f.Damage != nil {
		t.Fatalf("a trace cut at a flush boundary reads as damaged: %v", f.Damage)
	}
	w.Close(End{})
}

func TestCorruptionDetected(t *testing.T) {
	evs := genEvents(3000, 5)
	data := writeTrace(t, evs, WriterOptions{})
	r := rand.New(rand.NewPCG(9, 9))
	for range 50 {
		bad := bytes.Clone(data)
		pos := 100 + r.IntN(len(bad)-100)
		bad[pos] ^= byte(1 << r.IntN(8))
		f, err := Read(bytes.NewReader(bad), "bad.lz4", int64(len(bad)))
		if err != nil {
			continue // the flip hit the frame header: not a trace
		}
		if f.Damage == nil {
			t.Fatalf("bit flip at %d not detected", pos)
		}
		for i, ev := range f.Events {
			if !reflect.DeepEqual(normalize(ev), normalize(evs[i])) {
				t.Fatalf("flip at %d: event %d returned but differs from the recording", pos, i)
			}
		}
	}
}

func TestVersionRejected(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, testHeader(), WriterOptions{})
	w.Close(End{})
	// Re-encode the header with another version.
	h := testHeader()
	h.Magic, h.Version = Magic, 99
	hb, _ := headerEnc.Marshal(h)
	var raw []byte
	raw = appendRecordBytes(raw, TypeHeader, hb)
	_, err := Read(bytes.NewReader(plainLZ4(raw)), "v99.lz4", -1)
	if err == nil || !strings.Contains(err.Error(), "version 99 is not supported") {
		t.Fatalf("version 99: %v", err)
	}
}

func TestLossyWriterRecordsGap(t *testing.T) {
	evs := genEvents(2000, 6)
	blocked := &blockingWriter{release: make(chan struct{})}
	w, err := NewWriter(blocked, testHeader(), WriterOptions{Lossy: true, MaxPending: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, ev := range evs {
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("a lossy writer stalled its caller")
	}
	st := w.Stats()
	if st.Dropped == 0 {
		t.Fatal("nothing dropped although the output never drained")
	}
	close(blocked.release)
	w.Close(End{})
	f, err := Read(bytes.NewReader(blocked.buf.Bytes()), "lossy.lz4", int64(blocked.buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Gaps) == 0 {
		t.Fatal("dropped events left no gap record")
	}
	if uint64(len(f.Events))+st.Dropped != uint64(len(evs)) {
		t.Fatalf("%d events read + %d dropped != %d appended", len(f.Events), st.Dropped, len(evs))
	}
}

type blockingWriter struct {
	release chan struct{}
	buf     bytes.Buffer
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	<-b.release
	return b.buf.Write(p)
}

type failingWriter struct{ after int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("no space left on device")
	}
	f.after--
	return len(p), nil
}

func TestWriteErrorStopsRecording(t *testing.T) {
	evs := genEvents(20000, 8)
	got := make(chan error, 1)
	w, err := NewWriter(&failingWriter{after: 1}, testHeader(), WriterOptions{OnError: func(e error) { got <- e }})
	if err != nil {
		t.Fatal(err)
	}
	var appendErr error
	for _, ev := range evs {
		if appendErr = w.Append(ev); appendErr != nil {
			break
		}
	}
	w.Close(End{})
	select {
	case e := <-got:
		if !strings.Contains(e.Error(), "recording stopped") || !strings.Contains(e.Error(), "no space left") {
			t.Fatalf("OnError got %v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnError not called")
	}
}

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func appendRecordBytes(b []byte, typ byte, body []byte) []byte {
	e := encoder{b: b}
	e.uvarint(uint64(len(body) + 1))
	e.byte1(typ)
	return append(e.b, body...)
}

func plainLZ4(raw []byte) []byte {
	var buf bytes.Buffer
	w, _ := NewWriter(io.Discard, testHeader(), WriterOptions{})
	w.Close(End{})
	zw := newLZ4(&buf)
	zw.Write(raw)
	zw.Close()
	return buf.Bytes()
}

// killedThenRestarted writes what a live node leaves when it is killed and
// restarted: a segment that is never closed, then a closed one appended.
func killedThenRestarted(t *testing.T, first, second []*node.Event, flushFirst bool) []byte {
	t.Helper()
	pr := &syncbuf.Buffer{}
	opts := WriterOptions{}
	if flushFirst {
		opts.FlushInterval = 2 * time.Millisecond
	}
	w, err := NewWriter(pr, testHeader(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range first {
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until the writer has written something and is idle: the bytes
	// then end at a block boundary, as a killed process leaves them.
	var data []byte
	for stable := 0; stable < 5; time.Sleep(10 * time.Millisecond) {
		if d := pr.Bytes(); len(d) > 0 && len(d) == len(data) {
			stable++
		} else {
			data, stable = d, 0
		}
	}
	buf := bytes.NewBuffer(data)
	h := testHeader()
	h.Segment = 1
	w2, err := NewWriter(buf, h, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range second {
		if err := w2.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w2.Close(End{Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestUnclosedSegmentThenNewSegment(t *testing.T) {
	evs := genEvents(600, 8)
	data := killedThenRestarted(t, evs[:300], evs[300:], true)
	f, err := Read(bytes.NewReader(data), "restarted.lz4", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Damage != nil {
		t.Fatalf("damage: %v", f.Damage)
	}
	if len(f.Segments) != 2 || len(f.Ends) != 1 || !f.Ended {
		t.Fatalf("segments %d ends %d ended %v, want 2, 1, true", len(f.Segments), len(f.Ends), f.Ended)
	}
	if f.Segments[1].Segment != 1 {
		t.Fatalf("second segment numbered %d", f.Segments[1].Segment)
	}
	if len(f.Events) != len(evs) {
		t.Fatalf("read %d events, want %d", len(f.Events), len(evs))
	}
	for i, ev := range f.Events {
		if !reflect.DeepEqual(normalize(ev), normalize(evs[i])) {
			t.Fatalf("event %d differs", i)
		}
	}
}

func TestUnclosedSegmentCutInsideRecordThenNewSegment(t *testing.T) {
	// No flush interval: the writer emits only full 256 KiB blocks, which
	// end inside a record; the record cut there is lost with the tail.
	evs := genEvents(4000, 9)
	for _, ev := range evs {
		if ev.Kind == node.KindRecv || ev.Kind == node.KindInput {
			ev.Payload = bytes.Repeat([]byte{byte(ev.Seq)}, 300)
		}
	}
	data := killedThenRestarted(t, evs[:3000], evs[3000:], false)
	f, err := Read(bytes.NewReader(data), "restarted.lz4", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Damage != nil {
		t.Fatalf("damage: %v", f.Damage)
	}
	if len(f.Segments) != 2 {
		t.Fatalf("%d segments, want 2", len(f.Segments))
	}
	lost := len(evs) - len(f.Events)
	if lost <= 0 || lost >= 3000 {
		t.Fatalf("lost %d events of the unclosed segment's 3000", lost)
	}
	kept := 3000 - lost
	for i, ev := range f.Events {
		want := evs[i]
		if i >= kept {
			want = evs[i+lost]
		}
		if !reflect.DeepEqual(normalize(ev), normalize(want)) {
			t.Fatalf("event %d differs", i)
		}
	}
}

func TestFlushMakesRecordsReadable(t *testing.T) {
	evs := genEvents(50, 12)
	pr := &syncbuf.Buffer{}
	w, err := NewWriter(pr, testHeader(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		data := pr.Bytes()
		f, err := Read(bytes.NewReader(data), "flushed.lz4", int64(len(data)))
		if err != nil || f.Damage != nil || len(f.Events) != i+1 {
			t.Fatalf("after Flush %d: err=%v damage=%v events=%d", i, err, f.Damage, len(f.Events))
		}
	}
	w.Close(End{})
	if err := w.Flush(); err != ErrClosed {
		t.Fatalf("Flush after Close: %v", err)
	}
}
