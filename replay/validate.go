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
// waits for the end too.
type validator struct {
	t    *Trace
	gaps map[node.ID][]record.Gap
	last map[node.ID]seqClock // each node's latest event so far
	// Step i's messages have fingerprints prints[firstMsg[i]:firstMsg[i+1]].
	firstMsg []uint32
	prints   []uint64
	// problems are in step order (a step's own before its receive's),
	// at most maxProblems: later ones cannot be among the first told.
	problems []stepProblem
	waiting  []pendingRecv // receives whose send was not indexed yet
	tooMany  bool          // more messages than firstMsg can count
}

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

func (v *validator) start(t *Trace, steps int) {
	v.t = t
	v.gaps = map[node.ID][]record.Gap{}
	for _, f := range t.Files {
		for _, g := range f.Gaps {
			v.gaps[g.Node] = append(v.gaps[g.Node], g)
		}
	}
	v.last = map[node.ID]seqClock{}
	v.firstMsg = make([]uint32, 1, steps+1)
}

func (v *validator) covered(id node.ID, from, to uint64) bool {
	for _, g := range v.gaps[id] {
		if g.From <= from && (g.To == 0 || g.To >= to) {
			return true
		}
	}
	return false
}

func (v *validator) note(step int, msg string) {
	if len(v.problems) < maxProblems {
		v.problems = append(v.problems, stepProblem{step: step, msg: msg})
	}
}

// step validates step i, which holds ev. Steps come in order, each once.
func (v *validator) step(i int, ev *node.Event, fi uint16) {
	for _, s := range ev.Sends {
		v.prints = append(v.prints, msgPrint(ev.Lamport, s.To, s.Type, s.Digest))
	}
	if len(v.prints) > math.MaxUint32 {
		v.tooMany = true
	}
	v.firstMsg = append(v.firstMsg, uint32(len(v.prints)))

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
	p := pendingRecv{step: i, msg: ev.Msg(), sendLamport: ev.SendLamport, to: ev.Node, msgType: ev.MsgType, digest: xxhash.Sum64(ev.Payload)}
	send, ok := v.t.Step(ev.From, ev.MsgSeq)
	if !ok {
		// Not found: the sender's trace is absent or lost that event,
		// or the send comes later (told at the end).
		if sender, ok := v.last[ev.From]; !ok || sender.seq < ev.MsgSeq {
			v.waiting = append(v.waiting, p)
		}
		return
	}
	first, end := v.firstMsg[send], v.firstMsg[send+1]
	if int(p.msg.Index) >= int(end-first) || v.prints[first+p.msg.Index] != msgPrint(p.sendLamport, p.to, p.msgType, p.digest) {
		if len(v.problems) < maxProblems {
			v.problems = append(v.problems, stepProblem{step: i, recv: &p})
		}
	}
}

// msgPrint is a fingerprint of a message as its send recorded it and as
// its receive claims it: the send's clock, addressee, type and digest.
func msgPrint(lamport uint64, to node.ID, typ string, digest uint64) uint64 {
	h := mix(digest ^ lamport)
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
	if v.tooMany {
		return []Problem{{File: t.Files[0].Path, Msg: fmt.Sprintf("over %d messages: too many to check receives against their sends", uint64(math.MaxUint32))}}
	}
	var late []stepProblem
	for _, p := range v.waiting {
		if _, ok := t.Step(p.msg.From, p.msg.Seq); ok {
			if msg := v.against(p); msg != "" {
				late = append(late, stepProblem{step: p.step, msg: msg})
			}
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
