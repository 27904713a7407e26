// Package record is the trace format: an lz4 frame stream of length-prefixed
// records (a header, one record per event, gaps, an end marker), a Writer
// that keeps compression off the caller's path, and a Reader that recovers
// every complete record of a damaged file and says what was lost and where.
// docs/trace-format.md is the specification; this package implements it.
package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/fxamacker/cbor/v2"

	"github.com/replaycheck/replaycheck/node"
)

// Format constants. Version changes when the layout of existing records
// changes; new header keys and new optional record types do not change it.
const (
	Magic   = "replaycheck-trace"
	Version = 1
	// MaxRecord caps one record's length, so a damaged or hostile length
	// cannot make a reader allocate without bound.
	MaxRecord = 64 << 20
)

// Limits on what headers, gaps and ends may hold. Every verb prints node
// names on every line and keeps per-node state, so a hostile or broken
// trace must not be able to make them huge. Writers refuse to exceed them
// (reasons are clipped instead); readers refuse traces that do.
const (
	// MaxNameLen caps node names, the system, bug, driver and codec
	// names, and param, run and stats keys, in bytes.
	MaxNameLen = 256
	// MaxTypeNameLen caps message type names (Go type names with their
	// package paths and type arguments).
	MaxTypeNameLen = 1024
	// MaxNodes caps the nodes of a system: at about 65 KB per simulated
	// node, 10,000 nodes already need some 650 MB.
	MaxNodes = 10000
	// MaxTypes caps the message type table.
	MaxTypes = 10000
	// MaxEntries caps the params and run entries of a header and the
	// stats of an end record.
	MaxEntries = 1024
	// MaxValueLen caps a param or run value, in bytes, and the values of
	// each map together.
	MaxValueLen = 64 << 10
	// MaxReasonLen caps the reason of a gap or end record, in bytes.
	MaxReasonLen = 4096
)

// Record type bytes. Types with the high bit set are optional extensions a
// reader may skip; any other unknown type is an error.
const (
	TypeHeader byte = 'H'
	TypeEvent  byte = 'E'
	TypeGap    byte = 'G'
	TypeEnd    byte = 'Z'

	optionalBit byte = 0x80
)

// Header opens every segment of a trace. A file holds one segment per
// writer session: a live node restarted with the same trace file appends a
// new segment.
type Header struct {
	Magic   string `cbor:"magic"`
	Version int    `cbor:"version"`
	System  string `cbor:"system"`
	// Nodes lists every node of the system, sorted; event records name
	// nodes by their index in it.
	Nodes []node.ID `cbor:"nodes"`
	// Recorded lists the nodes whose events this segment holds.
	Recorded []node.ID `cbor:"recorded"`
	// Config is the system configuration the nodes were built with.
	Bug    string            `cbor:"bug"`
	Params map[string]string `cbor:"params,omitempty"`
	// Run describes how the trace was made (seed, network settings, ...).
	// A live recording names the build of the binary under RunBuild.
	Run map[string]string `cbor:"run,omitempty"`
	// Codec names the message encoding; Types is the message type table
	// event records index into.
	Codec string   `cbor:"codec"`
	Types []string `cbor:"types"`
	// Driver is "sim", "live" or "merge".
	Driver string `cbor:"driver"`
	// Start is the time origin (Unix ns); the first event's time is
	// encoded relative to it.
	Start int64 `cbor:"start"`
	// Segment numbers the writer sessions of one file, from 0.
	Segment int `cbor:"segment"`
	// StateHashes says whether event records carry state hashes.
	StateHashes bool `cbor:"state_hashes"`
	// HashEvery and HashBytes say which events carry one (docs/
	// trace-format.md): with both 0 (every trace before they existed),
	// every event; with HashEvery K > 1, every K-th event of each node;
	// with HashBytes B > 0, a node's next hash comes after as many of its
	// events as its last hash covered bytes divided by B, so hashing costs
	// about B bytes per event however large the state. In every mode the
	// first event of each incarnation is hashed, and the end record holds
	// each node's final hash. Replay compares whatever hashes are there;
	// these fields only say how they were spaced.
	HashEvery int `cbor:"hash_every,omitempty"`
	HashBytes int `cbor:"hash_bytes,omitempty"`
	// Continues marks a writer's stop notice: a frame it appended after a
	// write error (a full disk) stopped its segment, holding only gap
	// and end records that belong to that segment. Readers fold it into
	// the segment before.
	Continues bool `cbor:"continues,omitempty"`
	// ForkClocks, in a fork's trace (replay fork), lists ascending the
	// Lamport floors of its forks: at each, the forking simulator raised
	// every node's clock to at least that value, so that the
	// continuation's events sort after the steps it kept. Replay raises a
	// node's clock the same way before its first event above a floor.
	// Empty in every other trace.
	ForkClocks []uint64 `cbor:"fork_clocks,omitempty"`
	// SerialClocks is the Lamport clock above which the simulator ran
	// the trace serially: before each event it raised the event's node's
	// clock to the highest clock run so far, so each event's clock is one
	// above the one run before it and replay's causal order is the order
	// the simulator ran them, in time. Without it a node that receives
	// nothing keeps a low clock, and its later events (a timer, a crash)
	// are replayed before busier nodes' earlier ones, moving now() ahead
	// early. Replay raises a node's clock to the clock of the step before
	// each such event. 1 in a simulated run (serial from its first
	// event), a fork's floor in a fork of a recording; 0 in recordings,
	// in runs simulated with causal clocks, and in traces made before it
	// existed.
	SerialClocks uint64 `cbor:"serial_clocks,omitempty"`
}

// Gap says events of a node were not recorded (the recorder degraded: a
// full disk, a slow disk, memory pressure). Seqs From..To (inclusive) are
// missing; To is 0 when recording stopped for good.
type Gap struct {
	Node   node.ID `cbor:"node"`
	From   uint64  `cbor:"from"`
	To     uint64  `cbor:"to"`
	Reason string  `cbor:"reason"`
	// Killed marks, in a merged file, the end of a process that was
	// killed (its segment had no end record): the node crashed there,
	// and nothing its recording should have held is lost. Without it a
	// gap to the end is a recording that stopped before the run ended.
	Killed bool `cbor:"killed,omitempty"`
}

// Seqs says which seqs the gap covers: "seq 5", "seqs 5..9" or "seqs 5
// onwards".
func (g Gap) Seqs() string {
	switch {
	case g.To == 0:
		return fmt.Sprintf("seqs %d onwards", g.From)
	case g.To == g.From:
		return fmt.Sprintf("seq %d", g.From)
	}
	return fmt.Sprintf("seqs %d..%d", g.From, g.To)
}

// End closes a segment that its writer closed cleanly.
type End struct {
	Reason string `cbor:"reason"`
	Events uint64 `cbor:"events"`
	Time   int64  `cbor:"time"` // Unix ns at the end of the run
	// Stats are the driver's counters (messages sent, dropped, ...).
	Stats map[string]int64 `cbor:"stats,omitempty"`
	// States holds the hash of each running node's state after its last
	// event, for the nodes whose last event carries none (state hashes
	// spaced by HashEvery or HashBytes), so that replay checks every
	// node's final state.
	States []FinalState `cbor:"states,omitempty"`
}

// FinalState is a node's state hash after its event Seq.
type FinalState struct {
	Node node.ID `cbor:"node"`
	Seq  uint64  `cbor:"seq"`
	Hash uint64  `cbor:"hash"`
}

var headerEnc cbor.EncMode

func init() {
	var err error
	if headerEnc, err = cbor.CoreDetEncOptions().EncMode(); err != nil {
		panic(err)
	}
}

// encoder appends the binary encoding of records.
type encoder struct {
	b []byte
}

func (e *encoder) uvarint(x uint64) { e.b = binary.AppendUvarint(e.b, x) }
func (e *encoder) varint(x int64)   { e.b = binary.AppendVarint(e.b, x) }
func (e *encoder) byte1(x byte)     { e.b = append(e.b, x) }
func (e *encoder) u64(x uint64)     { e.b = binary.LittleEndian.AppendUint64(e.b, x) }
func (e *encoder) bytes(p []byte) {
	e.uvarint(uint64(len(p)))
	e.b = append(e.b, p...)
}
func (e *encoder) str(s string) {
	e.uvarint(uint64(len(s)))
	e.b = append(e.b, s...)
}

var errShort = errors.New("record body ends early")

// decoder reads a record body; the first error sticks.
type decoder struct {
	b     []byte
	off   int
	err   error
	alias bool // bytes points into b instead of copying
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.off += n
	return x
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.off += n
	return x
}

func (d *decoder) byte1() byte {
	if d.err != nil || d.off >= len(d.b) {
		d.fail(errShort)
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *decoder) u64() uint64 {
	if d.err != nil || len(d.b)-d.off < 8 {
		d.fail(errShort)
		return 0
	}
	x := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return x
}

// raw returns a length-prefixed byte string, aliasing the record buffer.
func (d *decoder) raw() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail(errShort)
		return nil
	}
	p := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return p
}

func (d *decoder) bytes() []byte {
	p := d.raw()
	if p == nil {
		return nil
	}
	if d.alias {
		if len(p) == 0 {
			return nil // as a copy of nothing is
		}
		return p[:len(p):len(p)] // an append to it must not write into b
	}
	return append([]byte(nil), p...)
}

func (d *decoder) str() string { return string(d.raw()) }

// count reads a list length, bounded by what the remaining body could hold
// (every element takes at least one byte), so a damaged count cannot make
// the reader allocate without bound.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)-d.off) || n > math.MaxInt32 {
		d.fail(fmt.Errorf("list of %d elements in %d remaining bytes", n, len(d.b)-d.off))
		return 0
	}
	if n > MaxListElements {
		d.fail(fmt.Errorf("list of %d elements, more than an event holds (%d)", n, MaxListElements))
		return 0
	}
	return int(n)
}

// MaxListElements bounds each list of an event (its nondeterministic
// values, sends, timers set and cancelled), written and read alike. A
// clock reading takes 2 bytes of a record and 64 decoded: a forged 326 KB
// file of 8 million of them per event took 2 GB to read. 65,536 clock
// readings, or sends, or timers, in one handler call is far more than
// any system makes.
const MaxListElements = 1 << 16

// RunBuild is the Header.Run key of the build that recorded a live trace:
// the main package, its module's version, the commit (with "+modified"
// for a changed tree) and the Go version.
const RunBuild = "build"
