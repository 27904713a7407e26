package replay

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/replaycheck/replaycheck/internal/ahead"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// DefaultInMemory is how many events Load keeps decoded in memory (about
// 400-600 bytes each, so about 30 MB) before it spills the trace to a
// temporary file and keeps only indexes, about 25 bytes per event. A
// decoded trace costs its memory's first touch and the collector's scans
// of it, which outweigh the spill's extra decoding from about 10^5 events
// on (docs/performance.md, session 16); below that the two are even and
// short traces need no temporary files.
const DefaultInMemory = 1 << 16

// InMemoryEnv names the environment variable that overrides
// DefaultInMemory for a process (a user who knows their machine: more to
// trade memory for speed, -1 to spill every trace).
const InMemoryEnv = "REPLAY_IN_MEMORY"

// LoadOptions tunes how Load holds a trace.
type LoadOptions struct {
	// InMemory is how many events are kept decoded in memory at most;
	// a longer trace is spilled to a temporary file. 0 means
	// DefaultInMemory; negative spills every trace.
	InMemory int
	// TempDir is where a spilled trace's temporary files go ("" is the
	// system's). They are removed as soon as they are open, so nothing is
	// left behind, even by a killed process.
	TempDir string
	// InMemoryBytes bounds the events kept decoded by their size in
	// memory (record.DecodedSize), whatever their number; 0 means
	// DefaultInMemoryBytes.
	InMemoryBytes int64
}

// eventStore holds a trace's events in step order.
type eventStore interface {
	at(i int) *node.Event
	len() int
	close() error
}

// memStore holds every event decoded.
type memStore []*node.Event

func (m memStore) at(i int) *node.Event { return m[i] }
func (m memStore) len() int             { return len(m) }
func (m memStore) close() error         { return nil }

// Spilled traces keep their events, in step order, in chunks of this many
// in a temporary file, and the most recently used chunks decoded.
const (
	chunkEvents  = 256
	cachedChunks = 64
	// cachedBytes bounds the chunks cached by their size too: a trace
	// whose events carry huge payloads keeps fewer (but always the one
	// being read).
	cachedBytes = 64 << 20
	// bigChunk is the size of chunk read back a record at a time.
	bigChunk = cachedBytes / 4
)

// spillStore holds a trace's events on disk, decoding a chunk at a time.
// Replay reads steps in order and looks back a little (a message's send,
// a node's previous event), which a small cache of chunks serves.
type spillStore struct {
	f      *os.File
	codec  *record.Codec
	n      int
	chunks []int64 // file offset of each chunk, and one past the last
	// big holds, for each chunk of over bigChunk bytes, the offset of
	// each of its records and the chunk's end. Written while loading
	// only.
	big map[int][]int64

	mu     sync.Mutex
	cache  map[int]*cachedChunk
	cached int64 // bytes of the cached chunks, as stored
	clock  uint64
	reads  int // chunks read back from the file (decoded) so far
}

type cachedChunk struct {
	used  uint64        // under spillStore.mu
	size  int64         // its bytes in the file
	ready chan struct{} // closed once events or err is set
	// events, err: the decoded chunk, or why it could not be read.
	events []*node.Event
	err    error
}

func (s *spillStore) len() int { return s.n }

func (s *spillStore) close() error { return s.f.Close() }

// ReadBackError is what Trace.Event panics with when a spilled trace's
// temporary file cannot be read back (a failing or meddled-with disk):
// the step cannot be made up, and the method has no error to return. A
// command line recovers it into one line and exit 2 (cli.Main does).
type ReadBackError struct {
	Step int
	Err  error
}

func (e *ReadBackError) Error() string {
	return fmt.Sprintf("reading back the spilled trace at step %d from its temporary file: %v (a failing disk, or the file was changed by another process)", e.Step, e.Err)
}

func (e *ReadBackError) Unwrap() error { return e.Err }

// CatchReadBack calls f and returns the ReadBackError it panics with as
// its error; any other panic goes on. Code that reads a trace on a
// goroutine of its own runs under it, so that a failing disk ends the
// work with one line instead of the whole process with a stack.
func CatchReadBack(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			rb, ok := r.(*ReadBackError)
			if !ok {
				panic(r)
			}
			err = rb
		}
	}()
	return f()
}

func (s *spillStore) at(i int) *node.Event {
	if i < 0 || i >= s.n {
		panic(fmt.Sprintf("replay: step %d out of range [0, %d)", i, s.n))
	}
	k := i / chunkEvents
	if recs, ok := s.big[k]; ok {
		// Read alone, each time, and never cached: its payloads are
		// what the cache's bound is for.
		j := i % chunkEvents
		evs, err := s.readRecords(recs[j], recs[j+1], 1)
		if err != nil {
			panic(&ReadBackError{Step: i, Err: err})
		}
		return evs[0]
	}
	s.mu.Lock()
	s.clock++
	c := s.cache[k]
	if c != nil {
		c.used = s.clock
		s.mu.Unlock()
		<-c.ready
	} else {
		// Decoded outside the lock: readers on other cores (the parts of
		// validation, the segments of check --jobs) decode their own
		// chunks at once; a reader wanting a chunk being decoded waits
		// for it.
		size := s.chunks[k+1] - s.chunks[k]
		c = &cachedChunk{used: s.clock, ready: make(chan struct{}), size: size}
		for len(s.cache) >= cachedChunks || len(s.cache) > 0 && s.cached+size > cachedBytes {
			s.evictOldest(-1)
		}
		s.cache[k] = c
		s.cached += size
		s.reads++
		s.mu.Unlock()
		c.events, c.err = s.readChunk(k)
		s.weigh(k, c)
		close(c.ready)
	}
	if c.err != nil {
		// The temporary file is ours and already read once: failing
		// to read it back is the machine's fault (a full or failing
		// disk), not the trace's, and the step cannot be made up.
		panic(&ReadBackError{Step: i, Err: c.err})
	}
	return c.events[i%chunkEvents]
}

// weigh counts a chunk just decoded in the cache by its size in memory
// (record.DecodedSize), where it counted by its size on disk, and evicts
// other chunks while the cache is over cachedBytes: a chunk of events of
// many clock readings each is 32 times its stored size decoded.
func (s *spillStore) weigh(k int, c *cachedChunk) {
	var size int64
	for _, ev := range c.events {
		size += record.DecodedSize(ev)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache[k] != c || size <= c.size {
		return // evicted meanwhile, or no bigger than counted
	}
	s.cached += size - c.size
	c.size = size
	for s.cached > cachedBytes && len(s.cache) > 1 {
		s.evictOldest(k)
	}
}

// evictOldest drops the least recently used cached chunk but keep (-1:
// none kept); under s.mu, with such a chunk cached.
func (s *spillStore) evictOldest(keep int) {
	oldest := -1
	var used uint64 = ^uint64(0)
	for key, c := range s.cache {
		if key != keep && c.used < used {
			oldest, used = key, c.used
		}
	}
	s.cached -= s.cache[oldest].size
	delete(s.cache, oldest)
}

// readChunk reads back and decodes chunk k.
func (s *spillStore) readChunk(k int) ([]*node.Event, error) {
	return s.readRecords(s.chunks[k], s.chunks[k+1], min(chunkEvents, s.n-k*chunkEvents))
}

// readRecords reads back and decodes the n records stored from off to
// end. The events keep their payloads in the bytes read, which serve
// them alone: a record costs its bytes once, not twice.
func (s *spillStore) readRecords(off, end int64, n int) ([]*node.Event, error) {
	buf := make([]byte, end-off)
	if _, err := s.f.ReadAt(buf, off); err != nil {
		return nil, err
	}
	events := make([]*node.Event, n)
	backing := make([]node.Event, n)
	for j := range events {
		var rec []byte
		if rec, buf = cutRecord(buf); rec == nil {
			return nil, errors.New("records end early")
		}
		if err := s.codec.DecodeAliasing(rec, &backing[j]); err != nil {
			return nil, err
		}
		events[j] = &backing[j]
	}
	if len(buf) != 0 {
		return nil, errors.New("more follows the records")
	}
	return events, nil
}

// Both temporary files hold records one after the other, each after its
// length.

// countingWriter writes records, counting the bytes written.
type countingWriter struct {
	w   *bufio.Writer
	n   int64
	hdr [binary.MaxVarintLen64]byte
}

func (c *countingWriter) record(rec []byte) error {
	h := binary.PutUvarint(c.hdr[:], uint64(len(rec)))
	if _, err := c.w.Write(c.hdr[:h]); err != nil {
		return spillError(err)
	}
	if _, err := c.w.Write(rec); err != nil {
		return spillError(err)
	}
	c.n += int64(h + len(rec))
	return nil
}

func appendRecord(b, rec []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(rec))), rec...)
}

// cutRecord returns the first record of b and what follows it; rec is
// nil if b does not hold a whole record.
func cutRecord(b []byte) (rec, rest []byte) {
	size, w := binary.Uvarint(b)
	if w <= 0 || size > uint64(len(b)-w) {
		return nil, b
	}
	return b[w : w+int(size) : w+int(size)], b[w+int(size):]
}

// spillError says what failed and what the user can change about it.
func spillError(err error) error {
	return fmt.Errorf("%w: %w (set TMPDIR to a directory with room, or %s to keep more of the trace in memory)", errSpilling, err, InMemoryEnv)
}

// errSpilling marks a failure to write or read back the temporary files
// of a spilled trace: the machine's, not the trace's.
var errSpilling = errors.New("spilling the trace to disk")

// tempFile creates a temporary file and removes its name at once.
func tempFile(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, spillError(err)
	}
	os.Remove(f.Name()) // open files outlive their names; nothing is left behind
	return f, nil
}

// LoadWith is Load with options. Up to opts.InMemory events are decoded
// and merged in memory (by default, files of over DefaultInMemory times
// 16 bytes are spilled from their first event). Past that, each file's
// events are written, as read, to a run in a temporary file (a file is
// normally in merge order; one that is not goes on in a run per node), the
// runs are merged into the step order with a buffer per run, and the
// merged events go to a second temporary file that the trace reads back a
// chunk at a time: memory then grows with the number of nodes and by about
// 30 bytes per event of indexes, not with the events themselves.
func LoadWith(opts LoadOptions, paths ...string) (*Trace, error) {
	if len(paths) == 0 {
		return nil, errors.New("no trace files given")
	}
	limit, byDefault := opts.InMemory, false
	if limit == 0 {
		limit, byDefault = DefaultInMemory, true
		if env := os.Getenv(InMemoryEnv); env != "" {
			// A value that is not a number is a mistake to say, not a
			// reason to load a trace of 10^7 events into memory.
			v, err := strconv.Atoi(env)
			if err != nil {
				return nil, fmt.Errorf("%s=%s: want a whole number of events to keep in memory (-1 spills every trace, 0 is the default %d)", InMemoryEnv, env, DefaultInMemory)
			}
			if v != 0 {
				limit, byDefault = v, false
			}
		}
	}
	if err := givenOnce(paths); err != nil {
		return nil, err
	}
	paths = CanonicalOrder(paths)
	guess := byDefault && filesHoldMore(paths, limit)
	t, read, err := load(opts, limit, limit < 0 || guess, paths)
	var ve *ValidationError
	if guess && read <= limit && (errors.Is(err, errSpilling) || errors.As(err, &ve) && ve.tooManyBreaks) {
		// Spilling early was a guess from the files' sizes, which must
		// not fail a trace that fits in memory: without room in $TMPDIR,
		// or with events too far out of order for runs, the events are
		// held until there are too many, as without the guess. (With
		// more than that read already, holding them would come to the
		// same spill and fail the same way.)
		t, _, err = load(opts, limit, false, paths)
	}
	return t, err
}

// load loads the files, spilling from the first event when early is set;
// read is how many events it took before it returned.
func load(opts LoadOptions, limit int, early bool, paths []string) (t *Trace, read int, err error) {
	ld := &loader{opts: opts, limit: limit, paths: paths}
	defer ld.discard()
	t, err = ld.load(early)
	return t, ld.n, err
}

// load reads and merges the loader's files.
func (ld *loader) load(early bool) (*Trace, error) {
	limit, paths := ld.limit, ld.paths
	if early {
		// Without room in $TMPDIR for a guess, the events are held until
		// there are too many, as they would be without it.
		if err := ld.startSpilling(); err != nil && limit < 0 {
			return nil, err
		}
	}
	files := make([]*record.File, 0, len(paths))
	for fi, p := range paths {
		if fi > 1<<16-1 {
			return nil, fmt.Errorf("%d trace files: at most %d can be merged", len(paths), 1<<16)
		}
		add := func(ev *node.Event) error { return ld.add(uint16(fi), ev) }
		scan := record.ScanFile
		if ld.runs != nil {
			// Spilled from the first event: each is encoded as it comes
			// and none is held.
			scan = record.ScanFileReusing
		}
		f, err := scan(p, add)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if ld.runs == nil || ld.n == 0 { // Merge says that no event was recorded
		for fi, f := range files {
			if fi < len(ld.held) { // a file without events has none held
				f.Events = ld.held[fi]
			}
		}
		return Merge(files)
	}
	return ld.merge(files)
}

// minEventBytes is fewer bytes than the bundled systems' events take in a
// trace file (24-46 bytes each, lz4-compressed).
const minEventBytes = 16

// filesHoldMore tells, from the files' sizes, whether they likely hold
// more than limit events: such a trace is spilled from its first event
// instead of after limit of them held decoded (and then re-encoded), which
// cost a third of a raftkv recording's load. A guess too high costs
// nothing (spilling is as fast below 10^5 events). A file that cannot be
// statted is left for the scan to report.
func filesHoldMore(paths []string, limit int) bool {
	var size int64
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			size += st.Size()
		}
	}
	return size > int64(limit)*minEventBytes
}

// CanonicalOrder is the order a trace's files are loaded in, whatever
// order they were given in: by absolute path (as given where it cannot be
// made absolute). The first file's header is the trace's (its Start is
// the time base every time is shown from), so `history 3 2 1` showed
// times 3 ms off those of `history 1 2 3`, and named another database.
func CanonicalOrder(paths []string) []string {
	type named struct{ abs, given string }
	ns := make([]named, len(paths))
	for i, p := range paths {
		a, err := filepath.Abs(p)
		if err != nil {
			a = p
		}
		ns[i] = named{a, p}
	}
	slices.SortStableFunc(ns, func(a, b named) int { return strings.Compare(a.abs, b.abs) })
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.given
	}
	return out
}

// givenOnce refuses a file given twice (by the same name or another: a
// link, ./x and x), which would otherwise read as every event of it
// recorded twice.
func givenOnce(paths []string) error {
	seen := make([]os.FileInfo, len(paths))
	for i, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			continue // the read says what is wrong with it
		}
		for j, prev := range seen[:i] {
			if prev != nil && os.SameFile(prev, st) {
				return fmt.Errorf("%s is given twice (also as %s): give each trace file once", p, paths[j])
			}
		}
		seen[i] = st
	}
	return nil
}

// loader takes a trace's events as they are read, in memory until there
// are too many, then in runs on disk.
type loader struct {
	opts  LoadOptions
	limit int
	n     int
	held  [][]*node.Event // per file, while in memory
	// heldBytes is the held events' size in memory (record.DecodedSize):
	// past LoadOptions.InMemoryBytes they are spilled, whatever their
	// number.
	heldBytes int64

	codec   *record.Codec
	runs    *os.File
	size    int64
	byKey   map[runKey]*run
	perNode map[uint16]bool // files out of merge order: a run per node
	order   []*run
	scratch []byte
	paths   []string
	sizes   indexSizes
	breaks  int // events that started a new run of their node
	// firstBreak names the first of them.
	firstBreak Problem
}

// DefaultInMemoryBytes bounds the events a load holds decoded before it
// spills them, by their size: a trace of few events, each holding tens
// of thousands of clock readings (two bytes each on disk, 64 decoded),
// took gigabytes held, under the count that spills (DefaultInMemory). The
// bundled systems' events take about 400 bytes: a trace is spilled by
// its count long before this.
const DefaultInMemoryBytes = 256 << 20

// maxBreaks bounds how many events out of merge order within their file's
// node a spilled trace takes (each one is a run, with a block to buffer
// while merging).
const maxBreaks = 1024

// runKey names a run: a whole file's events, or one node's from a file.
type runKey struct {
	file  uint16
	node  node.ID
	whole bool
}

// run is a file's events, or, once they are out of merge order, one
// node's events from it: blocks in the runs file plus a write buffer.
type run struct {
	file   uint16
	order  int // runs are made in the order their first events are read
	blocks []block
	buf    []byte
	// last is the node, seq and clock of the latest event added (to
	// check the order; the event itself may be decoded over), if any.
	last    node.Event
	hasLast bool
}

type block struct {
	off  int64
	size int
}

// runBlock is how much of a run is buffered before it is written: with
// the block each run reads back, 32 KiB per node of memory while merging.
const runBlock = 16 << 10

func (ld *loader) add(fi uint16, ev *node.Event) error {
	ld.n++
	if ld.runs == nil {
		for int(fi) >= len(ld.held) {
			ld.held = append(ld.held, nil)
		}
		ld.held[fi] = append(ld.held[fi], ev)
		ld.heldBytes += record.DecodedSize(ev)
		if ld.limit > 0 && ld.n <= ld.limit && ld.heldBytes <= cmp.Or(ld.opts.InMemoryBytes, DefaultInMemoryBytes) {
			return nil
		}
		return ld.startSpilling()
	}
	return ld.spill(fi, ev)
}

// startSpilling moves the events held so far to runs.
func (ld *loader) startSpilling() error {
	f, err := tempFile(ld.opts.TempDir, "replay-runs-*")
	if err != nil {
		return err
	}
	ld.runs, ld.codec, ld.byKey, ld.perNode = f, record.NewCodec(), map[runKey]*run{}, map[uint16]bool{}
	held := ld.held
	ld.held = nil
	for fi, evs := range held {
		for j, ev := range evs {
			if err := ld.spill(uint16(fi), ev); err != nil {
				return err
			}
			evs[j] = nil // let the garbage collector have it
		}
	}
	return nil
}

func (ld *loader) spill(fi uint16, ev *node.Event) error {
	key := runKey{file: fi, whole: true}
	if ld.perNode[fi] {
		key = runKey{file: fi, node: ev.Node}
	}
	r := ld.byKey[key]
	if r == nil {
		r = ld.newRun(key)
	}
	if r.hasLast && mergeOrder(ev, &r.last) < 0 {
		// A node's events in one file are normally in merge order, but
		// the reader does not insist: a clock that goes backwards, or
		// events stored out of order. The merge needs sorted runs, so
		// such an event starts a new run; the result, and what
		// validation then says of it, is the in-memory merge's. Many
		// breaks would make as many runs: past maxBreaks, the first
		// break is named instead.
		if r.last.Node == ev.Node {
			if err := ld.countBreak(fi, &r.last, ev); err != nil {
				return err
			}
		}
		if err := ld.flush(r); err != nil {
			return err
		}
		r.buf, r.hasLast = nil, false
		if key.whole {
			// A file is normally all in merge order (a simulation's, a
			// node's recording): one run however many nodes it holds.
			// One that is not (several nodes recorded by one process,
			// in real time) sends each node's events on to a run of
			// their own, as a node's events, in seq order, normally are.
			ld.perNode[fi] = true
			key = runKey{file: fi, node: ev.Node}
		}
		r = ld.newRun(key)
	}
	r.last, r.hasLast = node.Event{Node: ev.Node, Seq: ev.Seq, Lamport: ev.Lamport}, true
	ld.sizes.count(ev)
	var err error
	ld.scratch, err = ld.codec.Append(ld.scratch[:0], ev)
	if err != nil {
		return fmt.Errorf("spilling %s seq %d: %w", ev.Node, ev.Seq, err)
	}
	if len(ld.scratch) > runBlock {
		// A huge event (a large payload) is written as a block of its
		// own, not copied into the run's buffer, which would then keep
		// its size for the rest of the load; nor does the scratch keep
		// it.
		rec := appendRecord(nil, ld.scratch)
		ld.scratch = nil
		if err := ld.flush(r); err != nil {
			return err
		}
		return ld.writeBlock(r, rec)
	}
	r.buf = appendRecord(r.buf, ld.scratch)
	if len(r.buf) >= runBlock {
		return ld.flush(r)
	}
	return nil
}

// countBreak counts an event out of merge order after the node's event
// last, naming the first, and refuses one too many.
func (ld *loader) countBreak(fi uint16, last, ev *node.Event) error {
	if ld.breaks == 0 {
		ld.firstBreak = Problem{ld.path(fi), last.Node, last.Seq,
			fmt.Sprintf("Lamport clock %d is not below the clock %d of the node's later event seq %d", last.Lamport, ev.Lamport, ev.Seq)}
	}
	if ld.breaks >= maxBreaks {
		p := ld.firstBreak
		p.Msg += fmt.Sprintf(" (and over %d more events are out of order in their files: too many to spill; %s=N, N the trace's events, loads it in memory)", maxBreaks, InMemoryEnv)
		return &ValidationError{Problems: []Problem{p}, tooManyBreaks: true}
	}
	ld.breaks++
	return nil
}

// newRun starts the run the events of key now go to.
func (ld *loader) newRun(key runKey) *run {
	r := &run{file: key.file, order: len(ld.order)}
	ld.byKey[key] = r
	ld.order = append(ld.order, r)
	return r
}

// path names file fi for a problem found while reading it.
func (ld *loader) path(fi uint16) string { return ld.paths[fi] }

func (ld *loader) flush(r *run) error {
	if len(r.buf) == 0 {
		return nil
	}
	if err := ld.writeBlock(r, r.buf); err != nil {
		return err
	}
	r.buf = r.buf[:0]
	return nil
}

// writeBlock writes b, whole records, as r's next block.
func (ld *loader) writeBlock(r *run, b []byte) error {
	if _, err := ld.runs.WriteAt(b, ld.size); err != nil {
		return spillError(err)
	}
	r.blocks = append(r.blocks, block{ld.size, len(b)})
	ld.size += int64(len(b))
	return nil
}

func (ld *loader) discard() {
	if ld.runs != nil {
		ld.runs.Close()
	}
}

// merge merges the runs into step order, writing the events to the
// trace's store and indexing them.
func (ld *loader) merge(files []*record.File) (*Trace, error) {
	t, err := newTrace(files)
	if err != nil {
		return nil, err
	}
	for _, r := range ld.order {
		if err := ld.flush(r); err != nil {
			return nil, err
		}
		r.buf, r.hasLast = nil, false
	}
	out, err := tempFile(ld.opts.TempDir, "replay-trace-*")
	if err != nil {
		return nil, err
	}
	st := &spillStore{f: out, codec: ld.codec, n: ld.n, cache: map[int]*cachedChunk{}}
	t.events = st
	keep := false
	defer func() {
		if !keep {
			out.Close()
		}
	}()

	var h runHeap
	for _, r := range ld.order {
		rr := &runReader{run: r, ld: ld}
		if err := rr.next(); err != nil {
			return nil, err
		}
		if rr.head != nil {
			h = append(h, rr)
		}
	}
	heap.Init(&h)
	ix := t.indexer(ld.n, ld.sizes)
	// Records go to the file as they come, through a buffer: a chunk
	// whose events carry huge payloads is not gathered in memory first.
	w := &countingWriter{w: bufio.NewWriterSize(io.NewOffsetWriter(out, 0), 256<<10)}
	// endChunk ends the chunk so far: the next starts where it ends. A
	// chunk too big to read back whole (events with huge payloads)
	// keeps where each of its records starts.
	var recs []int64
	endChunk := func() {
		if start := st.chunks[len(st.chunks)-1]; w.n-start > bigChunk {
			if st.big == nil {
				st.big = map[int][]int64{}
			}
			st.big[len(st.chunks)-1] = append(slices.Clone(recs), w.n)
		}
		recs = recs[:0]
		st.chunks = append(st.chunks, w.n)
	}
	st.chunks = append(st.chunks, 0)
	// The runs are read, decoded and merged on another goroutine, a
	// batch ahead of the indexing and writing here: a load then takes
	// about the longer of the two instead of their sum.
	step := 0
	err = ahead.Pipe(mergeBatch, func(w *ahead.Writer[mergedEvent]) error {
		for len(h) > 0 {
			rr := h[0]
			m := w.Slot()
			// The record stays where it was read (a run's block is not
			// read into again); the decoded event is copied, as the run
			// decodes its next one over it.
			m.ev, m.rec, m.file = *rr.head, rr.rec, rr.run.file
			if !w.Commit() || len(m.rec) > record.LargeEvent && !w.Flush() {
				return nil
			}
			if err := rr.next(); err != nil {
				return err
			}
			if rr.head == nil {
				heap.Pop(&h)
			} else {
				heap.Fix(&h, 0)
			}
		}
		return nil
	}, func(m *mergedEvent) error {
		if step%chunkEvents == 0 && step > 0 {
			endChunk()
		}
		recs = append(recs, w.n)
		if err := w.record(m.rec); err != nil {
			return err
		}
		ix.add(step, &m.ev, m.file)
		step++
		return nil
	})
	if err != nil {
		return nil, err
	}
	endChunk() // the last chunk, and the end
	if err := w.w.Flush(); err != nil {
		return nil, spillError(err)
	}
	ld.runs.Close()
	ld.runs = nil
	t, err = t.finish(ix)
	keep = err == nil
	return t, err
}

// mergedEvent is the next event in step order, as merge hands it over to
// be indexed and written.
type mergedEvent struct {
	ev   node.Event
	rec  []byte // its record
	file uint16
}

// mergeBatch is how many merged events are handed over at a time.
const mergeBatch = 256

// runReader reads one run back a block at a time.
type runReader struct {
	*run
	ld    *loader
	block int
	buf   []byte
	rec   []byte // the head's record
	head  *node.Event
	ev    *node.Event // what head points at, decoded again for each record
}

func (rr *runReader) next() error {
	rr.head = nil
	for len(rr.buf) == 0 {
		if rr.block >= len(rr.blocks) {
			return nil
		}
		b := rr.blocks[rr.block]
		rr.block++
		rr.buf = make([]byte, b.size)
		if _, err := rr.ld.runs.ReadAt(rr.buf, b.off); err != nil {
			return fmt.Errorf("reading back the spilled trace: %w", err)
		}
	}
	if rr.rec, rr.buf = cutRecord(rr.buf); rr.rec == nil {
		return errors.New("reading back the spilled trace: a run ends early")
	}
	// The head is indexed and written before the next one is read, and
	// nothing keeps it: one event per run serves them all.
	if rr.ev == nil {
		rr.ev = new(node.Event)
	}
	ev := rr.ev
	// Payloads stay in the block, which is not read into again: the
	// merge only hashes them (validation), and writes the record itself.
	if err := rr.ld.codec.DecodeAliasing(rr.rec, ev); err != nil {
		return fmt.Errorf("reading back the spilled trace: %w", err)
	}
	rr.head = ev
	return nil
}

// runHeap orders runs by their next event in merge order; ties (the same
// event recorded twice) go to the one read first, as the stable sort of an
// in-memory merge does.
type runHeap []*runReader

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if c := mergeOrder(h[i].head, h[j].head); c != 0 {
		return c < 0
	}
	return h[i].order < h[j].order
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
