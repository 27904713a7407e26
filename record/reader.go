package record

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/fxamacker/cbor/v2"
	"github.com/pierrec/lz4/v4"

	"github.com/replaycheck/replaycheck/internal/ahead"
	"github.com/replaycheck/replaycheck/internal/regular"
	"github.com/replaycheck/replaycheck/node"
)

// RecordKind says what Reader.Next read.
type RecordKind int

// The record kinds Next returns.
const (
	RecEvent RecordKind = iota + 1
	RecHeader
	RecGap
	RecEnd
)

// ErrNotTrace is wrapped by errors about input that is not a trace at all:
// not an lz4 frame, or an lz4 frame that holds something else.
var ErrNotTrace = errors.New("not a replaycheck trace")

// DamageError describes a trace that could not be read to its end. Every
// complete record before the damage was returned. As an error from
// NewReader, ReadFile or Read, it says the damage came before the first
// segment header was complete: nothing could be recovered (Nothing).
type DamageError struct {
	File      string
	Truncated bool // the file or the data ends inside a block or record (vs corrupt data)
	// Offset is the file offset of the damage: the start of the lz4 block
	// (or frame) that could not be decoded, or of the block holding the
	// malformed record.
	Offset int64
	// LostFrom is the file offset of the lz4 block that holds the first
	// byte not recovered (the start of the record the damage cut short);
	// everything after it is lost. LostFrom <= Offset.
	LostFrom int64
	Size     int64 // file size (-1 if unknown)
	Records  int   // complete records recovered after the first header
	Nothing  bool  // damage before the first header: nothing was recovered
	LastNode node.ID
	LastSeq  uint64
	Cause    error
}

func (e *DamageError) Error() string {
	what := "corrupt"
	if e.Truncated {
		what = "truncated"
	}
	msg := fmt.Sprintf("%s: trace %s at byte offset %d: %v", e.File, what, e.Offset, e.Cause)
	if e.Nothing {
		return msg + "; nothing could be recovered"
	}
	last := "no event"
	if e.LastNode != "" {
		last = fmt.Sprintf("the last event %s seq %d", e.LastNode, e.LastSeq)
	}
	// The lost bytes are counted from the start of a block, the only
	// place the compressed stream can be cut: an upper bound when the
	// block's earlier records were recovered.
	lost := "the rest of the file after the last event recovered"
	switch {
	case e.LostFrom != e.Offset:
		// A record that began in an earlier block than the damage: that
		// block's records before it were recovered, so the bytes from
		// its start are not all lost; say the two parts apart.
		lost += fmt.Sprintf(": the end of the lz4 block that starts at byte offset %d, from the record cut short on (the block's records before it were recovered), and ", e.LostFrom)
		if e.Size >= 0 {
			lost += fmt.Sprintf("the %s from byte offset %d to the end", bytesCount(e.Size-e.Offset), e.Offset)
		} else {
			lost += fmt.Sprintf("everything from byte offset %d", e.Offset)
		}
	case e.Size >= 0:
		lost += fmt.Sprintf(", at most %s from byte offset %d", bytesCount(e.Size-e.LostFrom), e.LostFrom)
	default:
		lost += fmt.Sprintf(", from byte offset %d at most", e.LostFrom)
	}
	if e.Truncated {
		// The bytes counted are those the file still has: what was
		// written after the cut is gone too, and the file cannot say how
		// much (an SRE's file cut mid-way lost 12 s of its node, "at most
		// 3785 bytes").
		lost += ", and whatever was written after the file's end (a file cut short: how much, the file cannot tell; other nodes' receipts of its messages can, see the warnings of where its recording stops)"
	}
	return fmt.Sprintf("%s; %d complete records recovered (%s); lost: %s", msg, e.Records, last, lost)
}

func (e *DamageError) Unwrap() error { return e.Cause }

// bytesCount is n bytes in words: "1 byte", "2 bytes".
func bytesCount(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// counter counts the compressed bytes the lz4 decoder consumed and keeps
// the last four, so that a reader can tell an lz4 frame magic from a block
// size, and the first five (magic and frame flags), so that it can tell an
// lz4 file from another and where its first block begins.
type counter struct {
	r     io.Reader
	n     int64
	tail  [4]byte
	head  [5]byte
	headN int
}

// firstBlock is the file offset of the first frame's first block (the end
// of its header: magic, flags, block descriptor, optional content size and
// dictionary id, header checksum), or 0 if the flags were not read.
func (c *counter) firstBlock() int64 {
	if c.headN < len(c.head) {
		return 0
	}
	n := int64(7)
	if flg := c.head[4]; flg&0x08 != 0 {
		n += 8
	}
	if c.head[4]&0x01 != 0 {
		n += 4
	}
	return n
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.headN < len(c.head) {
		c.headN += copy(c.head[c.headN:], p[:n])
	}
	if n >= len(c.tail) {
		copy(c.tail[:], p[n-len(c.tail):n])
	} else if n > 0 {
		copy(c.tail[:], c.tail[n:])
		copy(c.tail[len(c.tail)-n:], p[:n])
	}
	c.n += int64(n)
	return n, err
}

// frameMagic opens every lz4 frame (0x184D2204, little-endian).
var frameMagic = [TraceMagicLen]byte{0x04, 0x22, 0x4d, 0x18}

// TraceMagicLen is how many first bytes HasTraceMagic reads.
const TraceMagicLen = 4

// HasTraceMagic tells whether head begins as every trace does, with an
// lz4 frame's magic number: what tells a trace from a script or a note
// named like one, before reading it.
func HasTraceMagic(head []byte) bool {
	return len(head) >= TraceMagicLen && [TraceMagicLen]byte(head[:TraceMagicLen]) == frameMagic
}

func newLZ4Reader(r io.Reader, blk *blocks) (*lz4.Reader, error) {
	zr := lz4.NewReader(r)
	if err := zr.Apply(lz4.ConcurrencyOption(1), lz4.OnBlockDoneOption(blk.done)); err != nil {
		return nil, err
	}
	return zr, nil
}

// blocks maps decompressed positions to the lz4 blocks they came from. The
// lz4 decoder consumes a whole block (and its checksum) before it hands out
// any of it, and calls done for every piece it hands out.
type blocks struct {
	cnt *counter
	// lastGood is the file offset at the end of the last block decoded
	// without error.
	lastGood int64
	raw      int64 // decompressed bytes handed out
	// starts lists the blocks handed out that may still hold unread
	// bytes, oldest first: where each begins in the decompressed stream
	// and in the file.
	starts []blockStart
}

type blockStart struct{ raw, file int64 }

func (b *blocks) done(n int) {
	if b.cnt.n != b.lastGood {
		// The first block begins after the frame header, not at 0.
		b.starts = append(b.starts, blockStart{raw: b.raw, file: max(b.lastGood, b.cnt.firstBlock())})
		b.lastGood = b.cnt.n
	}
	b.raw += int64(n)
}

// fileOffset returns the file offset of the block holding decompressed
// position pos (the next block to decode when pos is past every decoded
// byte), and forgets the blocks before it: positions asked for never go
// back.
func (b *blocks) fileOffset(pos int64) int64 {
	if pos >= b.raw {
		b.starts = b.starts[:0]
		return b.lastGood
	}
	i := 0
	for i+1 < len(b.starts) && b.starts[i+1].raw <= pos {
		i++
	}
	b.starts = append(b.starts[:0], b.starts[i:]...)
	if len(b.starts) == 0 {
		return b.lastGood
	}
	return b.starts[0].file
}

// lastErr remembers the last error the lz4 decoder returned, which the
// buffered reader above it may report as a plain end of data.
type lastErr struct {
	r   io.Reader
	err error
}

func (l *lastErr) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if err != nil {
		l.err = err
	}
	return n, err
}

// Reader streams the records of a trace.
type Reader struct {
	name string
	size int64
	cnt  *counter
	blk  *blocks
	zr   *lastErr
	br   *bufio.Reader
	pos  int64 // decompressed bytes consumed
	// recStart is the decompressed position of the record being read or
	// last read.
	recStart int64

	first    *Header
	hdr      *Header
	tab      *tables
	segments int
	lastTime int64
	buf      []byte

	records  int
	raw      int64 // decompressed bytes of complete records
	lastNode node.ID
	lastSeq  uint64
	ended    bool // the current segment has its end record
	newFrame bool // an unclosed frame was followed by a new one
	notice   bool // reading a writer's stop notice (Header.Continues)
	// frameStart is the file offset of the frame nextFrame last moved to
	// (0: the first).
	frameStart int64
	gap        Gap
	end        End
	err        error
}

// NewReader reads the header of the trace in r. name is used in errors;
// size is the file size, or -1 if unknown. A file that is not a trace gets
// an error wrapping ErrNotTrace; a trace damaged before its header is
// complete, a *DamageError (nothing could be recovered).
func NewReader(r io.Reader, name string, size int64) (*Reader, error) {
	cnt := &counter{r: r}
	blk := &blocks{cnt: cnt}
	zr, err := newLZ4Reader(cnt, blk)
	if err != nil {
		return nil, err
	}
	src := &lastErr{r: zr}
	rd := &Reader{name: name, size: size, cnt: cnt, blk: blk, zr: src, br: bufio.NewReaderSize(src, 64<<10)}
	// Tell a foreign file from a damaged trace before reading the header:
	// an lz4 file whose data does not begin like a header record is not
	// a trace, however it goes on.
	head, perr := rd.br.Peek(16)
	if len(head) == 0 {
		return nil, rd.beforeHeader(perr)
	}
	if !plausibleHeader(head) {
		return nil, fmt.Errorf("%s: %w: an lz4 file whose data does not begin with a trace header", name, ErrNotTrace)
	}
	typ, body, err := rd.readRecord()
	if err != nil {
		var de *DamageError
		if errors.As(err, &de) {
			de.Nothing = true
			return nil, de
		}
		return nil, rd.beforeHeader(err)
	}
	if typ != TypeHeader {
		return nil, fmt.Errorf("%s: %w: the first record is not a header", name, ErrNotTrace)
	}
	h, err := decodeHeader(body)
	if err == nil {
		err = rd.startSegment(h)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rd.first = rd.hdr
	return rd, nil
}

// beforeHeader describes a failure to decode anything: the file is empty,
// is not an lz4 frame, holds no data, or its first block is damaged.
func (r *Reader) beforeHeader(err error) error {
	head := r.cnt.head[:min(r.cnt.headN, len(frameMagic))]
	switch {
	case r.cnt.n == 0:
		return fmt.Errorf("%s: %w: the file is empty", r.name, ErrNotTrace)
	case !bytes.HasPrefix(frameMagic[:], head):
		return fmt.Errorf("%s: %w: not an lz4 file (it begins with % x)", r.name, ErrNotTrace, head)
	case err == io.EOF:
		return fmt.Errorf("%s: %w: an lz4 file with no data", r.name, ErrNotTrace)
	}
	de := r.readDamage()
	de.Nothing = true
	return de
}

// plausibleHeader reports whether the first decompressed bytes can begin a
// header record: a length, the type byte, a CBOR map.
func plausibleHeader(head []byte) bool {
	n, k := binary.Uvarint(head)
	if k < 0 || (k == 0 && len(head) >= binary.MaxVarintLen64) {
		return false
	}
	if k == 0 {
		return true // too short to tell: let the damage report say why
	}
	if n < 2 || n > MaxRecord {
		return false
	}
	rest := head[k:]
	if len(rest) > 0 && rest[0] != TypeHeader {
		return false
	}
	if len(rest) > 1 && rest[1]>>5 != 5 { // CBOR major type 5: a map
		return false
	}
	return true
}

// decodeHeader decodes and checks a header record's body. Its errors do
// not name the file.
func decodeHeader(body []byte) (*Header, error) {
	var h Header
	if err := cbor.Unmarshal(body, &h); err != nil {
		return nil, fmt.Errorf("%w: unreadable header: %v", ErrNotTrace, err)
	}
	if h.Magic != Magic {
		return nil, fmt.Errorf("%w: header magic %q", ErrNotTrace, h.Magic)
	}
	if h.Version != Version {
		return nil, fmt.Errorf("trace format version %d is not supported (this build reads version %d)", h.Version, Version)
	}
	if err := h.check(); err != nil {
		return nil, err
	}
	h.escapeText()
	if err := node.SupportedCodec(h.Codec); err != nil {
		// Replay could not decode a single message.
		return nil, err
	}
	return &h, nil
}

func (r *Reader) startSegment(hp *Header) error {
	h := *hp
	if r.first != nil {
		if h.System != r.first.System {
			// Named by its place in the file: the number in its
			// header may be anything.
			return fmt.Errorf("segment %d records system %q, but segment 0 records %q", r.segments, h.System, r.first.System)
		}
	}
	r.hdr = &h
	r.tab = newTables(&h)
	r.lastTime = h.Start
	r.segments++
	r.ended, r.notice = false, false
	return nil
}

// readRecord reads one record's type and body (valid until the next call).
// It moves on to a new lz4 frame that follows an unclosed one (nextFrame),
// in a loop: each move consumes that frame's magic, so it ends.
func (r *Reader) readRecord() (byte, []byte, error) {
	for {
		typ, body, err := r.readRecordInFrame()
		if err == errNextFrame {
			continue
		}
		return typ, body, err
	}
}

// errNextFrame says that readRecordInFrame moved to a new frame and the
// record must be read again from there.
var errNextFrame = errors.New("continued in the next lz4 frame")

func (r *Reader) readRecordInFrame() (byte, []byte, error) {
	r.recStart = r.pos
	if len(r.blk.starts) > 16 {
		r.blk.fileOffset(r.recStart) // forget the blocks read past
	}
	n, err := r.readUvarint()
	if err != nil {
		if err == io.EOF {
			return 0, nil, io.EOF
		}
		if r.nextFrame() {
			return 0, nil, errNextFrame
		}
		if r.killedAtBlock(err) {
			return 0, nil, io.EOF
		}
		if err == errLengthOverflow {
			return 0, nil, r.damage(err)
		}
		return 0, nil, r.readDamage()
	}
	if n == 0 || n > MaxRecord {
		return 0, nil, r.damage(fmt.Errorf("record length %d outside 1..%d", n, MaxRecord))
	}
	// Grow the buffer as data arrives, so a damaged length costs no more
	// memory than the data actually present.
	r.buf = r.buf[:0]
	for remaining := int(n); remaining > 0; {
		chunk := min(remaining, 1<<20)
		start := len(r.buf)
		r.buf = append(r.buf, make([]byte, chunk)...)
		k, err := io.ReadFull(r.br, r.buf[start:])
		r.pos += int64(k)
		if err != nil {
			if r.nextFrame() {
				return 0, nil, errNextFrame
			}
			if r.killedAtBlock(err) {
				return 0, nil, io.EOF
			}
			return 0, nil, r.readDamage()
		}
		remaining -= chunk
	}
	r.raw += int64(uvarintLen(n)) + int64(n)
	return r.buf[0], r.buf[1:], nil
}

// killedAtBlock reports whether reading stopped because the file ends
// exactly after the last block decoded, in a frame never closed: what a
// writer killed between flushes leaves (a killed process). The segment is
// just not ended. Blocks have a fixed size, so the last one usually ends
// inside a record whose rest the next flush would have written: that
// record is lost with the events the kill kept from being flushed, as
// docs/recording.md says, not damage.
func (r *Reader) killedAtBlock(err error) bool {
	if !errors.Is(err, io.ErrUnexpectedEOF) && err != io.EOF {
		return false
	}
	zerr := r.zr.err
	return r.cnt.n == r.blk.lastGood && (zerr == nil || zerr == io.EOF || errors.Is(zerr, io.ErrUnexpectedEOF))
}

// nextFrame reports whether the lz4 decoder stopped because a frame that
// was never closed (its writer was killed) is followed by a new frame, as a
// restarted live node appends one to its file, and if so resumes reading at
// the new frame. The decoder then read the new frame's magic where it
// expected the next block's size, right after the last good block. A record
// the unclosed frame ended inside is lost, like the rest of the killed
// writer's unflushed tail.
//
// The unclosed frame must have yielded at least one block since it began
// (lastGood > frameStart): otherwise the magic is the current frame's own,
// re-read after a frame that ends right after its magic, and moving on
// would read the same four bytes forever.
func (r *Reader) nextFrame() bool {
	if r.cnt.n != r.blk.lastGood+int64(len(frameMagic)) || r.cnt.tail != frameMagic || r.blk.lastGood <= r.frameStart {
		return false
	}
	zr, err := newLZ4Reader(io.MultiReader(bytes.NewReader(frameMagic[:]), r.cnt), r.blk)
	if err != nil {
		return false
	}
	r.frameStart = r.blk.lastGood
	r.zr.r, r.zr.err = zr, nil
	r.br.Reset(r.zr)
	r.newFrame = true
	return true
}

func (r *Reader) readUvarint() (uint64, error) {
	var x uint64
	var s uint
	for i := 0; i < 10; i++ {
		b, err := r.br.ReadByte()
		if err != nil {
			if i > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		r.pos++
		if b < 0x80 {
			if i == 9 && b > 1 {
				return 0, errLengthOverflow
			}
			return x | uint64(b)<<s, nil
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
	return 0, errLengthOverflow
}

var errLengthOverflow = errors.New("record length overflows 64 bits")

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// damage reports a malformed record: the one that began at recStart,
// located at the lz4 block holding its start.
func (r *Reader) damage(cause error) *DamageError {
	lostFrom := r.blk.fileOffset(r.recStart)
	return &DamageError{File: r.name, Offset: lostFrom, LostFrom: lostFrom, Size: r.size,
		Records: r.records, LastNode: r.lastNode, LastSeq: r.lastSeq, Cause: cause}
}

// readDamage reports a failure to read the record that began at recStart:
// the data ends inside it, or the lz4 decoder failed (a checksum, the file
// ending inside a block), which is damage at the block it could not
// decode.
func (r *Reader) readDamage() *DamageError {
	de := r.damage(nil)
	de.Truncated = true
	switch zerr := r.zr.err; {
	case zerr == io.EOF:
		de.Cause = errors.New("the data ends inside a record")
	default:
		de.Offset = r.blk.lastGood
		de.Truncated = zerr == nil || errors.Is(zerr, io.ErrUnexpectedEOF)
		where := "the lz4 data from there"
		if de.Offset == 0 {
			// Nothing of the first frame decoded: say whether its
			// header or its first block is at fault.
			if fb := r.cnt.firstBlock(); fb == 0 || r.cnt.n <= fb {
				where = "the lz4 frame header"
			} else {
				de.Offset, where = fb, "the first lz4 block"
			}
		}
		de.Cause = describeLZ4(zerr, r.size, where)
	}
	return de
}

// describeLZ4 puts an lz4 decoding error in words; where says where in
// the file it struck.
func describeLZ4(err error, size int64, where string) error {
	switch {
	case err == nil, errors.Is(err, io.ErrUnexpectedEOF):
		if size >= 0 {
			return fmt.Errorf("the file ends at byte %d, inside %s", size, where)
		}
		return fmt.Errorf("the file ends inside %s", where)
	case errors.Is(err, lz4.ErrInvalidBlockChecksum):
		return fmt.Errorf("a block checksum fails in %s", where)
	case errors.Is(err, lz4.ErrInvalidFrameChecksum):
		return fmt.Errorf("a frame content checksum fails in %s", where)
	case errors.Is(err, lz4.ErrInvalidHeaderChecksum):
		return fmt.Errorf("the header checksum fails in %s", where)
	case errors.Is(err, lz4.ErrInvalidFrame):
		return fmt.Errorf("no lz4 frame magic where a frame should begin in %s", where)
	case errors.Is(err, lz4.ErrOptionInvalidBlockSize), errors.Is(err, lz4.ErrInvalidFrameDescriptor):
		return fmt.Errorf("an invalid lz4 frame header or block size in %s (%v)", where, err)
	case errors.Is(err, lz4.ErrInvalidSourceShortBuffer), errors.Is(err, lz4.ErrInvalidContentSize):
		return fmt.Errorf("an lz4 block that does not decompress in %s (%v)", where, err)
	}
	return fmt.Errorf("read error in %s: %w", where, err)
}

// Header is the header of the segment being read.
func (r *Reader) Header() *Header { return r.hdr }

// First is the header of the file's first segment.
func (r *Reader) First() *Header { return r.first }

// Gap is the gap record Next last returned.
func (r *Reader) Gap() Gap { return r.gap }

// End is the end record Next last returned.
func (r *Reader) End() End { return r.end }

// Ended reports whether the last segment read so far was closed cleanly.
func (r *Reader) Ended() bool { return r.ended }

// Records counts the complete records read, headers included.
func (r *Reader) Records() int { return r.records }

// Raw is the number of decompressed bytes read.
func (r *Reader) Raw() int64 { return r.raw }

// Compressed is the number of file bytes consumed so far.
func (r *Reader) Compressed() int64 { return r.cnt.n }

// Next reads the next record. An event is decoded into ev. At the end of
// the file Next returns io.EOF; on damage, a *DamageError, and again on
// every later call.
func (r *Reader) Next(ev *node.Event) (RecordKind, error) {
	if r.err != nil {
		return 0, r.err
	}
	for {
		typ, body, err := r.readRecord()
		if err != nil {
			r.err = err
			return 0, err
		}
		kind, err := r.decode(typ, body, ev)
		if err != nil {
			r.err = r.damage(err)
			return 0, r.err
		}
		r.records++
		if kind != 0 {
			return kind, nil
		}
	}
}

// decode decodes one record read by readRecord; kind 0 is an optional
// record, skipped.
func (r *Reader) decode(typ byte, body []byte, ev *node.Event) (RecordKind, error) {
	if r.newFrame && typ != TypeHeader {
		return 0, fmt.Errorf("an lz4 frame after an unclosed one begins with record type 0x%02x (%s), not a segment header", typ, typeName(typ))
	}
	// An end record closes its segment: only a new segment may follow
	// (and optional records, which a reader skips wherever they are).
	if r.ended && typ != TypeHeader && typ&optionalBit == 0 {
		return 0, fmt.Errorf("record type 0x%02x (%s) after the segment's end record", typ, typeName(typ))
	}
	switch typ {
	case TypeEvent:
		if r.notice {
			return 0, errors.New("an event record in a writer's stop notice")
		}
		if err := decodeEvent(&decoder{b: body}, r.tab, ev, r.lastTime); err != nil {
			if r.lastNode == "" {
				return 0, fmt.Errorf("malformed event record (the first event of the file): %w", err)
			}
			return 0, fmt.Errorf("malformed event record after %s seq %d: %w", r.lastNode, r.lastSeq, err)
		}
		r.lastTime = ev.Time
		r.lastNode, r.lastSeq = ev.Node, ev.Seq
		return RecEvent, nil
	case TypeHeader:
		h, err := decodeHeader(body)
		if err != nil {
			return 0, err
		}
		if h.Continues && !r.ended && h.System == r.hdr.System && h.Segment == r.hdr.Segment {
			// A writer's stop notice: its gap and end records
			// belong to the segment it could not go on writing.
			// (A notice whose segment wrote nothing at all follows
			// another segment, and is a segment of its own.)
			r.notice, r.newFrame = true, false
			return 0, nil
		}
		if err := r.startSegment(h); err != nil {
			return 0, err
		}
		r.newFrame = false
		return RecHeader, nil
	case TypeGap:
		g, err := r.decodeGap(body)
		if err != nil {
			return 0, err
		}
		r.gap = g
		return RecGap, nil
	case TypeEnd:
		r.end = End{}
		if err := cbor.Unmarshal(body, &r.end); err != nil {
			return 0, fmt.Errorf("malformed end record: %w", err)
		}
		if err := r.end.check(); err != nil {
			return 0, err
		}
		r.end.escapeText()
		r.ended = true
		return RecEnd, nil
	}
	if typ&optionalBit != 0 {
		return 0, nil
	}
	return 0, fmt.Errorf("unknown record type 0x%02x", typ)
}

// decodeGap decodes a gap record and checks it against the segment's
// header: a gap of a node the trace does not have, or a seq range that
// cannot be one, would make replay mark the wrong stretch unknown.
func (r *Reader) decodeGap(body []byte) (Gap, error) {
	var g Gap
	if err := cbor.Unmarshal(body, &g); err != nil {
		return g, fmt.Errorf("malformed gap record: %w", err)
	}
	if err := g.check(r.tab); err != nil {
		return g, err
	}
	g.escapeText()
	return g, nil
}

func typeName(typ byte) string {
	switch typ {
	case TypeHeader:
		return "header"
	case TypeEvent:
		return "event"
	case TypeGap:
		return "gap"
	case TypeEnd:
		return "end"
	}
	if typ&optionalBit != 0 {
		return "optional"
	}
	return "unknown"
}

// File is a whole trace file read into memory.
type File struct {
	Path     string
	Header   *Header   // the first segment's
	Segments []*Header // every segment's, in order
	// Events holds the file's events in file order, unless the file was
	// scanned (ScanFile), which hands each event to its caller instead.
	Events []*node.Event
	// Count is the number of events read, kept or not.
	Count int
	// Gaps are the file's gap records in file order, a node's gaps that
	// follow on from each other folded into one (a lossy writer that
	// falls behind while other nodes record writes one per stretch
	// between their events).
	Gaps []Gap
	Ends []End
	// SegmentStart[i] is the index (in file order) of segment i's first
	// event; SegmentEnded[i] whether segment i has its end record.
	SegmentStart []int
	SegmentEnded []bool
	// Spans[i] gives, for each node with events in segment i, the seqs of
	// its first and last event there.
	Spans []map[node.ID]Span
	// Ended reports whether the last segment has its end record (a
	// writer that was killed leaves none).
	Ended bool
	Size  int64 // bytes on disk
	Raw   int64 // decompressed bytes of complete records
	// Damage is set when the file could not be read to its end; Events
	// then holds every complete event before the damage.
	Damage *DamageError

	gaps gapFold
}

// Span is the seqs of a node's first and last event in a segment.
type Span struct{ First, Last uint64 }

// Contains reports whether seq lies within the span.
func (s Span) Contains(seq uint64) bool { return s.First <= seq && seq <= s.Last }

// ReadFile reads a whole trace. The error is for files that are not traces
// at all (or unreadable); damage past the header is reported in File.Damage.
func ReadFile(path string) (*File, error) {
	return ScanFile(path, nil)
}

// ScanFile reads a trace like ReadFile, but hands each event to fn instead
// of keeping it (fn must not keep ev beyond the call unless it owns it: a
// new event is decoded into for every call). fn nil keeps them in Events.
// An error from fn stops the scan and is returned.
func ScanFile(path string, fn func(ev *node.Event) error) (*File, error) {
	return scanFile(path, fn, false)
}

func scanFile(path string, fn func(ev *node.Event) error, reuse bool) (*File, error) {
	// Stat before opening: opening a FIFO blocks until a writer comes,
	// and a device never ends. A trace is a regular file.
	var nr *regular.NotRegularError
	if err := regular.Check(path); errors.As(err, &nr) && !nr.Mode.IsDir() {
		return nil, fmt.Errorf("%s: %s, not a trace file", path, nr.What)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory, not a trace file", path)
	}
	tf, err := scan(f, path, st.Size(), fn, reuse)
	if err != nil {
		return nil, err
	}
	// A file cut short while it was read would read as a recording
	// that was killed (no end record): say what happened instead. A
	// file that grew is a recording still being written, which reads
	// as far as it had got.
	if now, err := f.Stat(); err == nil && now.Size() < st.Size() {
		return nil, fmt.Errorf("%s: the file shrank from %d to %d bytes while it was read (cut or rewritten meanwhile): read it again once nothing changes it", path, st.Size(), now.Size())
	}
	return tf, nil
}

// ScanFileReusing is ScanFile for an fn that keeps nothing of ev once it
// returns: every event is decoded into the same memory. A loader that
// re-encodes each event at once (a spilled trace) is spared allocating
// and collecting one per event.
func ScanFileReusing(path string, fn func(ev *node.Event) error) (*File, error) {
	if fn == nil {
		return nil, errors.New("ScanFileReusing needs a function to hand events to")
	}
	return scanFile(path, fn, true)
}

// Read reads a whole trace from r (see ReadFile).
func Read(r io.Reader, name string, size int64) (*File, error) {
	return Scan(r, name, size, nil)
}

// Scan reads a trace from r, handing each event to fn (see ScanFile).
func Scan(r io.Reader, name string, size int64, fn func(ev *node.Event) error) (*File, error) {
	return scan(r, name, size, fn, false)
}

func scan(r io.Reader, name string, size int64, fn func(ev *node.Event) error, reuse bool) (*File, error) {
	rd, err := NewReader(r, name, size)
	if err != nil {
		return nil, err
	}
	if reuse {
		return scanAhead(rd, name, size, fn)
	}
	tf := newScanned(rd, name, size)
	for {
		ev := new(node.Event)
		done, err := tf.next(rd, ev)
		if err == errNotEvent {
			continue
		}
		if done || err != nil {
			return tf.end(rd, size, err)
		}
		if fn == nil {
			tf.Events = append(tf.Events, ev)
		} else if err := fn(ev); err != nil {
			return nil, err
		}
	}
}

func newScanned(rd *Reader, name string, size int64) *File {
	return &File{Path: name, Header: rd.First(), Segments: []*Header{rd.First()}, Size: size,
		SegmentStart: []int{0}, SegmentEnded: []bool{false}, Spans: []map[node.ID]Span{{}}}
}

// next reads the next record into tf, decoding an event into ev. It
// reports done at the end of the file (or of what is readable: Damage
// says why), and errNotEvent when the record was not an event.
func (tf *File) next(rd *Reader, ev *node.Event) (done bool, err error) {
	kind, err := rd.Next(ev)
	if err != nil {
		if err != io.EOF {
			var de *DamageError
			if !errors.As(err, &de) {
				return true, err
			}
			tf.Damage = de
		}
		return true, nil
	}
	switch kind {
	case RecEvent:
		tf.Count++
		extendSpan(tf.Spans[len(tf.Spans)-1], ev)
		return false, nil
	case RecHeader:
		tf.Segments = append(tf.Segments, rd.Header())
		tf.SegmentStart = append(tf.SegmentStart, tf.Count)
		tf.SegmentEnded = append(tf.SegmentEnded, false)
		tf.Spans = append(tf.Spans, map[node.ID]Span{})
		tf.gaps.last = nil // a gap folds only into one of its own segment
	case RecGap:
		tf.Gaps = tf.gaps.add(tf.Gaps, rd.Gap())
	case RecEnd:
		tf.Ends = append(tf.Ends, rd.End())
		tf.SegmentEnded[len(tf.SegmentEnded)-1] = true
	}
	return false, errNotEvent
}

// errNotEvent is next's word for a record that was not an event; it
// never leaves this file.
var errNotEvent = errors.New("not an event")

func (tf *File) end(rd *Reader, size int64, err error) (*File, error) {
	if err != nil {
		return nil, err
	}
	tf.Ended = rd.Ended()
	tf.Raw = rd.Raw()
	if size < 0 {
		tf.Size = rd.Compressed()
	}
	return tf, nil
}

// LargeEvent is the size of event (its payloads) past which a reader
// that works a batch ahead hands a batch over at once, so that events
// with huge payloads are not held many at a time.
const LargeEvent = 1 << 20

// eventBytes is about how many bytes ev's payloads take.
func eventBytes(ev *node.Event) int {
	n := len(ev.Payload)
	for _, s := range ev.Sends {
		n += len(s.Payload)
	}
	for _, nd := range ev.Nondet {
		n += len(nd.Bytes)
	}
	return n
}

// scanBatch is how many events scanAhead decodes before handing them over:
// enough that handing over costs nothing per event, few enough that a
// batch stays in a core's cache.
const scanBatch = 256

// scanAhead is scan for an fn that keeps nothing of an event: the file is
// read and decoded on another goroutine, a batch of events ahead of fn,
// so that a loader re-encoding each event (a spilled trace) takes about
// the longer of the two instead of their sum. fn still sees every event
// in file order, on the caller's goroutine; after an error of fn nothing
// more is read.
func scanAhead(rd *Reader, name string, size int64, fn func(ev *node.Event) error) (*File, error) {
	tf := newScanned(rd, name, size)
	err := ahead.Pipe(scanBatch, func(w *ahead.Writer[node.Event]) error {
		for {
			ev := w.Slot()
			done, err := tf.next(rd, ev)
			if err == errNotEvent {
				continue
			}
			if done || err != nil {
				return err
			}
			large := eventBytes(ev) > LargeEvent
			if !w.Commit() || large && !w.Flush() {
				return nil
			}
		}
	}, fn)
	return tf.end(rd, size, err)
}

// RepeatedSeqs says which node's seqs a later segment of f records again
// ("" if none), which every verb that replays refuses: a restarted
// recorder goes on above the seqs it reserved, so a repeat is either a
// process that started the node afresh (its data directory wiped or new:
// seqs from 1 again) appending to the file of an earlier run of it, or a
// file concatenated with another recording of the run.
func (f *File) RepeatedSeqs() string {
	last := map[node.ID]uint64{}
	seen := map[node.ID]int{} // the segment that recorded last
	for i, spans := range f.NodeSpans() {
		ids := slices.Collect(maps.Keys(spans))
		node.SortNatural(ids)
		for _, id := range ids {
			sp := spans[id]
			if at, ok := seen[id]; ok && sp.First <= last[id] {
				if sp.First == 1 && i < len(f.Segments) && f.Segments[i].Run["restart"] == "false" {
					return fmt.Sprintf("segment %d starts node %s afresh at seq 1 (its process found no state of the node: a data directory wiped or new) in a file whose segment %d already recorded its seqs 1..%d: the file holds two runs of the node, which replay cannot tell apart; record each run to its own file (move the old one away, or another --trace-dir), or leave the file out and check the other nodes with --nodes", i, id, at, last[id])
				}
				return fmt.Sprintf("node %s's seqs %d..%d in segment %d were already recorded in segment %d (a file concatenated with another recording of the run?): replay refuses it", id, sp.First, sp.Last, i, at)
			}
			last[id], seen[id] = sp.Last, i
		}
	}
	return ""
}

// NodeSpans returns Spans, working it out from Events for a File put
// together by hand rather than read.
func (f *File) NodeSpans() []map[node.ID]Span {
	if len(f.Spans) == len(f.Segments) {
		return f.Spans
	}
	spans := make([]map[node.ID]Span, len(f.Segments))
	for i := range spans {
		spans[i] = map[node.ID]Span{}
		from, to := len(f.Events), len(f.Events)
		if i < len(f.SegmentStart) {
			from = f.SegmentStart[i]
		}
		if i+1 < len(f.SegmentStart) {
			to = f.SegmentStart[i+1]
		}
		for _, ev := range f.Events[from:to] {
			extendSpan(spans[i], ev)
		}
	}
	return spans
}

// extendSpan adds ev, a segment's latest event, to its node's span.
func extendSpan(spans map[node.ID]Span, ev *node.Event) {
	if sp, ok := spans[ev.Node]; ok {
		spans[ev.Node] = Span{sp.First, ev.Seq}
	} else {
		spans[ev.Node] = Span{ev.Seq, ev.Seq}
	}
}

// Paths names the files, in order.
func Paths(files []*File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Path
	}
	return out
}
