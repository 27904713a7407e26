package replay

import (
	"bytes"
	"fmt"
	"maps"
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
	"github.com/replaycheck/replaycheck/sim"
)

// TestSpilledLoadReadsEachChunkAFewTimes: with many nodes recorded apart
// (causal clocks, as live recordings have), clocks drift apart and a
// receive's send lies tens of thousands of steps back, far
// past the chunks a spilled trace keeps decoded. Validating each receive
// against its send as it came read a chunk per receive; checked in
// batches by send, loading reads each chunk a few times.
func TestSpilledLoadReadsEachChunkAFewTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 60,000 steps on 2000 nodes")
	}
	sys, err := examples.Registry().Lookup("chord")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{Seed: 1, Nodes: 5000, Steps: 60000, Time: time.Hour, Params: map[string]string{"bits": "16"}, CausalClocks: true}.WithDefaults(sys)
	var buf bytes.Buffer
	if _, err := sim.Run(sys, cfg, &buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "chord.lz4")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := LoadWith(LoadOptions{InMemory: -1, TempDir: t.TempDir()}, path)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	st := tr.events.(*spillStore)
	reads, chunks := st.reads, len(st.chunks)-1
	far := 0
	for i := range tr.Len() {
		if s, ok := tr.SendStep(tr.Event(i)); ok && i-s > chunkEvents*cachedChunks {
			far++
		}
	}
	if far < tr.Len()/20 {
		t.Fatalf("only %d of %d receives are far from their sends: the test proves little", far, tr.Len())
	}
	// Finding truncations and validating walk the trace; the receives'
	// sends are read in batches, each a pass over part of the trace.
	if reads > 8*chunks {
		t.Fatalf("loading read %d chunks of %d: a chunk per far receive", reads, chunks)
	}
	t.Logf("%d chunks, %d read while loading, %d receives far from their sends", chunks, reads, far)
}

// A chunk of events with huge payloads is read back a record at a time
// and never cached: what every step reads is still what was recorded,
// as a trace held in memory has it.
func TestSpilledHugePayloadsAreReadARecordAtATime(t *testing.T) {
	h := record.Header{System: "test", Nodes: []node.ID{"a"}, Recorded: []node.ID{"a"}, Bug: "none",
		Types: []string{"t.In"}, Driver: "sim", Start: 1_000_000_000}
	var buf bytes.Buffer
	w, err := record.NewWriter(&buf, h, record.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const events = 3 * chunkEvents
	for i := range events {
		ev := &node.Event{Node: "a", Seq: uint64(i + 1), Lamport: uint64(i + 1), Time: h.Start + int64(i), Kind: node.KindInput, MsgType: "t.In", Payload: []byte{byte(i)}}
		if i == 0 {
			ev.Kind, ev.MsgType, ev.Payload = node.KindInit, "", nil
		}
		if i >= chunkEvents+10 && i < chunkEvents+13 { // three in the second chunk
			ev.Payload = bytes.Repeat([]byte{byte(i)}, bigChunk/2)
		}
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(record.End{Reason: "test", Time: h.Start + events}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "huge.lz4")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	held, err := LoadWith(LoadOptions{InMemory: 1 << 20}, path)
	if err != nil {
		t.Fatal(err)
	}
	spilled, err := LoadWith(LoadOptions{InMemory: -1, TempDir: t.TempDir()}, path)
	if err != nil {
		t.Fatal(err)
	}
	defer spilled.Close()
	st := spilled.events.(*spillStore)
	if _, ok := st.big[1]; !ok || len(st.big) != 1 {
		t.Fatalf("big chunks %v, want the second only", slices.Sorted(maps.Keys(st.big)))
	}
	for pass := range 2 { // and again: nothing cached went stale
		for i := range events {
			if a, b := held.Event(i), spilled.Event(i); !reflect.DeepEqual(a, b) {
				t.Fatalf("pass %d, step %d: held %v (%d payload bytes), spilled %v (%d)", pass, i, a.Kind, len(a.Payload), b.Kind, len(b.Payload))
			}
		}
	}
	for k, c := range st.cache {
		if k == 1 {
			t.Fatalf("the big chunk was cached (%d bytes)", c.size)
		}
	}
}

// A spilled trace whose temporary file can no longer be read panics with
// a ReadBackError naming the step, which a command line turns into one
// line (cli's execute).
func TestSpilledTraceThatCannotBeReadBackSaysWhichStep(t *testing.T) {
	sys, err := examples.Registry().Lookup("paxos")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := sim.Run(sys, sim.Config{Seed: 1, Steps: 2000}.WithDefaults(sys), &buf); err != nil {
		t.Fatal(err)
	}
	tr, err := LoadWith(LoadOptions{InMemory: -1, TempDir: t.TempDir()}, writeFile(t, buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	st := tr.events.(*spillStore)
	st.f.Close()
	st.cache = map[int]*cachedChunk{}
	step := tr.Len() / 2
	defer func() {
		r := recover()
		rb, ok := r.(*ReadBackError)
		if !ok || rb.Step != step || !strings.Contains(rb.Error(), fmt.Sprintf("step %d", step)) {
			t.Fatalf("recovered %v", r)
		}
	}()
	tr.Event(step)
	t.Fatal("read a closed file")
}

func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.lz4")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Events that hold many clock readings each (2 bytes on disk, 64
// decoded) are bounded by their size in memory, held and cached alike: a
// forged file of a few such events took gigabytes to load under the
// count that spills, and a chunk cache bounded by stored bytes held 32
// times that decoded.
func TestEventsOfManyClockReadingsAreBoundedBySize(t *testing.T) {
	h := record.Header{System: "test", Nodes: []node.ID{"a"}, Recorded: []node.ID{"a"}, Bug: "none", Driver: "live", Start: 1_000_000_000}
	var buf bytes.Buffer
	w, err := record.NewWriter(&buf, h, record.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clocks := make([]node.Nondet, 4096)
	for i := range clocks {
		clocks[i] = node.Nondet{Kind: node.NondetClock, Int: h.Start}
	}
	const events = 2 * chunkEvents
	for i := range events {
		ev := &node.Event{Node: "a", Seq: uint64(i + 1), Lamport: uint64(i + 1), Time: h.Start, Kind: node.KindTimer, TimerName: "t", Nondet: clocks}
		if i == 0 {
			ev.Kind, ev.TimerName = node.KindInit, ""
		}
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(record.End{Reason: "test", Time: h.Start}); err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, buf.Bytes())
	each := record.DecodedSize(&node.Event{Nondet: clocks})
	// Held: under the count that spills, over the size.
	tr, err := LoadWith(LoadOptions{InMemory: 1 << 20, InMemoryBytes: 100 * each, TempDir: t.TempDir()}, path)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	st, ok := tr.events.(*spillStore)
	if !ok {
		t.Fatalf("%d events of %d bytes each were held in memory, past the %d bytes allowed", events, each, 100*each)
	}
	// Cached: a chunk counts as its size decoded, and the cache keeps
	// to cachedBytes by it (a chunk here is 256 events of 4,096 clock
	// readings: about 67 MB decoded, 2 MB stored).
	for i := range events {
		tr.Event(i)
	}
	// One chunk decoded is over the bound alone: the cache keeps it only.
	if len(st.cache) > 1 || st.cached < int64(chunkEvents)*each {
		t.Fatalf("the cache holds %d chunks counted as %d bytes, where one chunk decoded is about %d (bound %d)", len(st.cache), st.cached, int64(chunkEvents)*each, cachedBytes)
	}
}
