package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/pierrec/lz4/v4"

	"github.com/replaycheck/replaycheck/node"
)

// blockSize is the lz4 block size. A truncated file loses at most the block
// being written; 256 KiB keeps that loss small and the ratio good.
const (
	blockSize     = lz4.Block256Kb
	blockSizeByte = 256 << 10
)

// WriterOptions tune a Writer.
type WriterOptions struct {
	// FlushInterval bounds how long an appended record may wait before it
	// reaches the file (the live recorder uses 100 ms). Zero means records
	// reach the file when a block fills and at Close only, which makes the
	// output a function of the records alone: the simulator's traces are
	// byte-identical across runs because of it.
	FlushInterval time.Duration
	// MaxPending bounds the encoded bytes waiting for compression (default
	// 8 MiB). Beyond it a Lossy writer drops events and records a gap; any
	// other writer makes Append wait.
	MaxPending int
	// Lossy makes Append never wait: a recorder must not stall the node it
	// records.
	Lossy bool
	// OnError is told once about the first write error; recording stops
	// there and Append returns that error from then on.
	OnError func(error)
}

// Stats counts what a Writer did.
type Stats struct {
	Events  uint64 // event records written
	Dropped uint64 // events dropped by a lossy writer
	Raw     int64  // uncompressed bytes handed to the compressor
}

// Writer writes one segment of a trace. Append encodes a record into an
// in-memory buffer; a background goroutine compresses and writes.
type Writer struct {
	opts WriterOptions
	out  io.Writer
	zw   *lz4.Writer

	hdr Header // for a stop notice

	mu       sync.Mutex
	drained  *sync.Cond
	pending  []byte
	spare    []byte
	scratch  encoder
	tab      *tables
	lastTime int64
	gaps     map[node.ID]*Gap
	gapOrder []node.ID
	stats    Stats
	err      error
	closed   bool
	// What reached the file, for a writer stopped by a write error:
	// taken is the stream offset of pending[0]; inflight lists the event
	// records not yet known to be in the file (from inHead on), with the
	// stream offset where each ends; written is the last seq of each
	// node in the file (0: none; by index in the header's nodes), lost
	// the first seq of each node refused after the error.
	taken    int64
	inflight []inflightEvent
	inHead   int
	written  []uint64
	writtenN uint64
	lost     map[node.ID]uint64
	noticed  bool // the stop notice is in the file

	// The compressor's side, used by the loop alone: zout collects what
	// it emits until a whole block (or frame end) can go to out in one
	// write; zin counts the stream bytes given to it, zfill those of the
	// block it is filling, zdone those in blocks written to out.
	zout  bytes.Buffer
	zin   int64
	zfill int
	zdone int64

	wake    chan struct{}
	flushes chan chan error
	done    chan struct{}
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("trace writer is closed")

// NewWriter starts a segment on out with header h (Magic, Version and Codec
// are filled in). The caller closes out after Close.
func NewWriter(out io.Writer, h Header, opts WriterOptions) (*Writer, error) {
	h.Magic, h.Version = Magic, Version
	if h.Codec == "" {
		h.Codec = node.CodecName
	}
	if err := h.check(); err != nil {
		return nil, fmt.Errorf("cannot record this run: %w", err)
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = 8 << 20
	}
	hb, err := headerEnc.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("encode trace header: %w", err)
	}
	w := &Writer{
		opts:     opts,
		out:      out,
		hdr:      h,
		tab:      newTables(&h),
		lastTime: h.Start,
		gaps:     map[node.ID]*Gap{},
		written:  make([]uint64, len(h.Nodes)),
		lost:     map[node.ID]uint64{},
		wake:     make(chan struct{}, 1),
		flushes:  make(chan chan error),
		done:     make(chan struct{}),
	}
	if w.zw, err = newLZ4Writer(&w.zout); err != nil {
		return nil, err
	}
	w.drained = sync.NewCond(&w.mu)
	w.appendRecord(TypeHeader, hb)
	go w.loop()
	return w, nil
}

type inflightEvent struct {
	end  int64  // stream offset after the record
	node uint64 // index in the header's nodes
	seq  uint64
}

func newLZ4Writer(out io.Writer) (*lz4.Writer, error) {
	zw := lz4.NewWriter(out)
	if err := zw.Apply(lz4.BlockSizeOption(blockSize), lz4.BlockChecksumOption(true),
		lz4.ChecksumOption(true), lz4.ConcurrencyOption(1)); err != nil {
		return nil, fmt.Errorf("configure lz4: %w", err)
	}
	return zw, nil
}

func (w *Writer) appendRecord(typ byte, body []byte) {
	var e encoder
	e.b = w.pending
	e.uvarint(uint64(len(body) + 1))
	e.byte1(typ)
	e.b = append(e.b, body...)
	w.pending = e.b
	if len(w.pending) >= blockSizeByte {
		w.signal()
	}
}

func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Append records one dispatched event.
func (w *Writer) Append(ev *node.Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		if _, ok := w.lost[ev.Node]; !ok {
			w.lost[ev.Node] = ev.Seq
		}
		return w.err
	}
	for len(w.pending) > w.opts.MaxPending {
		if w.opts.Lossy {
			w.drop(ev)
			return nil
		}
		w.signal()
		w.drained.Wait()
		if w.err != nil {
			return w.err
		}
	}
	w.flushGaps()
	w.scratch.b = w.scratch.b[:0]
	if list, n := longestList(ev); n > MaxListElements {
		// Readers refuse such a record too.
		if w.opts.Lossy {
			w.dropFor(ev, fmt.Sprintf("event of %d %s, over the limit of a trace record (%d)", n, list, MaxListElements))
			return nil
		}
		return fmt.Errorf("record event %s seq %d: it has %d %s, more than a trace record holds (%d)", ev.Node, ev.Seq, n, list, MaxListElements)
	}
	if err := encodeEvent(&w.scratch, w.tab, ev, w.lastTime); err != nil {
		return fmt.Errorf("record event %s seq %d: %w", ev.Node, ev.Seq, err)
	}
	if n := len(w.scratch.b) + 1; n > MaxRecord {
		// Readers refuse such a record as damage: written, it would
		// make the whole file unreadable from here on.
		if w.opts.Lossy {
			// A live node goes on: the event is a gap the trace says
			// why of, as one the recorder fell behind on.
			w.dropFor(ev, fmt.Sprintf("event of %d bytes, over the record limit (%d)", n, MaxRecord))
			return nil
		}
		return fmt.Errorf("record event %s seq %d: it takes %d bytes (its message, disk reads and sends), more than a trace record holds (%d): a value that large cannot be recorded",
			ev.Node, ev.Seq, n, MaxRecord)
	}
	w.lastTime = ev.Time
	w.stats.Events++
	w.appendRecord(TypeEvent, w.scratch.b)
	ni, _ := binary.Uvarint(w.scratch.b) // an event body begins with its node's index
	w.inflight = append(w.inflight, inflightEvent{end: w.taken + int64(len(w.pending)), node: ni, seq: ev.Seq})
	return nil
}

// drop notes an event a lossy writer could not keep.
func (w *Writer) drop(ev *node.Event) { w.dropFor(ev, "recorder fell behind: buffer full") }

// dropFor notes an event not kept, and why (a gap that starts with it
// gives the first reason).
func (w *Writer) dropFor(ev *node.Event, why string) {
	w.stats.Dropped++
	g, ok := w.gaps[ev.Node]
	if !ok {
		g = &Gap{Node: ev.Node, From: ev.Seq, Reason: why}
		w.gaps[ev.Node] = g
		w.gapOrder = append(w.gapOrder, ev.Node)
	}
	g.To = ev.Seq
	w.signal()
}

// flushGaps writes the gap records of events dropped before this one.
func (w *Writer) flushGaps() {
	for _, id := range w.gapOrder {
		b, err := headerEnc.Marshal(w.gaps[id])
		if err == nil {
			w.appendRecord(TypeGap, b)
		}
		delete(w.gaps, id)
	}
	w.gapOrder = w.gapOrder[:0]
}

// Gap records that seqs from..to of a node were not recorded (to = 0: from
// there on).
func (w *Writer) Gap(g Gap) error {
	g.Reason = clipReason(g.Reason)
	if err := g.check(w.tab); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	b, err := headerEnc.Marshal(g)
	if err != nil {
		return err
	}
	w.appendRecord(TypeGap, b)
	return nil
}

// Stats reports what the writer has done so far.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Err is the first write error, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Flush writes everything appended so far to the underlying writer as
// complete lz4 blocks, and returns when it has. (Without it, records reach
// the writer when a block fills, on the flush interval, and at Close.)
func (w *Writer) Flush() error {
	done := make(chan error, 1)
	select {
	case w.flushes <- done:
		return <-done
	case <-w.done:
		return ErrClosed
	}
}

// Close writes the end record, flushes and finishes the lz4 frame. It does
// not close the underlying writer.
func (w *Writer) Close(end End) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	if w.err == nil {
		w.flushGaps()
		end.Reason = clipReason(end.Reason)
		end.Events = w.stats.Events
		if b, err := headerEnc.Marshal(end); err == nil {
			w.appendRecord(TypeEnd, b)
		}
	}
	w.closed = true
	w.mu.Unlock()
	w.signal()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// loop moves pending records to the compressor: when a block's worth is
// waiting, on the flush interval, and at Close.
func (w *Writer) loop() {
	defer close(w.done)
	var tick <-chan time.Time
	if w.opts.FlushInterval > 0 {
		t := time.NewTicker(w.opts.FlushInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		flush := false
		var reply chan error
		select {
		case <-w.wake:
		case <-tick:
			flush = true
		case reply = <-w.flushes:
			flush = true
		}
		w.mu.Lock()
		buf := w.pending
		w.pending = w.spare[:0]
		w.spare = nil
		w.taken += int64(len(buf))
		closed, failed := w.closed, w.err != nil
		w.drained.Broadcast()
		w.mu.Unlock()

		var err error
		if !failed && len(buf) > 0 {
			err = w.compress(buf)
		}
		// The block being filled may hold records a wake compressed
		// without flushing: a flush writes them even when nothing new
		// came since.
		if !failed && err == nil && flush && w.zfill > 0 {
			err = w.zflush(w.zw.Flush)
		}
		if !failed && err == nil && closed {
			err = w.zflush(w.zw.Close)
		}
		w.mu.Lock()
		w.spare = buf[:0]
		if err == nil && !failed {
			w.stats.Raw += int64(len(buf))
		}
		w.markWritten()
		var notice []byte
		switch {
		case err != nil && w.err == nil:
			w.err = w.stopped(err)
			if w.opts.OnError != nil {
				go w.opts.OnError(w.err)
			}
			notice = w.notice()
		case failed && closed && !w.noticed:
			notice = w.notice() // the disk may have room again
		}
		w.drained.Broadcast()
		ferr := w.err
		w.mu.Unlock()
		if notice != nil {
			if _, err := w.out.Write(notice); err == nil {
				w.mu.Lock()
				w.noticed = true
				w.mu.Unlock()
			}
		}
		if reply != nil {
			reply <- ferr
		}
		if closed {
			return
		}
	}
}

// compress hands buf to the compressor a block at a time, and each block
// it completes to out in one write, so that it is known which stream bytes
// reached out (zdone) when a write fails. The lz4 output is the same as
// from one call.
func (w *Writer) compress(buf []byte) error {
	for len(buf) > 0 {
		n := min(len(buf), blockSizeByte-w.zfill)
		if _, err := w.zw.Write(buf[:n]); err != nil {
			return err
		}
		buf = buf[n:]
		w.zin += int64(n)
		w.zfill += n
		if w.zfill == blockSizeByte {
			w.zfill = 0
			if err := w.emit(); err != nil {
				return err
			}
		}
	}
	return nil
}

// zflush runs the compressor's Flush or Close, which emit the block being
// filled (and for Close the frame's end), and writes what they emitted.
func (w *Writer) zflush(f func() error) error {
	if err := f(); err != nil {
		return err
	}
	w.zfill = 0
	return w.emit()
}

func (w *Writer) emit() error {
	if w.zout.Len() == 0 {
		return nil
	}
	_, err := w.out.Write(w.zout.Bytes())
	w.zout.Reset()
	if err != nil {
		return err
	}
	w.zdone = w.zin - int64(w.zfill)
	return nil
}

// markWritten moves the event records now in the file out of inflight.
func (w *Writer) markWritten() {
	for w.inHead < len(w.inflight) && w.inflight[w.inHead].end <= w.zdone {
		e := w.inflight[w.inHead]
		w.written[e.node] = e.seq
		w.writtenN++
		w.inHead++
	}
	if w.inHead > 1024 && w.inHead > len(w.inflight)/2 {
		w.inflight = append(w.inflight[:0], w.inflight[w.inHead:]...)
		w.inHead = 0
	}
}

// StoppedError is the error that stopped a Writer: a write to its file
// failed, and nothing after the last record in the file was recorded.
type StoppedError struct {
	Cause    error
	DiskFull bool
	// Last is the last seq of each node that reached the file; Events
	// counts the event records that did.
	Last   map[node.ID]uint64
	Events uint64
	// Recorded lists the nodes the segment records.
	Recorded []node.ID
}

func (e *StoppedError) Error() string {
	what := "write error"
	if e.DiskFull {
		what = "disk full"
	}
	if len(e.Recorded) == 1 {
		id := e.Recorded[0]
		if seq, ok := e.Last[id]; ok {
			return fmt.Sprintf("recording stopped: %s at seq %d of node %s: %v", what, seq, id, e.Cause)
		}
		return fmt.Sprintf("recording stopped: %s before any event of node %s reached the trace: %v", what, id, e.Cause)
	}
	return fmt.Sprintf("recording stopped: %s after %d events: %v", what, e.Events, e.Cause)
}

func (e *StoppedError) Unwrap() error { return e.Cause }

func (w *Writer) stopped(err error) *StoppedError {
	last := map[node.ID]uint64{}
	for i, seq := range w.written {
		if seq != 0 {
			last[w.tab.nodes[i]] = seq
		}
	}
	return &StoppedError{Cause: err, DiskFull: errors.Is(err, syscall.ENOSPC), Last: last, Events: w.writtenN, Recorded: w.hdr.Recorded}
}

// notice builds the frame a stopped writer appends so that the trace says
// why it ends (see Header.Continues): a copy of the header, a gap from
// each recorded node's first seq not in the file on, and an end record.
// It is one small frame, written in one call, so that it fits in the space
// the failed write left, or not at all.
func (w *Writer) notice() []byte {
	se, _ := w.err.(*StoppedError)
	if se == nil {
		return nil
	}
	what := "write error"
	if se.DiskFull {
		what = "disk full"
	}
	h := w.hdr
	h.Continues = true
	var e encoder
	add := func(typ byte, v any) {
		b, err := headerEnc.Marshal(v)
		if err != nil {
			return
		}
		e.uvarint(uint64(len(b) + 1))
		e.byte1(typ)
		e.b = append(e.b, b...)
	}
	add(TypeHeader, h)
	for _, id := range h.Recorded {
		g := Gap{Node: id, To: 0}
		if seq := w.written[w.tab.nodeIdx[id]]; seq != 0 {
			g.From = seq + 1
			g.Reason = fmt.Sprintf("recording stopped: %s at seq %d", what, seq)
		} else {
			g.From = w.firstLost(id)
			if g.From == 0 {
				continue // nothing of the node was recorded or refused
			}
			g.Reason = fmt.Sprintf("recording stopped: %s before seq %d", what, g.From)
		}
		add(TypeGap, g)
	}
	add(TypeEnd, End{Reason: clipReason(se.Error()), Events: se.Events, Time: w.lastTime})
	var b bytes.Buffer
	zw, err := newLZ4Writer(&b)
	if err != nil {
		return nil
	}
	if _, err := zw.Write(e.b); err != nil || zw.Close() != nil {
		return nil
	}
	return b.Bytes()
}

// firstLost is the first seq of a node none of whose events reached the
// file: the first still in flight, dropped, or refused (0 if none).
func (w *Writer) firstLost(id node.ID) uint64 {
	i := w.tab.nodeIdx[id]
	for _, e := range w.inflight[w.inHead:] {
		if e.node == i {
			return e.seq
		}
	}
	if g, ok := w.gaps[id]; ok {
		return g.From
	}
	return w.lost[id]
}

// longestList names an event's longest list and its length.
func longestList(ev *node.Event) (string, int) {
	name, n := "nondeterministic values (clock readings, seeds, disk reads)", len(ev.Nondet)
	for _, l := range []struct {
		name string
		n    int
	}{{"sends", len(ev.Sends)}, {"timers set", len(ev.TimersSet)}, {"timers cancelled", len(ev.TimersCancelled)}} {
		if l.n > n {
			name, n = l.name, l.n
		}
	}
	return name, n
}
