package state

import (
	"strconv"

	"github.com/replaycheck/replaycheck/node"
)

// DefaultHashBytes is the state-hash spacing drivers use unless told
// otherwise: about this many bytes of canonical state hashed per event of
// a node. A node whose state encodes in fewer bytes is hashed after every
// event, as before spacing existed; a node with a 1 MB replicated log is
// hashed about every 2,000 of its events instead of after every one.
const DefaultHashBytes = 512

// HashSpacing is how a driver spaces state hashes; its two fields are a
// trace header's HashEvery and HashBytes (record.Header). It lives here,
// not in package record, because a live binary built without -tags
// record hashes too and must not link the recorder.
type HashSpacing struct {
	Every int // hash every Every-th event of each node (0 or 1: every one)
	Bytes int // or, when > 0, after size/Bytes events, size being the last hash's
}

// Describe is the spacing in words, for replay info.
func (s HashSpacing) Describe() string {
	switch {
	case s.Bytes > 0:
		return "spaced to about " + strconv.Itoa(s.Bytes) + " bytes hashed per event of a node"
	case s.Every > 1:
		return "after every " + strconv.Itoa(s.Every) + "th event of each node"
	}
	return "after every event"
}

// HashPacer decides, per node, which events get a state hash under a
// spacing, and remembers each node's last unhashed event so that its final
// state can go into the end record. The decision depends only on the
// events and the state sizes, so a re-run makes the same trace.
type HashPacer struct {
	spacing HashSpacing
	nodes   map[node.ID]*paced
}

type paced struct {
	since   int // events since the last hash
	gap     int // events between hashes, from the last hash's size
	pending bool
	seq     uint64 // the last event's seq, when pending
}

// NewHashPacer paces hashes by s.
func NewHashPacer(s HashSpacing) *HashPacer {
	return &HashPacer{spacing: s, nodes: map[node.ID]*paced{}}
}

// After hashes the state of the node that ran ev (just dispatched) into
// ev, when the spacing says this event gets a hash. The first event of an
// incarnation (init, restart) always does; a crash leaves nothing to hash.
func (p *HashPacer) After(ev *node.Event, in *node.Instance) {
	n := p.nodes[ev.Node]
	if n == nil {
		n = &paced{gap: 1}
		p.nodes[ev.Node] = n
	}
	if !in.Up() {
		n.pending = false
		return
	}
	n.since++
	n.pending, n.seq = true, ev.Seq
	if n.since < n.gap && ev.Kind != node.KindInit && ev.Kind != node.KindRestart {
		return
	}
	var size int
	ev.StateHash, size = HashSize(in.Handler())
	ev.HasStateHash = true
	n.since, n.pending = 0, false
	switch {
	case p.spacing.Bytes > 0:
		n.gap = max(1, size/p.spacing.Bytes)
	case p.spacing.Every > 1:
		n.gap = p.spacing.Every
	default:
		n.gap = 1
	}
}

// NodeHash is a node's state hash after its event Seq.
type NodeHash struct {
	Node node.ID
	Seq  uint64
	Hash uint64
}

// Final hashes, in the order of ids, the state of each node whose last
// event carries no hash (and that is still up): what a trace's end record
// holds (record End.States). instance finds a node's instance.
func (p *HashPacer) Final(ids []node.ID, instance func(node.ID) *node.Instance) []NodeHash {
	var out []NodeHash
	for _, id := range ids {
		if n := p.nodes[id]; n != nil && n.pending {
			out = append(out, NodeHash{Node: id, Seq: n.seq, Hash: Hash(instance(id).Handler())})
		}
	}
	return out
}
