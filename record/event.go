package record

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/replaycheck/replaycheck/node"
)

const (
	flagStateHash = 1
	flagScripted  = 2 // node.Event.Scripted
)

// tables map node IDs and message type names to the indexes event records
// use, as given by a segment's header.
type tables struct {
	nodes   []node.ID
	nodeIdx map[node.ID]uint64
	types   []string
	typeIdx map[string]uint64
	// grow adds names the tables do not have yet (a Codec's) instead of
	// refusing them (a segment's, fixed by its header).
	grow bool
}

func newTables(h *Header) *tables {
	t := &tables{nodes: h.Nodes, types: h.Types, nodeIdx: map[node.ID]uint64{}, typeIdx: map[string]uint64{}}
	for i, n := range h.Nodes {
		t.nodeIdx[n] = uint64(i)
	}
	for i, ty := range h.Types {
		t.typeIdx[ty] = uint64(i)
	}
	return t
}

func (t *tables) node(id node.ID) (uint64, error) {
	i, ok := t.nodeIdx[id]
	if !ok && t.grow {
		i = uint64(len(t.nodes))
		t.nodes = append(t.nodes, id)
		t.nodeIdx[id] = i
		return i, nil
	}
	if !ok {
		return 0, fmt.Errorf("node %q is not in the trace header's node list", id)
	}
	return i, nil
}

func (t *tables) typ(name string) (uint64, error) {
	i, ok := t.typeIdx[name]
	if !ok && t.grow {
		i = uint64(len(t.types))
		t.types = append(t.types, name)
		t.typeIdx[name] = i
		return i, nil
	}
	if !ok {
		return 0, fmt.Errorf("message type %q is not in the trace header's type table", name)
	}
	return i, nil
}

// encodeEvent appends an event record body (without length and type byte).
// prev is the time of the previous event record in the segment.
func encodeEvent(e *encoder, t *tables, ev *node.Event, prev int64) error {
	if ev.Seq == 0 {
		return errors.New("seq 0 (seqs start at 1)")
	}
	ni, err := t.node(ev.Node)
	if err != nil {
		return err
	}
	e.uvarint(ni)
	e.uvarint(ev.Seq)
	e.uvarint(ev.Lamport)
	e.byte1(byte(ev.Kind))
	var flags byte
	if ev.HasStateHash {
		flags |= flagStateHash
	}
	if ev.Scripted {
		flags |= flagScripted
	}
	e.byte1(flags)
	e.varint(ev.Time - prev)
	switch ev.Kind {
	case node.KindRecv:
		fi, err := t.node(ev.From)
		if err != nil {
			return err
		}
		ti, err := t.typ(ev.MsgType)
		if err != nil {
			return err
		}
		e.uvarint(fi)
		e.uvarint(ev.MsgSeq)
		e.uvarint(uint64(ev.MsgIndex))
		e.uvarint(ev.SendLamport)
		e.uvarint(ti)
		e.bytes(ev.Payload)
	case node.KindInput:
		ti, err := t.typ(ev.MsgType)
		if err != nil {
			return err
		}
		e.uvarint(ti)
		e.bytes(ev.Payload)
	case node.KindTimer:
		e.uvarint(uint64(ev.TimerID))
		e.str(ev.TimerName)
	case node.KindTask:
		e.uvarint(uint64(ev.Task))
		e.str(ev.TaskName)
		e.str(ev.Wake)
		e.uvarint(ev.WakeSeq)
	}
	e.uvarint(uint64(len(ev.Nondet)))
	for _, nd := range ev.Nondet {
		e.byte1(byte(nd.Kind))
		switch nd.Kind {
		case node.NondetClock:
			e.varint(nd.Int - ev.Time)
		case node.NondetSeed:
			e.u64(uint64(nd.Int))
		case node.NondetDisk:
			e.str(nd.Key)
			if nd.Found {
				e.byte1(1)
			} else {
				e.byte1(0)
			}
			e.bytes(nd.Bytes)
		case node.NondetCrypto:
			e.bytes(nd.Bytes)
		default:
			return fmt.Errorf("event %s/%d: unknown nondeterministic value kind %d", ev.Node, ev.Seq, nd.Kind)
		}
	}
	e.uvarint(uint64(len(ev.Sends)))
	for _, s := range ev.Sends {
		ti, err := t.node(s.To)
		if err != nil {
			return err
		}
		yi, err := t.typ(s.Type)
		if err != nil {
			return err
		}
		e.uvarint(ti)
		e.uvarint(yi)
		e.u64(s.Digest)
	}
	e.uvarint(uint64(len(ev.TimersSet)))
	for _, ts := range ev.TimersSet {
		e.uvarint(uint64(ts.ID))
		e.str(ts.Name)
		e.uvarint(uint64(ts.After))
	}
	e.uvarint(uint64(len(ev.TimersCancelled)))
	for _, id := range ev.TimersCancelled {
		e.uvarint(uint64(id))
	}
	e.uvarint(uint64(ev.DiskWrites))
	if ev.DiskWrites > 0 {
		e.u64(ev.DiskDigest)
	}
	if ev.HasStateHash {
		e.u64(ev.StateHash)
	}
	return nil
}

func (t *tables) nodeAt(d *decoder) node.ID {
	i := d.uvarint()
	if d.err == nil && i >= uint64(len(t.nodes)) {
		d.fail(fmt.Errorf("node index %d outside the header's %d nodes", i, len(t.nodes)))
		return ""
	}
	if d.err != nil {
		return ""
	}
	return t.nodes[i]
}

func (t *tables) typeAt(d *decoder) string {
	i := d.uvarint()
	if d.err == nil && i >= uint64(len(t.types)) {
		d.fail(fmt.Errorf("type index %d outside the header's %d types", i, len(t.types)))
		return ""
	}
	if d.err != nil {
		return ""
	}
	return t.types[i]
}

// decodeEvent decodes an event record body into ev (overwriting it).
func decodeEvent(d *decoder, t *tables, ev *node.Event, prev int64) error {
	*ev = node.Event{}
	ev.Node = t.nodeAt(d)
	ev.Seq = d.uvarint()
	ev.Lamport = d.uvarint()
	ev.Kind = node.Kind(d.byte1())
	flags := d.byte1()
	ev.Time = prev + d.varint()
	if d.err == nil && ev.Seq == 0 {
		return errors.New("seq 0 (seqs start at 1)")
	}
	if d.err == nil && (ev.Kind < node.KindInit || ev.Kind > node.KindTask) {
		return fmt.Errorf("invalid event kind %d", ev.Kind)
	}
	switch ev.Kind {
	case node.KindRecv:
		ev.From = t.nodeAt(d)
		ev.MsgSeq = d.uvarint()
		ev.MsgIndex = uint32(d.uvarint())
		ev.SendLamport = d.uvarint()
		ev.MsgType = t.typeAt(d)
		ev.Payload = d.bytes()
	case node.KindInput:
		ev.MsgType = t.typeAt(d)
		ev.Payload = d.bytes()
	case node.KindTimer:
		ev.TimerID = node.TimerID(d.uvarint())
		ev.TimerName = d.str()
	case node.KindTask:
		ev.Task = node.TaskID(d.uvarint())
		ev.TaskName = d.str()
		ev.Wake = d.str()
		ev.WakeSeq = d.uvarint()
	}
	if n := d.count(); n > 0 {
		ev.Nondet = make([]node.Nondet, n)
		for i := range ev.Nondet {
			nd := &ev.Nondet[i]
			nd.Kind = node.NondetKind(d.byte1())
			switch nd.Kind {
			case node.NondetClock:
				nd.Int = ev.Time + d.varint()
			case node.NondetSeed:
				nd.Int = int64(d.u64())
			case node.NondetDisk:
				nd.Key = d.str()
				nd.Found = d.byte1() == 1
				nd.Bytes = d.bytes()
			case node.NondetCrypto:
				nd.Bytes = d.bytes()
			default:
				if d.err == nil {
					return fmt.Errorf("unknown nondeterministic value kind %d", nd.Kind)
				}
			}
		}
	}
	if n := d.count(); n > 0 {
		ev.Sends = make([]node.Send, n)
		for i := range ev.Sends {
			ev.Sends[i].To = t.nodeAt(d)
			ev.Sends[i].Type = t.typeAt(d)
			ev.Sends[i].Digest = d.u64()
		}
	}
	if n := d.count(); n > 0 {
		ev.TimersSet = make([]node.TimerSet, n)
		for i := range ev.TimersSet {
			ev.TimersSet[i].ID = node.TimerID(d.uvarint())
			ev.TimersSet[i].Name = d.str()
			ev.TimersSet[i].After = time.Duration(d.uvarint())
		}
	}
	if n := d.count(); n > 0 {
		ev.TimersCancelled = make([]node.TimerID, n)
		for i := range ev.TimersCancelled {
			ev.TimersCancelled[i] = node.TimerID(d.uvarint())
		}
	}
	if w := d.uvarint(); w > math.MaxInt32 {
		d.fail(fmt.Errorf("%d disk writes", w))
	} else {
		ev.DiskWrites = int(w)
	}
	if ev.DiskWrites > 0 {
		ev.DiskDigest = d.u64()
	}
	ev.Scripted = flags&flagScripted != 0
	if flags&flagStateHash != 0 {
		ev.HasStateHash = true
		ev.StateHash = d.u64()
	}
	if d.err != nil {
		return d.err
	}
	if d.off != len(d.b) {
		return fmt.Errorf("%d unexpected bytes after the event", len(d.b)-d.off)
	}
	return nil
}

// DecodedSize estimates the memory a decoded event takes: its struct,
// each list element's, and the bytes of its strings and payloads. What
// holds events by the thousand (a load in memory, a cache of chunks)
// bounds them by it: a clock reading takes 2 bytes in a record and 64
// decoded.
func DecodedSize(ev *node.Event) int64 {
	const (
		event    = 320 // node.Event and its strings' headers
		nondet   = int64(unsafe.Sizeof(node.Nondet{}))
		send     = int64(unsafe.Sizeof(node.Send{}))
		timerSet = int64(unsafe.Sizeof(node.TimerSet{}))
		timerID  = int64(unsafe.Sizeof(node.TimerID(0)))
	)
	n := int64(event + len(ev.Payload) + len(ev.TimerName) + len(ev.TaskName) + len(ev.Wake))
	n += nondet * int64(len(ev.Nondet))
	for i := range ev.Nondet {
		n += int64(len(ev.Nondet[i].Key) + len(ev.Nondet[i].Bytes))
	}
	n += send*int64(len(ev.Sends)) + timerSet*int64(len(ev.TimersSet)) + timerID*int64(len(ev.TimersCancelled))
	for i := range ev.TimersSet {
		n += int64(len(ev.TimersSet[i].Name))
	}
	return n
}
