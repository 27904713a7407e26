package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
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
