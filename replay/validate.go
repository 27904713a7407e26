package replay

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// validator checks a trace step by step as it is indexed, in step order:
// per-node sequence and clock order, and every receive against its send
// when the sender's trace holds it.
//
// A receive's send is an earlier step in a consistent trace (its clock is
// lower), so the receive is compared with a fingerprint of the send's
// messages taken when the send was indexed, not with the send read again:
// a spilled trace is decoded once to load it rather than twice. What a
// mismatch was is told at the end, from the send itself. A receive whose
// send is not indexed yet (a trace whose clocks contradict its messages)
// waits for the end too, if its sender has that seq at all.
//
// A fingerprint could hide a mismatch only by a 64-bit collision: odds of
// 2^-64 by chance, as for the message digests themselves. A trace forged
// to collide is still caught by replay, which compares every message the
// re-executed sender sends with the recorded one.
type validator struct {
	t     *Trace
	gaps  map[node.ID]gapCover
	count map[node.ID]nodeCount // each node's events in the trace
	last  map[node.ID]seqClock  // each node's latest event so far
	// Step i's messages have fingerprints prints[firstMsg[i]:firstMsg[i+1]].
	firstMsg []uint32
	prints   []uint64
	// problems are in step order (a step's own before its receive's),
	// at most maxProblems: later ones cannot be among the first told.
	problems []stepProblem
	waiting  []pendingRecv // receives whose send was not indexed yet
	// unprinted: past 2^32 messages, the offsets cannot count further
	// and receives are no longer compared with their sends here.
	unprinted bool
	// orphans are, per sender, the receives of messages sent as seqs
	// beyond any the sender's recording holds (judged once the
	// recordings' ends are known: orphanProblems).
	orphans map[node.ID]*orphanRecvs
}

// orphanRecvs are the receives of messages a node sent as seqs past the
// last its recording holds.
type orphanRecvs struct {
	n                   int
	firstStep, lastStep int
	minSeq, maxSeq      uint64
	// first and last are the earliest and latest of the receives' times
	// (each receiver's clock).
	first, last int64
}

// maxWaiting bounds the receives held for a send still to come. Each held
// receive whose send comes is a problem (its claimed send clock is below
// the send's), so past this many the trace is reported from the first.
const maxWaiting = 1 << 16

type seqClock struct{ seq, lamport uint64 }

// stepProblem is a problem found at a step; recv, if set, is a receive
// that does not match its send, whose words are found at the end.
type stepProblem struct {
	step int
	msg  string
	recv *pendingRecv
}

// pendingRecv is what checking a receive against its send needs of it.
type pendingRecv struct {
	step        int
	msg         node.MsgID
	sendLamport uint64
	to          node.ID
	msgType     string
	digest      uint64
}

func (v *validator) start(t *Trace, steps int, count map[node.ID]nodeCount) {
	v.t, v.count = t, count
	byNode := map[node.ID][]record.Gap{}
	for _, f := range t.Files {
		for _, g := range f.Gaps {
			byNode[g.Node] = append(byNode[g.Node], g)
		}
	}
	v.gaps = make(map[node.ID]gapCover, len(byNode))
	for id, gs := range byNode {
		v.gaps[id] = newGapCover(gs)
	}
	v.last = map[node.ID]seqClock{}
	v.firstMsg = make([]uint32, 1, steps+1)
}

func (v *validator) covered(id node.ID, from, to uint64) bool {
	return v.gaps[id].covers(from, to)
}

// gapCover answers whether one of a node's gaps covers a seq range, by
// search: a file may hold thousands of gaps of a node, and a seq jump is
// asked about at every one.
type gapCover struct {
	from  []uint64 // the gaps' first seqs, ascending
	reach []uint64 // reach[i]: the furthest last seq of gaps 0..i (MaxUint64: to the end)
}

func newGapCover(gaps []record.Gap) gapCover {
	gaps = slices.Clone(gaps)
	slices.SortFunc(gaps, func(a, b record.Gap) int { return cmp.Compare(a.From, b.From) })
	c := gapCover{from: make([]uint64, len(gaps)), reach: make([]uint64, len(gaps))}
	for i, g := range gaps {
		to := g.To
		if to == 0 {
			to = math.MaxUint64
		}
		if i > 0 {
			to = max(to, c.reach[i-1])
		}
		c.from[i], c.reach[i] = g.From, to
	}
	return c
}

// covers says whether one gap holds all of seqs from..to.
func (c gapCover) covers(from, to uint64) bool {
	// The gaps that begin at or before from; of those, the one that
	// reaches furthest.
	i, _ := slices.BinarySearch(c.from, from+1)
	return i > 0 && c.reach[i-1] >= to
}

func (v *validator) note(step int, msg string) {
	if len(v.problems) < maxProblems {
		v.problems = append(v.problems, stepProblem{step: step, msg: msg})
	}
}

// step validates step i, which holds ev. Steps come in order, each once.
func (v *validator) step(i int, ev *node.Event) {
	if !v.unprinted {
		for _, s := range ev.Sends {
			v.prints = append(v.prints, msgPrint(ev.Lamport, s.To, s.Type, s.Digest))
		}
		if len(v.prints) > math.MaxUint32 {
			v.unprinted, v.firstMsg, v.prints = true, nil, nil
		} else {
			v.firstMsg = append(v.firstMsg, uint32(len(v.prints)))
		}
	}

	prev, seen := v.last[ev.Node]
	switch {
	case ev.Seq == 0:
		v.note(i, "seq 0 (seqs start at 1)")
		return
	case !seen && ev.Seq != 1 && ev.Kind != node.KindRestart && !v.covered(ev.Node, 1, ev.Seq-1):
		v.note(i, fmt.Sprintf("the node's recording starts at seq %d: seqs 1..%d are missing", ev.Seq, ev.Seq-1))
	case seen && ev.Seq <= prev.seq:
		v.note(i, fmt.Sprintf("Lamport clock %d is not below the clock %d of the node's later event seq %d", ev.Lamport, prev.lamport, prev.seq))
	case seen && ev.Seq != prev.seq+1 && ev.Kind != node.KindRestart && !v.covered(ev.Node, prev.seq+1, ev.Seq-1):
		v.note(i, fmt.Sprintf("seqs %d..%d are missing", prev.seq+1, ev.Seq-1))
	}
	if !seen || ev.Seq > prev.seq {
		v.last[ev.Node] = seqClock{ev.Seq, ev.Lamport}
	}
	if ev.Kind != node.KindRecv {
		return
	}
	if ev.Lamport <= ev.SendLamport {
		v.note(i, fmt.Sprintf("received at Lamport %d, not after its send at %d", ev.Lamport, ev.SendLamport))
	}
	send, ok := v.t.Step(ev.From, ev.MsgSeq)
	if !ok && ev.MsgSeq > v.count[ev.From].maxSeq {
		v.orphan(i, ev)
	}
	if v.unprinted {
		return
	}
	p := pendingRecv{step: i, msg: ev.Msg(), sendLamport: ev.SendLamport, to: ev.Node, msgType: ev.MsgType, digest: xxhash.Sum64(ev.Payload)}
	if !ok {
		// Not found: the sender's trace is absent or lost that event,
		// or the send comes later (checked at the end).
		sender, seen := v.last[ev.From]
		if (!seen || sender.seq < ev.MsgSeq) && ev.MsgSeq <= v.count[ev.From].maxSeq && len(v.waiting) < maxWaiting {
			v.waiting = append(v.waiting, p)
		}
		return
	}
	if !v.matches(send, p) && len(v.problems) < maxProblems {
		v.problems = append(v.problems, stepProblem{step: i, recv: &p})
	}
}

// orphan notes receive i (ev) of a message sent as a seq past every seq
// of the sender the trace holds.
func (v *validator) orphan(i int, ev *node.Event) {
	if v.orphans == nil {
		v.orphans = map[node.ID]*orphanRecvs{}
	}
	o := v.orphans[ev.From]
	if o == nil {
		o = &orphanRecvs{firstStep: i, minSeq: ev.MsgSeq, first: ev.Time, last: ev.Time}
		v.orphans[ev.From] = o
	}
	o.n++
	o.lastStep = i
	o.minSeq, o.maxSeq = min(o.minSeq, ev.MsgSeq), max(o.maxSeq, ev.MsgSeq)
	o.first, o.last = min(o.first, ev.Time), max(o.last, ev.Time)
}

// matches says whether receive p claims the message its send, at step
// send (already indexed), recorded.
func (v *validator) matches(send int, p pendingRecv) bool {
	first, end := v.firstMsg[send], v.firstMsg[send+1]
	return int(p.msg.Index) < int(end-first) && v.prints[first+p.msg.Index] == msgPrint(p.sendLamport, p.to, p.msgType, p.digest)
}

// msgPrint is a fingerprint of a message as its send recorded it and as
// its receive claims it: the send's clock, addressee, type and digest,
// each mixed in on its own so that no two cancel.
func msgPrint(lamport uint64, to node.ID, typ string, digest uint64) uint64 {
	h := mix(digest)
	h = mix(h ^ lamport)
	h = mix(h ^ xxhash.Sum64String(string(to)))
	return mix(h ^ xxhash.Sum64String(typ))
}

// mix is SplitMix64's finalizer: every input bit moves every output bit.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// finish checks the receives still waiting for their send, and tells the
// problems found, in step order, with the file and event of each.
func (v *validator) finish() []Problem {
	t := v.t
	// The waiting receives are in step order: the first maxProblems
	// that do not match are all that can be told. (None waits once the
	// fingerprints stopped.)
	if v.unprinted {
		v.waiting = nil
	}
	var late []stepProblem
	for _, p := range v.waiting {
		if len(late) == maxProblems {
			break
		}
		if send, ok := t.Step(p.msg.From, p.msg.Seq); ok && !v.matches(send, p) {
			late = append(late, stepProblem{step: p.step, recv: &p})
		}
	}
	problems := v.problems
	if len(late) > 0 {
		// A step's own problems come before its receive's: the stable
		// sort keeps the earlier list's first.
		problems = append(problems, late...)
		slices.SortStableFunc(problems, func(a, b stepProblem) int { return cmp.Compare(a.step, b.step) })
	}
	var out []Problem
	for _, p := range problems[:min(len(problems), maxProblems)] {
		msg := p.msg
		if p.recv != nil {
			if msg = v.against(*p.recv); msg == "" {
				continue // the fingerprints of equal messages differ: cannot be
			}
		}
		ev := t.Event(p.step)
		out = append(out, Problem{t.Files[t.fileOf[p.step]].Path, ev.Node, ev.Seq, msg})
	}
	v.firstMsg, v.prints, v.waiting, v.last = nil, nil, nil, nil
	return out
}

// against compares a receive with its send, read from the trace, and says
// how they differ ("" if they do not).
func (v *validator) against(p pendingRecv) string {
	step, _ := v.t.Step(p.msg.From, p.msg.Seq)
	send := v.t.Event(step)
	switch {
	case send.Lamport != p.sendLamport:
		return fmt.Sprintf("message %s claims send clock %d, but %s seq %d has clock %d",
			p.msg, p.sendLamport, p.msg.From, p.msg.Seq, send.Lamport)
	case int(p.msg.Index) >= len(send.Sends):
		return fmt.Sprintf("message %s: %s seq %d sent only %d messages", p.msg, p.msg.From, p.msg.Seq, len(send.Sends))
	}
	if s := send.Sends[p.msg.Index]; s.To != p.to || s.Type != p.msgType || s.Digest != p.digest {
		return fmt.Sprintf("message %s does not match its send (sent %s to %s)", p.msg, s.Type, s.To)
	}
	return ""
}
