package predicates_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

// predicateCost replays trace bytes under script and returns the time
// spent in the checker (Observe: table refresh and evaluation) per step,
// for the steps in [from, to) of the trace, and the number of steps. The
// replay itself is not counted: this is "check minus replay", measured
// in one process instead of as a difference of two noisy runs.
func predicateCost(tb testing.TB, trace []byte, script string, from, to int) (time.Duration, int) {
	tb.Helper()
	tr, err := replay.FromBytes(trace, "bench.lz4")
	if err != nil {
		tb.Fatal(err)
	}
	r, err := replay.New(tr, examples.Registry(), replay.Options{SkipStateHashes: true})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := predicates.Load(script, r, predicates.Options{To: -1})
	if err != nil {
		tb.Fatal(err)
	}
	var spent time.Duration
	n := 0
	for step := 0; ; step++ {
		if err := r.Next(); err != nil {
			break
		}
		start := time.Now()
		if err := c.Observe(); err != nil {
			tb.Fatal(err)
		}
		if step >= from && (to < 0 || step < to) {
			spent += time.Since(start)
			n++
		}
	}
	if err := c.Finish().Err(); err != nil {
		tb.Fatal(err)
	}
	return spent / time.Duration(max(n, 1)), n
}

// minCost is predicateCost's least of three replays: on a shared machine
// the least is the one least disturbed.
func minCost(tb testing.TB, trace []byte, script string, from, to int) time.Duration {
	best := time.Duration(1<<63 - 1)
	for range 3 {
		d, _ := predicateCost(tb, trace, script, from, to)
		best = min(best, d)
	}
	return best
}

func simTrace(tb testing.TB, system string, cfg sim.Config) []byte {
	tb.Helper()
	sys, err := examples.Registry().Lookup(system)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.NoStateHashes = true
	var buf bytes.Buffer
	if _, err := sim.Run(sys, cfg.WithDefaults(sys), &buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkChordScriptScaling: the predicate part of checking
// scripts/chord.star, per step, on chord with 1,000 nodes against 10 (ring
// of 2^16 positions, 20,000 events each; target <= 2x; each figure the
// least of three replays). With
// CHORD_STAR_BASELINE=FILE it also measures that script (e.g. the chord.star
// of an earlier release) on the same traces.
//
//	go test ./predicates -run='^$' -bench=ChordScriptScaling -benchtime=1x -v
func BenchmarkChordScriptScaling(b *testing.B) {
	traces := map[int][]byte{}
	for _, n := range []int{10, 1000} {
		cfg := sim.DefaultConfig()
		cfg.Seed, cfg.Nodes, cfg.Steps, cfg.Time = 1, n, 20_000, 10*time.Minute
		cfg.Params = map[string]string{"bits": "16"}
		traces[n] = simTrace(b, "chord", cfg)
	}
	scripts := map[string]string{"chord.star": "../scripts/chord.star"}
	if base := os.Getenv("CHORD_STAR_BASELINE"); base != "" {
		scripts["baseline "+filepath.Base(base)] = base
	}
	for b.Loop() {
		for name, script := range scripts {
			small := minCost(b, traces[10], script, 0, -1)
			large := minCost(b, traces[1000], script, 0, -1)
			ratio := float64(large) / float64(small)
			b.Logf("%s: %v/step with 10 nodes, %v/step with 1,000 nodes: %.2fx", name, small, large, ratio)
			if name == "chord.star" {
				b.ReportMetric(float64(small.Nanoseconds()), "ns/step@10")
				b.ReportMetric(float64(large.Nanoseconds()), "ns/step@1000")
				b.ReportMetric(ratio, "ratio")
			}
		}
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRaftScriptLogLength: the predicate part of checking
// scripts/raft.star per step in the last tenth of a long raftkv run
// against the first tenth (the logs are ten times longer or more there;
// target: flat).
//
//	go test ./predicates -run='^$' -bench=RaftScriptLogLength -benchtime=1x -v
func BenchmarkRaftScriptLogLength(b *testing.B) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps, cfg.Time = 1, 60_000, time.Hour
	cfg.Params = map[string]string{"writes": "6000"}
	trace := simTrace(b, "raftkv", cfg)
	tr, err := replay.FromBytes(trace, "bench.lz4")
	if err != nil {
		b.Fatal(err)
	}
	steps := tr.Len()
	for b.Loop() {
		first := minCost(b, trace, "../scripts/raft.star", 0, steps/10)
		last := minCost(b, trace, "../scripts/raft.star", steps-steps/10, -1)
		ratio := float64(last) / float64(first)
		b.Logf("raft.star over %d steps: %v/step in the first tenth, %v/step in the last: %.2fx", steps, first, last, ratio)
		b.ReportMetric(float64(first.Nanoseconds()), "ns/step-first")
		b.ReportMetric(float64(last.Nanoseconds()), "ns/step-last")
		b.ReportMetric(ratio, "ratio")
	}
	b.ReportMetric(0, "ns/op")
}
