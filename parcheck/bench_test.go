package parcheck_test

import (
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/examples/chord"
	"github.com/replaycheck/replaycheck/parcheck"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

// BenchmarkCheckJobs checks a 50,000-event chord trace with
// scripts/chord.star sequentially (Run) and with 2 jobs:
//
//	go test ./parcheck -run='^$' -bench=CheckJobs -benchtime=3x
//
// The ratio is the speed-up; it needs two idle cores.
func BenchmarkCheckJobs(b *testing.B) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps, cfg.Time = 1, 50_000, 100_000*time.Second
	tr, err := replay.FromBytes(simulate(b, chord.System, cfg), "chord.lz4")
	if err != nil {
		b.Fatal(err)
	}
	load := loader(b, "chord.star")
	b.Run("jobs=1", func(b *testing.B) {
		for b.Loop() {
			if _, err := sequential(b, tr, load); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tr.Len()), "ns/step")
	})
	b.Run("jobs=2", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := parcheck.Check(tr, examples.Registry(), parcheck.Options{Jobs: 2, Load: load, To: -1}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tr.Len()), "ns/step")
	})
}
