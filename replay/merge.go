package replay

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// Trace is one or more trace files merged into the causal total order.
// Event(i) is step i.
type Trace struct {
	Files  []*record.File
	Header *record.Header // the first file's first segment, with the earliest Start of any file
	Nodes  []node.ID      // every node of the system, sorted
	// Recorded lists the nodes with at least one event, sorted.
	Recorded []node.ID
	events   eventStore
	fileOf   []uint16 // index into Files of each step's file

	byNode map[node.ID]*nodeSteps // each node's steps, and how to find one by seq
	ids    map[node.ID]int32      // interned senders, for receipts
	recv   []receipt              // every receive, sorted by message then step
	// Unknown lists, per node, the stretches where its recording is
	// missing (a killed process, damage, a recorder that fell behind):
	// replay cannot know its state there.
	Unknown map[node.ID][]Unknown
	// lostAfter maps a damaged file (its index) to the earliest step
	// after which a node of its last segment is unknown for the damage.
	lostAfter map[int]int
	// stops are the gaps no given file covers that lost events (to the
	// end, or in the middle), in file order (RecordingStops).
	stops []RecordingStop

	// Codecs are the message codecs its parts were recorded with, the
	// first file's first; more than one when nodes ran binaries of
	// different releases. A replay encodes as the first.
	Codecs []string

	net     *network // lazily: what the trace tells of its network (Fate)
	netOnce sync.Once
	steps   *network // what the steps told of it, learnt as they were indexed
}

// nodeSteps is one node's steps in order, with the seqs they hold in runs
// of consecutive seqs (a node's seqs are consecutive but across a restart
// or a gap), so that finding a step by seq costs a search over the runs, not
// a map entry per event.
type nodeSteps struct {
	steps []int
	runs  []seqRun
	// crashes and restarts are the steps of its crash and restart events,
	// ascending: whether it was down at a step, read without replaying.
	// kills are its restarts that follow no crash event (its process was
	// killed, and the restart begins its next recording).
	crashes, restarts, kills []int
}

// seqRun says that steps[at], steps[at+1], ... hold seqs seq, seq+1, ...
// up to the next run.
type seqRun struct {
	seq uint64
	at  int
}

// receipt is one receive: the message (its sender interned) and the step.
type receipt struct {
	from  int32
	index uint32
	seq   uint64
	step  int
}

func (a receipt) compare(b receipt) int {
	if c := cmp.Compare(a.from, b.from); c != 0 {
		return c
	}
	if c := cmp.Compare(a.seq, b.seq); c != 0 {
		return c
	}
	if c := cmp.Compare(a.index, b.index); c != 0 {
		return c
	}
	return cmp.Compare(a.step, b.step)
}

// Unknown is a stretch of steps during which a node's state is unknown:
// after executing step After (its last recorded event) and before executing
// step Until (a restart that rebuilds it from its disk), or to the end of
// the trace when Until is -1.
type Unknown struct {
	After  int
	Until  int
	Reason string
	// Killed says the stretch is a killed process's end (its segment has
	// no end record): a crash of the node, not a loss of recording.
	Killed bool
	// Down says the node's last recorded event before the stretch is its
	// crash: it was down when its recording stopped, and what is unknown
	// is whether and how it came back, not a state it ran in.
	Down bool `json:",omitempty"`
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
	// Hint says what the problems suggest, when something does (files
	// whose recordings began far apart: different runs).
	Hint string
	// tooManyBreaks: a spilled load gave up on events out of order in
	// their files, which a load in memory takes.
	tooManyBreaks bool
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	if len(e.Problems) >= maxProblems {
		// Collecting stops there: there may be many more.
		fmt.Fprintf(&b, "%d or more problems in the traces: %s (and more)", len(e.Problems), e.Problems[0])
	} else {
		fmt.Fprintf(&b, "%d problem(s) in the traces: %s", len(e.Problems), e.Problems[0])
		if len(e.Problems) > 1 {
			fmt.Fprintf(&b, " (and %d more)", len(e.Problems)-1)
		}
	}
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	return b.String()
}

// runsApart is a hint for files that do not merge: their recordings
// began further apart than one cluster's nodes start (a minute), so they
// are likely of different runs. "" when they are not, or are one file.
func runsApart(files []*record.File) string {
	const apart = time.Minute
	var first, last *record.File
	for _, f := range files {
		if f.Header == nil || f.Header.Start == 0 {
			continue
		}
		if first == nil || f.Header.Start < first.Header.Start {
			first = f
		}
		if last == nil || f.Header.Start > last.Header.Start {
			last = f
		}
	}
	if first == nil || time.Duration(last.Header.Start-first.Header.Start) <= apart {
		return ""
	}
	at := func(f *record.File) string {
		return time.Unix(0, f.Header.Start).UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("the files' recordings began %v apart (%s at %s, %s at %s): files of different runs of a cluster do not merge",
		time.Duration(last.Header.Start-first.Header.Start).Round(time.Second), filepath.Base(first.Path), at(first), filepath.Base(last.Path), at(last))
}

// maxProblems caps how many findings validation collects.
const maxProblems = 50

// Load reads and merges trace files. A file that is not a trace is an
// error; damage inside a file is not (the damaged node's recording ends
// there, see Trace.Unknown), but inconsistencies between files are.
// Traces longer than DefaultInMemory events are spilled to a temporary
// file (see LoadWith).
func Load(paths ...string) (*Trace, error) {
	return LoadWith(LoadOptions{}, paths...)
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
	t, err := newTrace(files)
	if err != nil {
		return nil, err
	}
	type tagged struct {
		ev   *node.Event
		file uint16
		pos  int32 // in the files, one after the other
	}
	total := 0
	for _, f := range files {
		total += len(f.Events)
	}
	if total == 0 {
		// A header and no event (a recorder killed at once, the run of an
		// empty schedule): there is no step to replay or show. Damage
		// right after the header is why, when there is some: said alone,
		// "no events recorded" hid it (only info named it).
		for _, f := range files {
			if f.Damage != nil {
				return nil, fmt.Errorf("no events could be read: %v", f.Damage)
			}
		}
		return nil, fmt.Errorf("%s: no events recorded: nothing to replay", strings.Join(record.Paths(files), ", "))
	}
	if total > math.MaxInt32 {
		return nil, fmt.Errorf("%d events: at most %d can be merged in memory", total, math.MaxInt32)
	}
	all := make([]tagged, 0, total)
	for fi, f := range files {
		for _, ev := range f.Events {
			all = append(all, tagged{ev, uint16(fi), int32(len(all))})
		}
	}
	// Events equal in merge order keep the files' order (a stable sort's
	// result), by a total order.
	order := func(a, b tagged) int {
		if c := mergeOrder(a.ev, b.ev); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	}
	all = mergeRuns(all, order)
	events := make(memStore, len(all))
	var sizes indexSizes
	for _, tg := range all {
		sizes.count(tg.ev)
	}
	ix := t.indexer(len(all), sizes)
	for i, tg := range all {
		events[i] = tg.ev
		ix.add(i, tg.ev, tg.file)
	}
	t.events = events
	return t.finish(ix)
}

// maxRuns is how many sorted runs mergeRuns merges; more are sorted.
const maxRuns = 64

// mergeRuns sorts xs by the strict total order cmp. Each file's events
// are normally already in order, so xs is a few sorted runs, one per file
// (a live recording has a file per node): merging them pairwise costs
// about log2(files) comparisons per event where sorting costs log2(events).
// Input of many runs is sorted instead (pdqsort, several times faster
// than a stable sort).
func mergeRuns[T any](xs []T, cmp func(a, b T) int) []T {
	var ends []int // each run's end
	for i := 1; i < len(xs); i++ {
		if cmp(xs[i-1], xs[i]) > 0 {
			if ends = append(ends, i); len(ends) >= maxRuns {
				slices.SortFunc(xs, cmp)
				return xs
			}
		}
	}
	ends = append(ends, len(xs))
	if len(ends) == 1 {
		return xs
	}
	src, dst := xs, make([]T, len(xs))
	for len(ends) > 1 {
		var merged []int
		start := 0
		for k := 0; k < len(ends); k += 2 {
			if k+1 == len(ends) { // an odd run out: copied as it is
				copy(dst[start:], src[start:ends[k]])
				merged = append(merged, ends[k])
				break
			}
			mid, end := ends[k], ends[k+1]
			i, j, o := start, mid, start
			for i < mid && j < end {
				if cmp(src[j], src[i]) < 0 {
					dst[o] = src[j]
					j++
				} else {
					dst[o] = src[i]
					i++
				}
				o++
			}
			o += copy(dst[o:], src[i:mid])
			copy(dst[o:], src[j:end])
			merged = append(merged, end)
			start = end
		}
		ends = merged
		src, dst = dst, src
	}
	return src
}

// mergeOrder is the causal total order replay runs events in: by Lamport
// clock, ties broken by node and seq.
func mergeOrder(a, b *node.Event) int {
	if c := cmp.Compare(a.Lamport, b.Lamport); c != 0 {
		return c
	}
	if c := strings.Compare(string(a.Node), string(b.Node)); c != 0 {
		return c
	}
	return cmp.Compare(a.Seq, b.Seq)
}

// newTrace checks that the files can be merged and starts their trace.
func newTrace(files []*record.File) (*Trace, error) {
	if len(files) == 0 {
		return nil, errors.New("no trace files given")
	}
	t := &Trace{Files: files, Header: files[0].Header, Unknown: map[node.ID][]Unknown{}}
	nodes := map[node.ID]bool{}
	for _, f := range files {
		for _, seg := range f.Segments {
			if !slices.Contains(t.Codecs, seg.Codec) {
				t.Codecs = append(t.Codecs, seg.Codec)
			}
		}
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
		if err := endsCount(f); err != nil {
			return nil, err
		}
		if msg := f.RepeatedSeqs(); msg != "" {
			return nil, fmt.Errorf("%s: %s", f.Path, msg)
		}
	}
	for n := range nodes {
		t.Nodes = append(t.Nodes, n)
	}
	slices.Sort(t.Nodes)
	// Times are shown from the first recorder's start, whichever file
	// holds it: from the first file's, a node whose process started
	// earlier showed negative times.
	for _, f := range files[1:] {
		if s := f.Header.Start; s != 0 && s < t.Header.Start {
			h := *t.Header
			h.Start = s
			t.Header = &h
		}
	}
	return t, nil
}

// endsCount checks each ended segment of f against its end record's
// count of events: a writer counts what it wrote, so a difference means
// events were taken out of the file (or put in) afterwards, which nothing
// else would show (the receives of removed sends pass as messages of an
// unrecorded past, a seq jump at a restart as a killed process's).
func endsCount(f *record.File) error {
	if f.Count == 0 && len(f.Events) > 0 {
		return nil // put together by hand (Merge's callers), not read: nothing was counted
	}
	end := 0
	for i, ended := range f.SegmentEnded {
		if !ended {
			continue
		}
		if end >= len(f.Ends) {
			break
		}
		next := f.Count
		if i+1 < len(f.SegmentStart) {
			next = f.SegmentStart[i+1]
		}
		if held, counted := uint64(next-f.SegmentStart[i]), f.Ends[end].Events; held != counted {
			return fmt.Errorf("%s: the end record of segment %d counts %d events but the segment holds %d: events were removed from the file (or added) after it was written", f.Path, i, counted, held)
		}
		end++
	}
	return nil
}

// indexer builds a trace's step indexes as steps arrive in merge order,
// and validates each step as it is indexed: a spilled trace is then
// decoded once to load it, not once more to validate it.
type indexer struct {
	t        *Trace
	problems []Problem // found indexing (an event recorded twice)
	v        validator
}

// indexSizes counts what the indexes will hold, so that they are made
// to size: grown by appending, their spare capacity and the copies left
// behind cost as much again at the peak.
type indexSizes struct {
	perNode  map[node.ID]nodeCount
	receives int
}

// nodeCount is how many events a node has, and its highest seq:
// validation holds a receive whose send is not indexed yet only if its
// sender has that seq.
type nodeCount struct {
	events int
	maxSeq uint64
}

func (s *indexSizes) count(ev *node.Event) {
	if s.perNode == nil {
		s.perNode = map[node.ID]nodeCount{}
	}
	c := s.perNode[ev.Node]
	s.perNode[ev.Node] = nodeCount{c.events + 1, max(c.maxSeq, ev.Seq)}
	if ev.Kind == node.KindRecv {
		s.receives++
	}
}

func (t *Trace) indexer(steps int, sizes indexSizes) *indexer {
	t.fileOf = make([]uint16, 0, steps)
	t.byNode = make(map[node.ID]*nodeSteps, len(sizes.perNode))
	for id, n := range sizes.perNode {
		t.byNode[id] = &nodeSteps{steps: make([]int, 0, n.events)}
	}
	t.recv = make([]receipt, 0, sizes.receives)
	t.ids = map[node.ID]int32{}
	ix := &indexer{t: t}
	ix.v.start(t, steps, sizes.perNode)
	t.steps = &network{down: map[node.ID][][2]int64{}}
	return ix
}

func (ix *indexer) problem(p Problem) {
	if len(ix.problems) < maxProblems {
		ix.problems = append(ix.problems, p)
	}
}

// add indexes and validates step i, which holds ev from file fi.
func (ix *indexer) add(i int, ev *node.Event, fi uint16) {
	ix.index(i, ev, fi)
	ix.t.steps.learnEvent(ev)
	ix.v.step(i, ev)
}

func (ix *indexer) index(i int, ev *node.Event, fi uint16) {
	t := ix.t
	t.fileOf = append(t.fileOf, fi)
	ns := t.byNode[ev.Node]
	if ns == nil {
		ns = &nodeSteps{}
		t.byNode[ev.Node] = ns
	}
	if k := len(ns.steps); k > 0 {
		last := t.fileOf[ns.steps[k-1]]
		lastSeq := ns.runs[len(ns.runs)-1].seq + uint64(k-1-ns.runs[len(ns.runs)-1].at)
		switch {
		case ev.Seq == lastSeq:
			ix.problem(Problem{t.Files[fi].Path, ev.Node, ev.Seq,
				fmt.Sprintf("recorded twice (also in %s)", t.Files[last].Path)})
			return
		case ev.Seq < lastSeq:
			return // out of order: validation reports it
		case ev.Seq != lastSeq+1:
			ns.runs = append(ns.runs, seqRun{ev.Seq, k})
		}
	} else {
		ns.runs = append(ns.runs, seqRun{ev.Seq, 0})
	}
	switch ev.Kind {
	case node.KindCrash:
		ns.crashes = append(ns.crashes, i)
	case node.KindRestart:
		ns.restarts = append(ns.restarts, i)
		if k := len(ns.steps); k > 0 && (len(ns.crashes) == 0 || ns.crashes[len(ns.crashes)-1] != ns.steps[k-1]) {
			ns.kills = append(ns.kills, i)
		}
	}
	ns.steps = append(ns.steps, i)
	if ev.Kind == node.KindRecv {
		t.recv = append(t.recv, receipt{from: t.intern(ev.From), index: ev.MsgIndex, seq: ev.MsgSeq, step: i})
	}
}

func (t *Trace) intern(id node.ID) int32 {
	i, ok := t.ids[id]
	if !ok {
		i = int32(len(t.ids))
		t.ids[id] = i
	}
	return i
}

// finish completes a trace whose steps are all indexed and validated:
// it ends validation and finds where recordings stop.
func (t *Trace) finish(ix *indexer) (*Trace, error) {
	if !slices.IsSortedFunc(t.recv, receipt.compare) {
		slices.SortFunc(t.recv, receipt.compare)
	}
	for n := range t.byNode {
		t.Recorded = append(t.Recorded, n)
	}
	slices.Sort(t.Recorded)
	for _, p := range ix.v.finish() {
		ix.problem(p)
	}
	if len(ix.problems) > 0 {
		t.Close()
		return nil, &ValidationError{Problems: ix.problems, Hint: runsApart(t.Files)}
	}
	t.findTruncations()
	if problems := t.judgeOrphans(ix.v.orphans); len(problems) > 0 {
		t.Close()
		return nil, &ValidationError{Problems: problems, Hint: runsApart(t.Files)}
	}
	return t, nil
}

// Close releases what the trace holds outside the heap (the temporary
// file of a spilled trace). A trace is usable until then; closing one
// that holds nothing is harmless.
func (t *Trace) Close() error {
	if t.events == nil {
		return nil
	}
	return t.events.close()
}

// findTruncations finds where nodes' recordings stop before the run did: a
// segment without an end record (killed process), damage, or a gap. From
// the node's last event before the cut, its state is unknown until its next
// restart event.
// Missing lists the nodes of the traces' header that no file records
// and that have no event: a node whose file was left behind when the
// traces were collected. Their state is unknown throughout.
func (t *Trace) Missing() []node.ID {
	// A set, not a search of the lists per node: a run of 10,000 nodes
	// would compare IDs 10^8 times.
	listed := make(map[node.ID]bool, len(t.Recorded))
	for _, id := range t.Recorded {
		listed[id] = true
	}
	for _, f := range t.Files {
		for _, h := range f.Segments {
			for _, id := range h.Recorded {
				listed[id] = true
			}
		}
	}
	var out []node.ID
	for _, id := range t.Nodes {
		if !listed[id] {
			out = append(out, id)
		}
	}
	return out
}

func (t *Trace) findTruncations() {
	missing := t.Missing()
	for _, id := range missing {
		t.Unknown[id] = append(t.Unknown[id], Unknown{After: -1, Until: -1,
			Reason: fmt.Sprintf("none of the given traces records it (give its trace file too: they record %d of the %d nodes their header lists)", len(t.Nodes)-len(missing), len(t.Nodes))})
	}
	type cut struct {
		node   node.ID
		seq    uint64 // last seq recorded before the cut (0: none)
		reason string
		stop   *RecordingStop // a gap: the node's recording stopped, or lost events
		gapTo  uint64         // a gap in the middle's last seq (0: none, or to the end)
		file   int            // the damaged file whose end this is, or -1
		killed bool           // a killed process's end (no end record)
	}
	var cuts []cut
	t.lostAfter = map[int]int{}
	for fi, f := range t.Files {
		spans := f.NodeSpans()
		for i, seg := range f.Segments {
			if f.SegmentEnded[i] {
				continue
			}
			// The segment is named by its place in the file, which is
			// what its header's number should be, but need not.
			reason := fmt.Sprintf("%s: the recording of segment %d has no end record (the process was killed or is still running)", f.Path, i)
			damaged := -1
			if i == len(f.Segments)-1 && f.Damage != nil {
				reason, damaged = f.Damage.Error(), fi
			}
			for _, id := range seg.Recorded {
				// A segment killed before it recorded anything of the
				// node cuts after the node's last event before it, not
				// from the start.
				last := uint64(0)
				for j := i; j >= 0 && last == 0; j-- {
					last = spans[j][id].Last
				}
				if damaged < 0 && last > 0 && t.FirstAbsent(id, last+1) > last+1 {
					// Another given file goes on with the node's next
					// seqs (a recording split into files, one without
					// its end record): nothing of the node is missing.
					continue
				}
				cuts = append(cuts, cut{id, last, reason, nil, 0, damaged, damaged < 0})
			}
		}
		for _, g := range f.Gaps {
			if g.From == 0 {
				continue // not a gap (readers refuse it)
			}
			// Seqs of the gap that another file recorded are no loss (a
			// merge given with the file of a node it lacked, a merge of
			// merges): the loss begins at the first one no file has, and
			// a gap to the end whose first seq another file has is that
			// file's to end.
			first := t.FirstAbsent(g.Node, g.From)
			if g.To == 0 && first > g.From || g.To != 0 && first > g.To {
				continue
			}
			stop := &RecordingStop{Node: g.Node, Path: f.Path, Reason: g.Reason}
			if g.To != 0 {
				stop.Lost = g.Seqs()
			}
			if g.Killed {
				// A merge's record of a killed process's end: a
				// crash, as in the file it came from.
				stop = nil
			}
			cuts = append(cuts, cut{g.Node, first - 1, fmt.Sprintf("%s: %s of %s were not recorded: %s", f.Path, g.Seqs(), g.Node, g.Reason), stop, g.To, -1, g.Killed})
		}
	}
	// A file may hold many gaps (a recorder that kept falling behind, or
	// a forged file of 200,000): each is found by search, not by a walk
	// over the node's steps or stretches, and the gaps that make one
	// stretch of a node are one stretch, and one stop, that counts them.
	type stretchKey struct {
		node         node.ID
		after, until int
	}
	type stopKey struct {
		stretchKey
		path string
		mid  bool
	}
	stretches := map[stretchKey]int{}
	stopAt := map[stopKey]int{}
	reasons := map[stretchKey]int{} // a stretch's reasons, shown or counted
	foldedStops := map[int]int{}    // further gaps folded into a stop, by its index
	for _, c := range cuts {
		after := -1
		if c.seq > 0 {
			s, ok := t.Step(c.node, c.seq)
			if !ok {
				// A gap past the node's last recorded event lost events
				// after it: its state is unknown from there.
				if s, ok = t.lastStepBefore(c.node, c.seq); !ok {
					continue
				}
			}
			after = s
		}
		until := -1
		if ns := t.byNode[c.node]; ns != nil {
			if j := sort.SearchInts(ns.restarts, after+1); j < len(ns.restarts) {
				until = ns.restarts[j]
			}
		}
		if until >= 0 && after >= 0 && t.Event(until).Seq == c.seq+1 {
			continue // the restart follows the last recorded event: nothing was lost
		}
		// A gap to the end is a stop when no restart follows, and a gap
		// in the middle a loss unless it reaches a restart: both of
		// those are a killed process's end, kept so by a merge (the
		// process restarted, rebuilding the node from its disk).
		killedEnd := until >= 0 && (c.gapTo == 0 || t.Event(until).Seq == c.gapTo+1)
		key := stretchKey{c.node, after, until}
		if c.stop != nil && !killedEnd {
			sk := stopKey{key, c.stop.Path, c.stop.Lost != ""}
			if i, ok := stopAt[sk]; ok {
				foldedStops[i]++
			} else {
				st := *c.stop
				st.After = after
				stopAt[sk] = len(t.stops)
				t.stops = append(t.stops, st)
			}
		}
		if was, ok := t.lostAfter[c.file]; c.file >= 0 && (!ok || after < was) {
			t.lostAfter[c.file] = after
		}
		// The same stretch for two reasons (a segment killed before it
		// recorded anything after one killed, a gap to the end) is one
		// stretch that gives both.
		if i, ok := stretches[key]; ok {
			u := &t.Unknown[c.node][i]
			// Counted, not read back from the text: a reason may hold
			// "; " itself.
			if reasons[key] < maxStretchReasons {
				u.Reason += "; " + c.reason
			}
			reasons[key]++
			u.Killed = u.Killed && c.killed
			continue
		}
		down := after >= 0 && t.Event(after).Kind == node.KindCrash
		stretches[key], reasons[key] = len(t.Unknown[c.node]), 1
		t.Unknown[c.node] = append(t.Unknown[c.node], Unknown{After: after, Until: until, Reason: c.reason, Killed: c.killed && c.stop == nil, Down: down})
	}
	for k, i := range stretches {
		if n := reasons[k] - maxStretchReasons; n > 0 {
			t.Unknown[k.node][i].Reason += fmt.Sprintf("; and %d more", n)
		}
	}
	for _, i := range stopAt {
		if n := foldedStops[i]; n > 0 {
			st := &t.stops[i]
			if st.Lost != "" {
				st.Lost += fmt.Sprintf(" and %d more gap(s)", n)
			}
		}
	}
}

// maxStretchReasons is how many reasons an unknown stretch names; the
// rest are counted.
const maxStretchReasons = 3

// lastStepBefore is the step of the node's event of the greatest seq
// below seq, if it has one.
func (t *Trace) lastStepBefore(id node.ID, seq uint64) (int, bool) {
	ns := t.byNode[id]
	if ns == nil {
		return 0, false
	}
	r := sort.Search(len(ns.runs), func(i int) bool { return ns.runs[i].seq >= seq }) - 1
	if r < 0 {
		return 0, false
	}
	end := len(ns.steps)
	if r+1 < len(ns.runs) {
		end = ns.runs[r+1].at
	}
	k := min(uint64(end-ns.runs[r].at), seq-ns.runs[r].seq) // events of the run below seq
	return ns.steps[ns.runs[r].at+int(k)-1], true
}

// LostAfter is where the damage of file i (an index into Files) begins
// to cost the replay: the earliest step after which a node of the file's
// last segment is unknown for it. ok is false when the file is not
// damaged, or its damage left no node unknown.
func (t *Trace) LostAfter(i int) (after int, ok bool) {
	after, ok = t.lostAfter[i]
	return after, ok
}

// File is the path of the file step came from.
func (t *Trace) File(step int) string { return t.Files[t.fileOf[step]].Path }

// Step returns the step of a node's event by seq.
func (t *Trace) Step(id node.ID, seq uint64) (int, bool) {
	ns := t.byNode[id]
	if ns == nil {
		return 0, false
	}
	r := sort.Search(len(ns.runs), func(i int) bool { return ns.runs[i].seq > seq }) - 1
	if r < 0 {
		return 0, false
	}
	end := len(ns.steps)
	if r+1 < len(ns.runs) {
		end = ns.runs[r+1].at
	}
	// In uint64: a seq read from a trace (a receive's MsgSeq) can be
	// anything, and its distance into the run need not fit an int.
	if seq-ns.runs[r].seq >= uint64(end-ns.runs[r].at) {
		return 0, false
	}
	return ns.steps[ns.runs[r].at+int(seq-ns.runs[r].seq)], true
}

// FirstAbsent is the first seq at or after from that no event of node id
// in the trace holds.
func (t *Trace) FirstAbsent(id node.ID, from uint64) uint64 {
	ns := t.byNode[id]
	if ns == nil {
		return from
	}
	for s := from; ; {
		r := sort.Search(len(ns.runs), func(i int) bool { return ns.runs[i].seq > s }) - 1
		if r < 0 {
			return s
		}
		end := len(ns.steps)
		if r+1 < len(ns.runs) {
			end = ns.runs[r+1].at
		}
		last := ns.runs[r].seq + uint64(end-ns.runs[r].at) - 1
		if s > last {
			return s
		}
		s = last + 1 // the next run may go on from there
	}
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
func (t *Trace) Receipts(id node.MsgID) []int {
	from, ok := t.ids[id.From]
	if !ok {
		return nil
	}
	key := receipt{from: from, index: id.Index, seq: id.Seq, step: -1}
	i, _ := slices.BinarySearchFunc(t.recv, key, receipt.compare)
	var steps []int
	for ; i < len(t.recv) && t.recv[i].from == from && t.recv[i].seq == id.Seq && t.recv[i].index == id.Index; i++ {
		steps = append(steps, t.recv[i].step)
	}
	return steps
}

// NodeSteps lists the steps of a node's events, in order. The caller must
// not change it.
func (t *Trace) NodeSteps(id node.ID) []int {
	if ns := t.byNode[id]; ns != nil {
		return ns.steps
	}
	return nil
}

// Crashes counts the node's crashes up to step pos: its crash events at
// or before pos, and its killed processes (live recordings: no crash
// event), from the step after the last event a killed process recorded
// (Unknown.Killed), or from the restart that follows it.
func (t *Trace) Crashes(id node.ID, pos int) int {
	n := 0
	if ns := t.byNode[id]; ns != nil {
		n = sort.SearchInts(ns.crashes, pos+1) + sort.SearchInts(ns.kills, pos+1)
	}
	for _, u := range t.Unknown[id] {
		if u.Killed && u.After < pos && (u.Until < 0 || u.Until > pos) {
			n++ // killed, its restart (counted in kills) not reached yet
		}
	}
	return n
}

// DownAt reports whether the node is down once step pos has executed (a
// crash event of it at or before pos, and no restart since), and the
// step of that crash. A node whose recording stopped is not down for it:
// its state is unknown (UnknownAt).
func (t *Trace) DownAt(id node.ID, pos int) (crash int, down bool) {
	ns := t.byNode[id]
	if ns == nil {
		return 0, false
	}
	i := sort.SearchInts(ns.crashes, pos+1)
	if i == 0 {
		return 0, false
	}
	crash = ns.crashes[i-1]
	if j := sort.SearchInts(ns.restarts, pos+1); j > 0 && ns.restarts[j-1] > crash {
		return 0, false
	}
	return crash, true
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
func (t *Trace) Len() int { return t.events.len() }

// Event returns the event of step i (0 <= i < Len()). The caller must not
// change it; a spilled trace may return a different copy of the same event
// on another call.
func (t *Trace) Event(i int) *node.Event { return t.events.at(i) }

// Prefix returns the events of steps 0..n-1 (what a fork of the run keeps).
// The caller must not change them.
func (t *Trace) Prefix(n int) []*node.Event {
	if m, ok := t.events.(memStore); ok {
		return m[:n:n]
	}
	evs := make([]*node.Event, n)
	for i := range evs {
		evs[i] = t.Event(i)
	}
	return evs
}
