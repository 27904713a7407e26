package statedb

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
)

// Key namespaces. Node IDs end with a NUL in keys so that n1's keys are
// not a prefix of n10's.
const (
	nsMeta     = 'M' // the database's description (Meta), version metaVersion
	nsStep     = 'E' // E step(8) -> stepRecord, version metaVersion
	nsField    = 'F' // F node 0 path -> value, one version per change
	nsDelta    = 'D' // D node 0 -> delta, one version per step that changed the node
	nsSnapshot = 'C' // C node 0 -> every leaf, a version every SnapshotEvery deltas
	nsBuild    = 'B' // in each part: the build it belongs to (Meta.Build), version metaVersion
)

// Versions: step s is written at version s+1 (Badger versions start at 1);
// data that does not change with steps is written at metaVersion and read at
// latest.
const (
	metaVersion = 1
	latest      = 1 << 62
)

func version(step int) uint64 { return uint64(step) + 1 }

func stepKey(step int) []byte {
	return binary.BigEndian.AppendUint64([]byte{nsStep}, uint64(step))
}

func nodeKey(ns byte, id node.ID) []byte {
	k := make([]byte, 0, len(id)+2)
	k = append(k, ns)
	k = append(k, id...)
	return append(k, 0)
}

func fieldKey(id node.ID, path string) []byte {
	return append(nodeKey(nsField, id), path...)
}

// Pseudo-fields stored with each node's state: what the runtime knows of
// the node beside its handler.
const (
	StatusPath = "@status" // "up" or "down" (crashed)
	TimersPath = "@timers" // pending timers: name(id) in due order
	// TasksPath[ID] is one live task (node.Go): its name, state, what it
	// waits for and since when. Absent for nodes without tasks.
	TasksPath = "@tasks"
)

// encoding of leaf lists and deltas: uvarint lengths and strings.

type encoder struct{ b []byte }

func (e *encoder) uvarint(x uint64) { e.b = binary.AppendUvarint(e.b, x) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.b = append(e.b, s...) }

type decoder struct {
	b   []byte
	err error
}

var errCorrupt = errors.New("statedb: corrupt record")

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errCorrupt
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func encodeLeaves(leaves []state.Leaf) []byte {
	var e encoder
	e.uvarint(uint64(len(leaves)))
	for _, l := range leaves {
		e.str(l.Path)
		e.str(l.Value)
	}
	return e.b
}

func decodeLeaves(b []byte) ([]state.Leaf, error) {
	d := decoder{b: b}
	n := d.uvarint()
	if n > uint64(len(b)) {
		return nil, errCorrupt
	}
	out := make([]state.Leaf, 0, n)
	for range n {
		p := d.str()
		v := d.str()
		out = append(out, state.Leaf{Path: p, Value: v})
	}
	if d.err != nil {
		return nil, fmt.Errorf("decode state: %w", d.err)
	}
	return out, nil
}
