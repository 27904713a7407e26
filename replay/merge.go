package replay

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// Trace is one or more trace files merged into the causal total order.
// Events[i] is step i.
type Trace struct {
	Files  []*record.File
	Header *record.Header // the first file's first segment
	Nodes  []node.ID      // every node of the system, sorted
	// Recorded lists the nodes with at least one event, sorted.
	Recorded []node.ID
	Events   []*node.Event
	fileOf   []uint16 // index into Files of each step's file

	stepOf map[nodeSeq]int // (node, seq) -> step
	recvOf map[node.MsgID][]int
	// Unknown lists, per node, the stretches where its recording is
	// missing (a killed process, damage, a recorder that fell behind):
	// replay cannot know its state there.
	Unknown map[node.ID][]Unknown

	byNode map[node.ID][]int // lazily: each node's steps
	net    *network          // lazily: what the trace tells of its network (Fate)
}

// Unknown is a stretch of steps during which a node's state is unknown:
// after executing step After (its last recorded event) and before executing
// step Until (a restart that rebuilds it from its disk), or to the end of
// the trace when Until is -1.
type Unknown struct {
	After  int
	Until  int
	Reason string
}

// Covers reports whether the node's state is unknown once step pos has
// executed.
func (u Unknown) Covers(pos int) bool { return pos > u.After && (u.Until < 0 || pos < u.Until) }

// UnknownAt returns the stretch covering position pos for a node, if any.
func (t *Trace) UnknownAt(id node.ID, pos int) (Unknown, bool) {
	for _, u := range t.Unknown[id] {
		if u.Covers(pos) {
			return u, true
		}
	}
	return Unknown{}, false
}

type nodeSeq struct {
	node node.ID
	seq  uint64
}

// Problem is one validation finding.
type Problem struct {
	File string
	Node node.ID
	Seq  uint64
	Msg  string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s: node %s seq %d: %s", p.File, p.Node, p.Seq, p.Msg)
}

// ValidationError lists what makes a set of traces unusable for replay.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d problem(s) in the traces: %s", len(e.Problems), e.Problems[0])
	if len(e.Problems) > 1 {
		fmt.Fprintf(&b, " (and %d more)", len(e.Problems)-1)
	}
	return b.String()
}

// maxProblems caps how many findings validation collects.
const maxProblems = 50

// Load reads and merges trace files. A file that is not a trace is an
// error; damage inside a file is not (the damaged node's recording ends
// there, see Trace.Unknown), but inconsistencies between files are.
func Load(paths ...string) (*Trace, error) {
	if len(paths) == 0 {
		return nil, errors.New("no trace files given")
	}
	files := make([]*record.File, 0, len(paths))
	for _, p := range paths {
		f, err := record.ReadFile(p)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return Merge(files)
}

// FromBytes reads one trace held in memory (a simulation written to a
// buffer) and merges it.
func FromBytes(data []byte, name string) (*Trace, error) {
	f, err := record.Read(bytes.NewReader(data), name, int64(len(data)))
	if err != nil {
		return nil, err
	}
	return Merge([]*record.File{f})
}

// Merge merges already-read files into causal order and validates them.
func Merge(files []*record.File) (*Trace, error) {
	if len(files) == 0 {
		return nil, errors.New("no trace files given")
	}
	t := &Trace{Files: files, Header: files[0].Header, Unknown: map[node.ID][]Unknown{}}
	var problems []Problem
	add := func(p Problem) {
		if len(problems) < maxProblems {
			problems = append(problems, p)
		}
	}
	nodes := map[node.ID]bool{}
	total := 0
	for _, f := range files {
		if f.Header.System != t.Header.System {
			return nil, fmt.Errorf("%s records system %q but %s records %q: traces of different systems cannot be merged",
				f.Path, f.Header.System, files[0].Path, t.Header.System)
		}
		if f.Header.Bug != t.Header.Bug {
			return nil, fmt.Errorf("%s was built with bug %q but %s with %q: traces of differently built nodes cannot be merged",
				f.Path, f.Header.Bug, files[0].Path, t.Header.Bug)
		}
		for _, n := range f.Header.Nodes {
			nodes[n] = true
		}
		total += len(f.Events)
	}
	for n := range nodes {
		t.Nodes = append(t.Nodes, n)
	}
	slices.Sort(t.Nodes)

	type tagged struct {
		ev   *node.Event
		file uint16
	}
	all := make([]tagged, 0, total)
	for fi, f := range files {
		for _, ev := range f.Events {
			all = append(all, tagged{ev, uint16(fi)})
		}
	}
	less := func(a, b tagged) int {
		if c := cmp.Compare(a.ev.Lamport, b.ev.Lamport); c != 0 {
			return c
		}
		if c := strings.Compare(string(a.ev.Node), string(b.ev.Node)); c != 0 {
			return c
		}
		return cmp.Compare(a.ev.Seq, b.ev.Seq)
	}
	if !slices.IsSortedFunc(all, less) {
		slices.SortStableFunc(all, less)
	}
	// Sized up front: growing maps of a million entries step by step
	// cost a third of loading a trace.
	t.stepOf = make(map[nodeSeq]int, len(all))
	t.recvOf = make(map[node.MsgID][]int, len(all)/2)
	t.Events = make([]*node.Event, len(all))
	t.fileOf = make([]uint16, len(all))
	recorded := map[node.ID]bool{}
	for i, tg := range all {
		t.Events[i], t.fileOf[i] = tg.ev, tg.file
		key := nodeSeq{tg.ev.Node, tg.ev.Seq}
		if prev, dup := t.stepOf[key]; dup {
			add(Problem{files[tg.file].Path, tg.ev.Node, tg.ev.Seq,
				fmt.Sprintf("recorded twice (also in %s)", files[t.fileOf[prev]].Path)})
			continue
		}
		t.stepOf[key] = i
		recorded[tg.ev.Node] = true
		if tg.ev.Kind == node.KindRecv {
			t.recvOf[tg.ev.Msg()] = append(t.recvOf[tg.ev.Msg()], i)
		}
	}
	for n := range recorded {
		t.Recorded = append(t.Recorded, n)
	}
	slices.Sort(t.Recorded)
	t.validate(add)
	if len(problems) > 0 {
		return nil, &ValidationError{Problems: problems}
	}
	t.findTruncations()
	return t, nil
}

// validate checks per-node sequence and clock order, and every receive
// against its send when the sender's trace is present.
func (t *Trace) validate(add func(Problem)) {
	gaps := map[node.ID][]record.Gap{}
	for _, f := range t.Files {
		for _, g := range f.Gaps {
			gaps[g.Node] = append(gaps[g.Node], g)
		}
	}
	covered := func(id node.ID, from, to uint64) bool {
		for _, g := range gaps[id] {
			if g.From <= from && (g.To == 0 || g.To >= to) {
				return true
			}
		}
		return false
	}
	last := map[node.ID]*node.Event{}
	// Walking in step order visits each node's events in seq order,
	// because each node's Lamport clock increases with its seq (checked
	// here: a violation shows up as a seq going backwards).
	for i, ev := range t.Events {
		file := t.Files[t.fileOf[i]].Path
		prev := last[ev.Node]
		switch {
		case ev.Seq == 0:
			add(Problem{file, ev.Node, ev.Seq, "seq 0 (seqs start at 1)"})
			continue
		case prev == nil && ev.Seq != 1 && ev.Kind != node.KindRestart && !covered(ev.Node, 1, ev.Seq-1):
			add(Problem{file, ev.Node, ev.Seq, fmt.Sprintf("the node's recording starts at seq %d: seqs 1..%d are missing", ev.Seq, ev.Seq-1)})
		case prev != nil && ev.Seq <= prev.Seq:
			add(Problem{file, ev.Node, ev.Seq, fmt.Sprintf("Lamport clock %d is not below the clock %d of the node's later event seq %d", ev.Lamport, prev.Lamport, prev.Seq)})
		case prev != nil && ev.Seq != prev.Seq+1 && ev.Kind != node.KindRestart && !covered(ev.Node, prev.Seq+1, ev.Seq-1):
			add(Problem{file, ev.Node, ev.Seq, fmt.Sprintf("seqs %d..%d are missing", prev.Seq+1, ev.Seq-1)})
		}
		if prev == nil || ev.Seq > prev.Seq {
			last[ev.Node] = ev
		}
		if ev.Kind != node.KindRecv {
			continue
		}
		if ev.Lamport <= ev.SendLamport {
			add(Problem{file, ev.Node, ev.Seq, fmt.Sprintf("received at Lamport %d, not after its send at %d", ev.Lamport, ev.SendLamport)})
		}
		sstep, ok := t.stepOf[nodeSeq{ev.From, ev.MsgSeq}]
		if !ok {
			continue // the sender's trace is absent or lost that event
		}
		send := t.Events[sstep]
		switch {
		case send.Lamport != ev.SendLamport:
			add(Problem{file, ev.Node, ev.Seq, fmt.Sprintf("message %s claims send clock %d, but %s seq %d has clock %d",
				ev.Msg(), ev.SendLamport, ev.From, ev.MsgSeq, send.Lamport)})
		case int(ev.MsgIndex) >= len(send.Sends):
			add(Problem{file, ev.Node, ev.Seq, fmt.Sprintf("message %s: %s seq %d sent only %d messages", ev.Msg(), ev.From, ev.MsgSeq, len(send.Sends))})
		default:
			s := send.Sends[ev.MsgIndex]
			if s.To != ev.Node || s.Type != ev.MsgType || s.Digest != xxhash.Sum64(ev.Payload) {
				add(Problem{file, ev.Node, ev.Seq, fmt.Sprintf("message %s does not match its send (sent %s to %s)", ev.Msg(), s.Type, s.To)})
			}
		}
	}
}

// findTruncations finds where nodes' recordings stop before the run did: a
// segment without an end record (killed process), damage, or a gap. From
// the node's last event before the cut, its state is unknown until its next
// restart event.
func (t *Trace) findTruncations() {
	type cut struct {
		node   node.ID
		seq    uint64 // last seq recorded before the cut (0: none)
		reason string
	}
	var cuts []cut
	for _, f := range t.Files {
		for i, seg := range f.Segments {
			last := len(f.Events)
			if i+1 < len(f.SegmentStart) {
				last = f.SegmentStart[i+1]
			}
			if f.SegmentEnded[i] {
				continue
			}
			// The segment is named by its place in the file, which is
			// what its header's number should be, but need not.
			reason := fmt.Sprintf("%s: the recording of segment %d has no end record (the process was killed or is still running)", f.Path, i)
			if i == len(f.Segments)-1 && f.Damage != nil {
				reason = f.Damage.Error()
			}
			lastSeq := map[node.ID]uint64{}
			for _, ev := range f.Events[f.SegmentStart[i]:last] {
				lastSeq[ev.Node] = ev.Seq
			}
			for _, id := range seg.Recorded {
				cuts = append(cuts, cut{id, lastSeq[id], reason})
			}
		}
		for _, g := range f.Gaps {
			if g.From == 0 {
				continue // not a gap (readers refuse it)
			}
			cuts = append(cuts, cut{g.Node, g.From - 1, fmt.Sprintf("%s: %s of %s were not recorded: %s", f.Path, g.Seqs(), g.Node, g.Reason)})
		}
	}
	for _, c := range cuts {
		after := -1
		if c.seq > 0 {
			s, ok := t.stepOf[nodeSeq{c.node, c.seq}]
			if !ok {
				continue
			}
			after = s
		}
		until := -1
		for s := after + 1; s < len(t.Events); s++ {
			if ev := t.Events[s]; ev.Node == c.node && ev.Kind == node.KindRestart {
				until = s
				break
			}
		}
		if until >= 0 && after >= 0 && t.Events[until].Seq == c.seq+1 {
			continue // the restart follows the last recorded event: nothing was lost
		}
		t.Unknown[c.node] = append(t.Unknown[c.node], Unknown{After: after, Until: until, Reason: c.reason})
	}
}

// File is the path of the file step came from.
func (t *Trace) File(step int) string { return t.Files[t.fileOf[step]].Path }

// Step returns the step of a node's event by seq.
func (t *Trace) Step(id node.ID, seq uint64) (int, bool) {
	s, ok := t.stepOf[nodeSeq{id, seq}]
	return s, ok
}

// SendStep returns the step that sent the message a recv event received.
func (t *Trace) SendStep(ev *node.Event) (int, bool) {
	if ev.Kind != node.KindRecv {
		return 0, false
	}
	return t.Step(ev.From, ev.MsgSeq)
}

// Receipts returns the steps at which message id was received (empty if it
// never was: lost, or still in flight when the recording ended).
func (t *Trace) Receipts(id node.MsgID) []int { return t.recvOf[id] }

// NodeSteps lists the steps of a node's events, in order.
func (t *Trace) NodeSteps(id node.ID) []int {
	if t.byNode == nil {
		t.byNode = map[node.ID][]int{}
		for s, ev := range t.Events {
			t.byNode[ev.Node] = append(t.byNode[ev.Node], s)
		}
	}
	return t.byNode[id]
}

// LastStepOf returns the node's last step at or before pos (false if none).
func (t *Trace) LastStepOf(id node.ID, pos int) (int, bool) {
	steps := t.NodeSteps(id)
	i := sort.SearchInts(steps, pos+1)
	if i == 0 {
		return 0, false
	}
	return steps[i-1], true
}

// Len is the number of steps.
func (t *Trace) Len() int { return len(t.Events) }
