package record

import (
	"github.com/replaycheck/replaycheck/node"
)

// Codec encodes events into self-contained records for a process's own
// scratch files (a loader spilling a trace larger than memory to disk). It
// interns node and type names as it meets them, so unlike a trace's records
// its encoding needs no header, and it is not a file format: it is only
// ever read back by the Codec that wrote it.
//
// A Codec is not safe for concurrent use while it encodes; once encoding is
// over, decoding only reads its tables.
type Codec struct {
	t *tables
}

// NewCodec returns an empty codec.
func NewCodec() *Codec {
	return &Codec{t: &tables{nodeIdx: map[node.ID]uint64{}, typeIdx: map[string]uint64{}, grow: true}}
}

// Append appends ev's record to b.
func (c *Codec) Append(b []byte, ev *node.Event) ([]byte, error) {
	e := encoder{b: b}
	err := encodeEvent(&e, c.t, ev, 0)
	return e.b, err
}

// Decode decodes one record written by Append into ev (which keeps no
// reference to b).
func (c *Codec) Decode(b []byte, ev *node.Event) error {
	return decodeEvent(&decoder{b: b}, c.t, ev, 0)
}

// DecodeAliasing is Decode with ev's byte slices (payloads, disk reads,
// crypto bytes) pointing into b instead of copied out of it: for a
// caller that leaves b unchanged for as long as it uses ev, and so saves
// allocating and copying every payload.
func (c *Codec) DecodeAliasing(b []byte, ev *node.Event) error {
	return decodeEvent(&decoder{b: b, alias: true}, c.t, ev, 0)
}
