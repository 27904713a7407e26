package record

import (
	"errors"
	"fmt"
	"io"
	"sync"
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

	mu       sync.Mutex
	drained  *sync.Cond
	pending  []byte
	spare    []byte
	scratch  encoder
	tab      *tables
	lastTime int64
	lastSeq  map[node.ID]uint64
	gaps     map[node.ID]*Gap
	gapOrder []node.ID
	stats    Stats
	err      error
	closed   bool

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
	zw := lz4.NewWriter(out)
	if err := zw.Apply(lz4.BlockSizeOption(blockSize), lz4.BlockChecksumOption(true),
		lz4.ChecksumOption(true), lz4.ConcurrencyOption(1)); err != nil {
		return nil, fmt.Errorf("configure lz4: %w", err)
	}
	hb, err := headerEnc.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("encode trace header: %w", err)
	}
	w := &Writer{
		opts:     opts,
		out:      out,
		zw:       zw,
		tab:      newTables(&h),
		lastTime: h.Start,
		lastSeq:  map[node.ID]uint64{},
		gaps:     map[node.ID]*Gap{},
		wake:     make(chan struct{}, 1),
		flushes:  make(chan chan error),
		done:     make(chan struct{}),
	}
	w.drained = sync.NewCond(&w.mu)
	w.appendRecord(TypeHeader, hb)
	go w.loop()
	return w, nil
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
	if err := encodeEvent(&w.scratch, w.tab, ev, w.lastTime); err != nil {
		return fmt.Errorf("record event %s seq %d: %w", ev.Node, ev.Seq, err)
	}
	w.lastTime = ev.Time
	w.lastSeq[ev.Node] = ev.Seq
	w.stats.Events++
	w.appendRecord(TypeEvent, w.scratch.b)
	return nil
}

// drop notes an event a lossy writer could not keep.
func (w *Writer) drop(ev *node.Event) {
	w.stats.Dropped++
	g, ok := w.gaps[ev.Node]
	if !ok {
		g = &Gap{Node: ev.Node, From: ev.Seq, Reason: "recorder fell behind: buffer full"}
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
		closed, failed := w.closed, w.err != nil
		w.drained.Broadcast()
		w.mu.Unlock()

		var err error
		if !failed && len(buf) > 0 {
			_, err = w.zw.Write(buf)
			if err == nil && flush {
				err = w.zw.Flush()
			}
		}
		if !failed && err == nil && closed {
			err = w.zw.Close()
		}
		w.mu.Lock()
		w.spare = buf[:0]
		if err == nil && !failed {
			w.stats.Raw += int64(len(buf))
		}
		if err != nil && w.err == nil {
			w.err = w.stoppedError(err)
			if w.opts.OnError != nil {
				go w.opts.OnError(w.err)
			}
		}
		w.drained.Broadcast()
		ferr := w.err
		w.mu.Unlock()
		if reply != nil {
			reply <- ferr
		}
		if closed {
			return
		}
	}
}

func (w *Writer) stoppedError(err error) error {
	var parts []string
	for id, seq := range w.lastSeq {
		parts = append(parts, fmt.Sprintf("%s seq %d", id, seq))
	}
	where := "before any event"
	if len(parts) == 1 {
		where = "at " + parts[0]
	} else if len(parts) > 1 {
		where = fmt.Sprintf("after %d events", w.stats.Events)
	}
	return fmt.Errorf("recording stopped %s: %w", where, err)
}
