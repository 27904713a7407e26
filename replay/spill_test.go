package replay_test

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// simulateToFile runs sys and writes its trace to dir.
func simulateToFile(t testing.TB, sys *system.System, cfg sim.Config, dir string) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.lz4", sys.Name, cfg.Seed))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(sys, cfg.WithDefaults(sys), f); err != nil {
		t.Fatalf("sim %s: %v", sys.Name, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// simulatedFile simulates the first bundled system into dir and reads
// its trace back, for a test to damage.
func simulatedFile(t *testing.T, cfg sim.Config, dir string) *record.File {
	t.Helper()
	f, err := record.ReadFile(simulateToFile(t, examples.All()[0], cfg, dir))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// writeTrace writes events to path under header h, after gap records,
// closed with end, or left without an end record (a killed process) when
// end is nil.
func writeTrace(t *testing.T, path string, h record.Header, events []*node.Event, end *record.End, gaps ...record.Gap) {
	t.Helper()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := record.NewWriter(out, h, record.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gaps {
		if err := w.Gap(g); err != nil {
			t.Fatal(err)
		}
	}
	for _, ev := range events {
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if end != nil {
		err = w.Close(*end)
	} else {
		err = w.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// splitByNode writes each node's events of a trace to a file of its own,
// as live nodes record, the last one without its end record (a killed
// process), and returns the paths.
func splitByNode(t *testing.T, path, dir string) []string {
	t.Helper()
	f, err := record.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i, id := range f.Header.Nodes {
		h := *f.Header
		h.Driver, h.Recorded = "live", []node.ID{id}
		var mine []*node.Event
		for _, ev := range f.Events {
			if ev.Node == id {
				mine = append(mine, ev)
			}
		}
		end := &record.End{Time: f.Ends[0].Time, Reason: "stopped"}
		if i == len(f.Header.Nodes)-1 {
			end = nil
		}
		p := filepath.Join(dir, fmt.Sprintf("%s.lz4", id))
		writeTrace(t, p, h, mine, end)
		paths = append(paths, p)
	}
	return paths
}

// sameTrace fails unless two loads of the same files agree on every step
// and every index.
func sameTrace(t *testing.T, what string, a, b *replay.Trace) {
	t.Helper()
	if a.Len() != b.Len() || !reflect.DeepEqual(a.Nodes, b.Nodes) || !reflect.DeepEqual(a.Recorded, b.Recorded) {
		t.Fatalf("%s: %d steps, nodes %v recorded %v; in memory %d, %v, %v", what, b.Len(), b.Nodes, b.Recorded, a.Len(), a.Nodes, a.Recorded)
	}
	if !reflect.DeepEqual(a.Unknown, b.Unknown) {
		t.Fatalf("%s: unknown stretches %v, in memory %v", what, b.Unknown, a.Unknown)
	}
	for i := range a.Len() {
		ea, eb := a.Event(i), b.Event(i)
		if !reflect.DeepEqual(ea, eb) {
			t.Fatalf("%s: step #%d is %+v, in memory %+v", what, i, eb, ea)
		}
		if a.File(i) != b.File(i) {
			t.Fatalf("%s: step #%d from %s, in memory from %s", what, i, b.File(i), a.File(i))
		}
		if s, ok := b.Step(ea.Node, ea.Seq); !ok || s != i {
			t.Fatalf("%s: Step(%s, %d) = %d, %v; want %d", what, ea.Node, ea.Seq, s, ok, i)
		}
		for j := range ea.Sends {
			if ra, rb := a.Receipts(ea.SentMsg(j)), b.Receipts(ea.SentMsg(j)); !reflect.DeepEqual(ra, rb) {
				t.Fatalf("%s: receipts of %s: %v, in memory %v", what, ea.SentMsg(j), rb, ra)
			}
		}
	}
	for _, id := range a.Nodes {
		if !reflect.DeepEqual(a.NodeSteps(id), b.NodeSteps(id)) {
			t.Fatalf("%s: steps of %s differ", what, id)
		}
	}
}

// TestSpilledTraceIsTheSameTrace: a trace spilled to disk (every event, or
// from partway through reading it) gives every step, index and unknown
// stretch a trace held in memory gives, for every bundled system with
// churn, one file or a file per node (one of them cut short), and replays
// without divergence.
func TestSpilledTraceIsTheSameTrace(t *testing.T) {
	for _, sys := range examples.All() {
		t.Run(sys.Name, func(t *testing.T) {
			dir := t.TempDir()
			one := simulateToFile(t, sys, sim.Config{Seed: 3, Churn: 3, Steps: 3000}, dir)
			perNode := splitByNode(t, one, t.TempDir())
			for _, paths := range [][]string{{one}, perNode} {
				mem, err := replay.Load(paths...)
				if err != nil {
					t.Fatal(err)
				}
				if mem.Len() < 100 {
					t.Fatalf("only %d steps: too short a test", mem.Len())
				}
				for _, limit := range []int{-1, 1, mem.Len() / 3} {
					what := fmt.Sprintf("%d files, %d in memory", len(paths), limit)
					spilled, err := replay.LoadWith(replay.LoadOptions{InMemory: limit, TempDir: t.TempDir()}, paths...)
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					sameTrace(t, what, mem, spilled)
					r, err := replay.New(spilled, examples.Registry(), replay.Options{})
					if err != nil {
						t.Fatal(err)
					}
					for {
						if err := r.Next(); err != nil {
							if errors.Is(err, io.EOF) {
								break
							}
							t.Fatalf("%s: %v", what, err)
						}
					}
					if err := spilled.Close(); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// TestSpillLeavesNothingBehind: the temporary files of a spilled trace
// have no names from the moment they exist.
func TestSpillLeavesNothingBehind(t *testing.T) {
	src := simulateToFile(t, examples.All()[0], sim.Config{Seed: 1}, t.TempDir())
	tmp := t.TempDir()
	tr, err := replay.LoadWith(replay.LoadOptions{InMemory: -1, TempDir: tmp}, src)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Fatalf("%s holds %v while the trace is open", tmp, left)
	}
}

// TestSpillTakesEventsOutOfOrder: a node whose events in its file are
// out of merge order (its clock goes backwards, or the events are stored
// in another order) loads spilled exactly as in memory: the same problems
// in the same order, or the same trace.
func TestSpillTakesEventsOutOfOrder(t *testing.T) {
	dir := t.TempDir()
	h := record.Header{System: "paxos", Nodes: []node.ID{"n1"}, Recorded: []node.ID{"n1"}, Driver: "live", Start: 1}
	for name, order := range map[string][][2]uint64{
		// {seq, clock}
		"clock-back.lz4": {{1, 1}, {2, 5}, {3, 3}, {4, 6}},
		"shuffled.lz4":   {{1, 1}, {3, 3}, {2, 2}, {5, 5}, {4, 4}},
	} {
		path := filepath.Join(dir, name)
		var events []*node.Event
		for _, sc := range order {
			kind := node.KindTimer
			if sc[0] == 1 {
				kind = node.KindInit
			}
			events = append(events, &node.Event{Node: "n1", Seq: sc[0], Lamport: sc[1], Kind: kind, Time: int64(sc[0])})
		}
		writeTrace(t, path, h, events, &record.End{Time: 10})
		mem, memErr := replay.Load(path)
		spilled, spillErr := replay.LoadWith(replay.LoadOptions{InMemory: -1, TempDir: dir}, path)
		if fmt.Sprint(memErr) != fmt.Sprint(spillErr) {
			t.Fatalf("%s: spilled: %v\nin memory: %v", name, spillErr, memErr)
		}
		var ve *replay.ValidationError
		if errors.As(spillErr, &ve) {
			if !reflect.DeepEqual(ve.Problems, memErr.(*replay.ValidationError).Problems) {
				t.Fatalf("%s: spilled problems %v, in memory %v", name, ve.Problems, memErr)
			}
			continue
		}
		if spillErr != nil {
			t.Fatalf("%s: %v", name, spillErr)
		}
		sameTrace(t, name, mem, spilled)
		spilled.Close()
	}
}

// TestSpillTakesAFileOfInterleavedNodes: a file is spilled as one run
// while it is in merge order; one holding several nodes whose events are
// interleaved out of merge order (a process recording two nodes in real
// time) goes on in a run per node. Each of its thousands of switches from
// one node to the other is out of merge order, but no node's events are:
// it loads spilled, as in memory, with no "too many to spill".
func TestSpillTakesAFileOfInterleavedNodes(t *testing.T) {
	dir := t.TempDir()
	ids := []node.ID{"n1", "n2"}
	h := record.Header{System: "paxos", Nodes: ids, Recorded: ids, Driver: "live", Start: 1}
	var events []*node.Event
	for block := uint64(0); block < 3000; block++ {
		for _, id := range ids {
			for seq := 2*block + 1; seq <= 2*block+2; seq++ {
				kind := node.KindTimer
				if seq == 1 {
					kind = node.KindInit
				}
				// n2's clock runs ahead: each of its blocks ends above
				// n1's next one.
				clock := 2 * seq
				if id == "n2" {
					clock = 2*seq + 7
				}
				events = append(events, &node.Event{Node: id, Seq: seq, Lamport: clock, Kind: kind, Time: int64(len(events) + 1)})
			}
		}
	}
	path := filepath.Join(dir, "interleaved.lz4")
	writeTrace(t, path, h, events, &record.End{Time: 1e9})
	mem, err := replay.Load(path)
	if err != nil {
		t.Fatalf("in memory: %v", err)
	}
	spilled, err := replay.LoadWith(replay.LoadOptions{InMemory: -1, TempDir: dir}, path)
	if err != nil {
		t.Fatalf("spilled: %v", err)
	}
	defer spilled.Close()
	sameTrace(t, "interleaved", mem, spilled)
	for i := 1; i < spilled.Len(); i++ {
		if a, b := spilled.Event(i-1), spilled.Event(i); a.Lamport > b.Lamport {
			t.Fatalf("#%d (%s clock %d) after #%d (%s clock %d): not in merge order", i, b.Node, b.Lamport, i-1, a.Node, a.Lamport)
		}
	}
}

// TestSpilledLongTraceReadsBack: a spilled trace far longer than the
// chunks it keeps decoded reads back the same events in any order (here
// backwards and striding, so chunks are evicted and read again).
func TestSpilledLongTraceReadsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 40,000 steps")
	}
	chord, err := examples.Registry().Lookup("chord")
	if err != nil {
		t.Fatal(err)
	}
	src := simulateToFile(t, chord, sim.Config{Seed: 2, Steps: 40000, Time: time.Hour}, t.TempDir())
	mem, err := replay.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	spilled, err := replay.LoadWith(replay.LoadOptions{InMemory: 1000, TempDir: t.TempDir()}, src)
	if err != nil {
		t.Fatal(err)
	}
	defer spilled.Close()
	if mem.Len() < 20*256 {
		t.Fatalf("only %d steps: too short to evict chunks", mem.Len())
	}
	sameTrace(t, "forwards", mem, spilled)
	for i := mem.Len() - 1; i >= 0; i -= 97 {
		if !reflect.DeepEqual(mem.Event(i), spilled.Event(i)) {
			t.Fatalf("step #%d differs when read backwards", i)
		}
	}
}

// TestSpillBoundsEventsOutOfOrder: a file whose node's events are out of
// order over and over would make a run of each; past a bound, spilling
// refuses it, naming the first such event, rather than grow without end.
func TestSpillBoundsEventsOutOfOrder(t *testing.T) {
	dir := t.TempDir()
	h := record.Header{System: "paxos", Nodes: []node.ID{"n1"}, Recorded: []node.ID{"n1"}, Driver: "live", Start: 1}
	var events []*node.Event
	for seq := uint64(1); seq <= 5000; seq += 2 { // each pair swapped
		for _, s := range []uint64{seq + 1, seq} {
			kind := node.KindTimer
			if s == 1 {
				kind = node.KindInit
			}
			events = append(events, &node.Event{Node: "n1", Seq: s, Lamport: s, Kind: kind, Time: int64(s)})
		}
	}
	path := filepath.Join(dir, "swapped.lz4")
	writeTrace(t, path, h, events, &record.End{Time: 1e6})
	if _, err := replay.Load(path); err != nil {
		t.Fatalf("in memory: %v", err)
	}
	_, err := replay.LoadWith(replay.LoadOptions{InMemory: -1, TempDir: dir}, path)
	if err == nil || !strings.Contains(err.Error(), "node n1 seq 2: Lamport clock 2 is not below the clock 1 of the node's later event seq 1") ||
		!strings.Contains(err.Error(), "too many to spill") {
		t.Fatalf("spilled: %v", err)
	}
}

// TestSpillTellsReceiveProblemsInStepOrder: receives that do not match
// their sends (checked, when spilled, in batches in the order of the
// sends) are told in step order, interleaved with the steps' other
// problems, exactly as in memory.
func TestSpillTellsReceiveProblemsInStepOrder(t *testing.T) {
	dir := t.TempDir()
	f := simulatedFile(t, sim.Config{Seed: 5, Churn: 2}, dir)
	recvs := 0
	var kept []*node.Event
	for _, ev := range f.Events {
		if ev.Kind == node.KindRecv {
			recvs++
			switch recvs % 7 {
			case 1:
				ev.SendLamport-- // claims another send clock
			case 3:
				ev.MsgIndex += 50 // more than were sent
			case 5:
				ev.Lamport = ev.SendLamport // and a problem of its own
			}
		}
		if recvs%97 != 50 || ev.Kind != node.KindTimer {
			kept = append(kept, ev) // and some seqs missing
		}
	}
	path := filepath.Join(dir, "bad.lz4")
	writeTrace(t, path, *f.Header, kept, &f.Ends[0])
	_, memErr := replay.Load(path)
	_, spillErr := replay.LoadWith(replay.LoadOptions{InMemory: -1, TempDir: dir}, path)
	var mem, spilled *replay.ValidationError
	if !errors.As(memErr, &mem) || !errors.As(spillErr, &spilled) {
		t.Fatalf("in memory %v, spilled %v", memErr, spillErr)
	}
	kinds := map[string]bool{}
	for _, p := range mem.Problems {
		kinds[strings.Fields(p.Msg)[0]+" "+strings.Fields(p.Msg)[len(strings.Fields(p.Msg))-1]] = true
	}
	if len(mem.Problems) < 20 || len(kinds) < 3 {
		t.Fatalf("only %d problems of %d kinds: the test proves little: %v", len(mem.Problems), len(kinds), mem.Problems)
	}
	if !reflect.DeepEqual(mem.Problems, spilled.Problems) {
		for i := range min(len(mem.Problems), len(spilled.Problems)) {
			if mem.Problems[i] != spilled.Problems[i] {
				t.Fatalf("problem %d spilled: %s\nin memory: %s", i, spilled.Problems[i], mem.Problems[i])
			}
		}
		t.Fatalf("%d problems spilled, %d in memory", len(spilled.Problems), len(mem.Problems))
	}
}

// A trace without events (a recorder killed after its header, the run of
// an empty schedule) is an error to say, not a panic; beside other files
// it adds nothing.
func TestATraceWithoutEventsIsAnError(t *testing.T) {
	dir := t.TempDir()
	h := record.Header{System: "paxos", Nodes: []node.ID{"n1"}, Recorded: []node.ID{"n1"}, Driver: "live", Start: 1}
	empty := filepath.Join(dir, "empty.lz4")
	writeTrace(t, empty, h, nil, &record.End{Time: 1})
	for _, opts := range []replay.LoadOptions{{}, {InMemory: -1}} {
		if _, err := replay.LoadWith(opts, empty); err == nil || !strings.Contains(err.Error(), "empty.lz4: no events recorded") {
			t.Errorf("%+v: %v, want 'no events recorded'", opts, err)
		}
	}
	one := filepath.Join(dir, "one.lz4")
	writeTrace(t, one, h, []*node.Event{{Node: "n1", Seq: 1, Lamport: 1, Kind: node.KindInit, Time: 1}}, &record.End{Time: 2})
	tr, err := replay.Load(empty, one)
	if err != nil || tr.Len() != 1 {
		t.Fatalf("an empty file beside another: %v", err)
	}
}

// TestReceiveBeforeItsSendIsChecked: validation compares each receive
// with its send as steps are indexed, and a receive whose claimed send
// clock puts it before its send (so the send is not indexed yet) is still
// compared once the send is, in memory and spilled alike.
func TestReceiveBeforeItsSendIsChecked(t *testing.T) {
	dir := t.TempDir()
	f := simulatedFile(t, sim.Config{Seed: 3}, dir)
	var moved *node.Event
	for _, ev := range f.Events {
		if ev.Kind == node.KindRecv && ev.SendLamport > 20 {
			// Claims a send clock below the send's, and a clock of its
			// own below that: merged before its send.
			ev.SendLamport -= 10
			ev.Lamport = ev.SendLamport + 1
			moved = ev
			break
		}
	}
	if moved == nil {
		t.Fatal("no receive to move")
	}
	path := filepath.Join(dir, "moved.lz4")
	writeTrace(t, path, *f.Header, f.Events, &f.Ends[0])
	want := fmt.Sprintf("message %s claims send clock %d, but %s seq %d has clock %d", moved.Msg(), moved.SendLamport, moved.From, moved.MsgSeq, moved.SendLamport+10)
	for _, o := range []replay.LoadOptions{{}, {InMemory: -1, TempDir: dir}} {
		_, err := replay.LoadWith(o, path)
		var ve *replay.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("in memory %d: %v, want a validation error", o.InMemory, err)
		}
		found := false
		for _, p := range ve.Problems {
			found = found || p.Node == moved.Node && p.Seq == moved.Seq && p.Msg == want
		}
		if !found {
			t.Errorf("in memory %d: %v, want %s seq %d: %s", o.InMemory, ve.Problems, moved.Node, moved.Seq, want)
		}
	}
}

// TestSendClockIsNotTradedForADigest: a receive that claims a send clock
// other than its send's is told even when the send's recorded digest was
// changed by the difference of the clocks (a fingerprint that combined the
// two before mixing let them cancel).
func TestSendClockIsNotTradedForADigest(t *testing.T) {
	dir := t.TempDir()
	f := simulatedFile(t, sim.Config{Seed: 3}, dir)
	type key struct {
		n   node.ID
		seq uint64
	}
	sends := map[key]*node.Event{}
	var recv, send *node.Event
	for _, ev := range f.Events {
		sends[key{ev.Node, ev.Seq}] = ev
		if s := sends[key{ev.From, ev.MsgSeq}]; ev.Kind == node.KindRecv && s != nil && ev.SendLamport > 2 && ev.Lamport > ev.SendLamport {
			recv, send = ev, s
			break
		}
	}
	if recv == nil {
		t.Fatal("no receive to change")
	}
	claimed := recv.SendLamport - 1
	send.Sends[recv.MsgIndex].Digest ^= claimed ^ send.Lamport
	recv.SendLamport = claimed
	path := filepath.Join(dir, "traded.lz4")
	writeTrace(t, path, *f.Header, f.Events, &f.Ends[0])
	want := fmt.Sprintf("message %s claims send clock %d, but %s seq %d has clock %d", recv.Msg(), claimed, recv.From, recv.MsgSeq, send.Lamport)
	_, err := replay.Load(path)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v, want %s", err, want)
	}
}

// TestBigFilesSpillFromTheStart: a trace whose files are too big to hold
// at most DefaultInMemory events is spilled from its first event (none
// is held decoded and re-encoded later); a small one, or any under an
// explicit limit, is read as before, and a guess from the size needs no
// temporary directory.
func TestBigFilesSpillFromTheStart(t *testing.T) {
	t.Setenv(replay.InMemoryEnv, "")
	dir := t.TempDir()
	h := record.Header{System: "paxos", Nodes: []node.ID{"n1"}, Recorded: []node.ID{"n1"}, Driver: "live", Start: 1, Types: []string{"x.Big"}}
	write := func(name string, payload int) string {
		rnd := rand.New(rand.NewPCG(1, 2))
		events := []*node.Event{{Node: "n1", Seq: 1, Lamport: 1, Time: 1, Kind: node.KindInit}}
		for i := 2; i <= 9; i++ {
			ev := &node.Event{Node: "n1", Seq: uint64(i), Lamport: uint64(i), Time: int64(i), Kind: node.KindInput, MsgType: "x.Big", Payload: make([]byte, payload)}
			for j := range ev.Payload {
				ev.Payload[j] = byte(rnd.Uint32()) // incompressible
			}
			events = append(events, ev)
		}
		path := filepath.Join(dir, name)
		writeTrace(t, path, h, events, &record.End{Time: 10})
		return path
	}
	big := write("big.lz4", replay.SpillFromTheStartBytes/8+1)
	small := write("small.lz4", 100)
	for _, c := range []struct {
		path    string
		opts    replay.LoadOptions
		spilled bool
	}{
		{big, replay.LoadOptions{}, true}, {small, replay.LoadOptions{}, false},
		{big, replay.LoadOptions{InMemory: 100}, false}, {small, replay.LoadOptions{InMemory: -1}, true},
		{big, replay.LoadOptions{TempDir: filepath.Join(dir, "missing")}, false},
	} {
		tr, err := replay.LoadWith(c.opts, c.path)
		if err != nil {
			t.Fatal(err)
		}
		if spilled := replay.Spilled(tr); spilled != c.spilled || tr.Len() != 9 || len(tr.Event(8).Payload) != len(tr.Event(1).Payload) {
			t.Errorf("%s %+v: spilled %v (want %v), %d steps", filepath.Base(c.path), c.opts, spilled, c.spilled, tr.Len())
		}
		tr.Close()
	}
}

// TestAGuessedSpillFallsBackToMemory: files over 1 MiB are spilled from
// their first event on a guess that they hold more events than memory
// should. For a trace that fits in memory the guess must not decide the
// outcome: a file of 60,000 events stored in no particular order (as a
// writer may) was refused as "too many out of order to spill", where the
// same events load in memory.
func TestAGuessedSpillFallsBackToMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 60,000 events")
	}
	dir := t.TempDir()
	sys, err := examples.Registry().Lookup("paxos")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps, cfg.Time = 3, 60000, 10*time.Hour
	path := simulateToFile(t, sys, cfg.WithDefaults(sys), dir)
	f, err := record.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	events := slices.Clone(f.Events)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	shuffled := filepath.Join(dir, "shuffled.lz4")
	writeTrace(t, shuffled, *f.Header, events, &f.Ends[0])
	if st, _ := os.Stat(shuffled); st.Size() <= replay.DefaultInMemory*16 {
		t.Fatalf("%d bytes: too small to be spilled on the guess", st.Size())
	}
	tr, err := replay.LoadWith(replay.LoadOptions{TempDir: dir}, shuffled)
	if err != nil {
		t.Fatalf("a trace that fits in memory: %v", err)
	}
	defer tr.Close()
	want, err := replay.LoadWith(replay.LoadOptions{InMemory: 1 << 20}, shuffled)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	sameTrace(t, "shuffled, guessed spill", want, tr)
}
