package replay_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/examples/chord"
	"github.com/replaycheck/replaycheck/internal/bench"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

func report(b *testing.B, r bench.Result) {
	b.ReportMetric(r.Value, r.Unit)
	b.ReportMetric(r.Ratio, "ratio")
	b.ReportMetric(0, "ns/op")
	b.Logf("%s: %.4g %s, %.2fx vs %s", r.Name, r.Value, r.Unit, r.Ratio, r.Baseline)
}

// BenchmarkReplayVsDecode: decode + replay of a 200,000-event paxos trace
// against decoding alone (target <= 3x), without and with state hashes.
//
//	go test ./replay -run='^$' -bench=ReplayVsDecode -benchtime=1x -v
func BenchmarkReplayVsDecode(b *testing.B) {
	for _, hashes := range []bool{false, true} {
		name := "no-state-hashes"
		if hashes {
			name = "state-hashes"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				r, err := bench.ReplayVsDecode(200_000, hashes)
				if err != nil {
					b.Fatal(err)
				}
				report(b, r)
			}
		})
	}
}

// BenchmarkSeek1M: seeks to random steps of a 1,000,000-event paxos trace
// after one indexing pass (target <= 100 ms).
//
//	go test ./replay -run='^$' -bench=Seek1M -benchtime=1x -v -timeout=30m
func BenchmarkSeek1M(b *testing.B) {
	for b.Loop() {
		rs, err := bench.Seek(1_000_000, 200)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rs {
			b.Logf("%s: %.4g %s, %.2fx vs %s", r.Name, r.Value, r.Unit, r.Ratio, r.Baseline)
		}
		b.ReportMetric(rs[0].Value, "seek-ms")
		b.ReportMetric(rs[1].Value, "worst-seek-ms")
		b.ReportMetric(rs[2].Value, "back-ms")
		b.ReportMetric(0, "ns/op")
	}
}

// BenchmarkLogGrowth: replay cost per step in the last tenth of a long
// raftkv run against the first tenth (target <= 1.5x), with the default
// spacing of state hashes and with one after every event.
//
//	go test ./replay -run='^$' -bench=LogGrowth -benchtime=1x -v
func BenchmarkLogGrowth(b *testing.B) {
	for _, every := range []int{0, 1} {
		b.Run(fmt.Sprintf("hash-every-%d", every), func(b *testing.B) {
			for b.Loop() {
				r, err := bench.LogGrowth(200_000, every)
				if err != nil {
					b.Fatal(err)
				}
				report(b, r)
			}
		})
	}
}

// BenchmarkChordScale: simulate, verify and check scripts/chord.star per
// event with 10,000 chord nodes against 10 (target <= 2x each).
//
//	go test ./replay -run='^$' -bench=ChordScale -benchtime=1x -v
func BenchmarkChordScale(b *testing.B) {
	for b.Loop() {
		rs, err := bench.ChordScale("../scripts/chord.star", 10, 10_000, 200_000)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rs {
			b.Logf("%s: %.4g %s, %.2fx vs %s", r.Name, r.Value, r.Unit, r.Ratio, r.Baseline)
		}
		b.ReportMetric(0, "ns/op")
	}
}

// BenchmarkSeekBackTasks: one step back on a task-heavy trace (the lock
// service, ~30,000 steps, clerks whose worker tasks are always live)
// against the same on paxos. A checkpoint cannot copy a node with live
// tasks, so the cursor rebuilds such a node by re-executing its events
// since the last checkpoint that could copy it (here: since the start).
//
//	go test ./replay -run='^$' -bench=SeekBackTasks -benchtime=20x
func BenchmarkSeekBackTasks(b *testing.B) {
	for _, name := range []string{"lockserver", "paxos"} {
		b.Run(name, func(b *testing.B) {
			reg := examples.Registry()
			sys, _ := reg.Lookup(name)
			cfg := sim.DefaultConfig()
			cfg.Seed, cfg.Steps, cfg.Time = 1, 30_000, time.Minute
			tr := simulate(b, sys, cfg)
			r, err := replay.New(tr, reg, replay.Options{})
			if err != nil {
				b.Fatal(err)
			}
			c, err := replay.NewCursor(r, 0)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			var spent time.Duration
			for b.Loop() {
				b.StopTimer()
				at := tr.Len()/2 + rng.IntN(tr.Len()/2)
				if err := c.Seek(at); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t0 := time.Now()
				if err := c.Back(); err != nil {
					b.Fatal(err)
				}
				spent += time.Since(t0)
			}
			b.ReportMetric(float64(spent.Microseconds())/1000/float64(b.N), "ms/back")
			b.ReportMetric(float64(tr.Len()), "steps")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkMerge: merging the 200,000 events of the chord run with 10,000
// nodes that `replay bench --only nodes` checks (their file order is not
// merge order), per event.
//
//	go test ./replay -run='^$' -bench=Merge -benchtime=5x
func BenchmarkMerge(b *testing.B) {
	path := simulateToFile(b, chord.System, sim.Config{Seed: 1, Nodes: 10_000, Steps: 200_000, Time: 1000 * time.Hour,
		Params: map[string]string{"bits": "16"}}, b.TempDir())
	f, err := record.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	events := f.Events
	for b.Loop() {
		f.Events = slices.Clone(events)
		if _, err := replay.Merge([]*record.File{f}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(events)), "ns/event")
}
