package replay_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

// paxosTrace simulates paxos for about n events and returns the file bytes.
func paxosTrace(b *testing.B, n int, hashes bool) []byte {
	b.Helper()
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps, cfg.Time, cfg.NoStateHashes = 1, n, 100*time.Hour, !hashes
	var buf bytes.Buffer
	if _, err := sim.Run(paxos.System, cfg.WithDefaults(paxos.System), &buf); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func decode(b *testing.B, data []byte) *replay.Trace {
	tr, err := replay.FromBytes(data, "bench.lz4")
	if err != nil {
		b.Fatal(err)
	}
	return tr
}

// BenchmarkReplayVsDecode measures, on one 200,000-event paxos trace, the
// time to merely decode it (read + merge) and the time to decode and
// replay it, and reports their ratio (target: replay <= 3x decode).
//
//	go test ./replay -run='^$' -bench=ReplayVsDecode -benchtime=5x
func BenchmarkReplayVsDecode(b *testing.B) {
	for _, hashes := range []bool{false, true} {
		b.Run(fmt.Sprintf("state-hashes=%v", hashes), func(b *testing.B) {
			data := paxosTrace(b, 200_000, hashes)
			var decodeT, replayT time.Duration
			steps := 0
			for b.Loop() {
				t0 := time.Now()
				tr := decode(b, data)
				t1 := time.Now()
				r, err := replay.New(tr, examples.Registry(), replay.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if err := r.RunTo(tr.Len()-1, nil); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				decodeT += t1.Sub(t0)
				replayT += t2.Sub(t0)
				steps += tr.Len()
			}
			b.ReportMetric(float64(steps)/decodeT.Seconds(), "decode-events/s")
			b.ReportMetric(float64(steps)/replayT.Seconds(), "replay-events/s")
			b.ReportMetric(replayT.Seconds()/decodeT.Seconds(), "replay/decode")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkSeek1M: after one pass over a 1,000,000-event paxos trace (the
// "indexing" that builds checkpoints), the latency of seeks to random steps
// and of single steps back.
//
//	go test ./replay -run='^$' -bench=Seek1M -benchtime=200x -timeout=30m
func BenchmarkSeek1M(b *testing.B) {
	if os.Getenv("REPLAY_BENCH_1M") == "" && testing.Short() {
		b.Skip("1M-event benchmark skipped in -short mode")
	}
	data := paxosTrace(b, 1_000_000, true)
	tr := decode(b, data)
	r, err := replay.New(tr, examples.Registry(), replay.Options{})
	if err != nil {
		b.Fatal(err)
	}
	c, err := replay.NewCursor(r, 0)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := c.Seek(tr.Len() - 1); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(t0).Seconds(), "index-s")
	rng := rand.New(rand.NewPCG(1, 2))
	var seekT, backT time.Duration
	var worst time.Duration
	for b.Loop() {
		target := rng.IntN(tr.Len())
		t1 := time.Now()
		if err := c.Seek(target); err != nil {
			b.Fatal(err)
		}
		d := time.Since(t1)
		seekT += d
		worst = max(worst, d)
		if target > 0 {
			t2 := time.Now()
			if err := c.Back(); err != nil {
				b.Fatal(err)
			}
			backT += time.Since(t2)
		}
	}
	b.ReportMetric(float64(tr.Len()), "steps")
	b.ReportMetric(seekT.Seconds()*1000/float64(b.N), "seek-ms")
	b.ReportMetric(worst.Seconds()*1000, "worst-seek-ms")
	b.ReportMetric(backT.Seconds()*1000/float64(b.N), "back-ms")
	b.ReportMetric(0, "ns/op")
}
