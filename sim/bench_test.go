package sim_test

import (
	"bytes"
	"testing"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/sim"
)

// BenchmarkSimPaxos measures the default paxos scenario end to end
// (simulation, dispatch, state hashing, encoding, compression) and reports
// events/s, trace bytes/event and the compression ratio.
//
//	go test ./sim -run=^$ -bench=SimPaxos -benchtime=20x
func BenchmarkSimPaxos(b *testing.B) {
	benchSim(b, false)
}

// BenchmarkSimPaxosNoStateHashes is the same run without per-event state
// hashes: the ratio of the two is the cost of the strongest divergence
// detector.
func BenchmarkSimPaxosNoStateHashes(b *testing.B) {
	benchSim(b, true)
}

func benchSim(b *testing.B, noHashes bool) {
	var events, bytesOut, raw int64
	var buf bytes.Buffer
	for i := 0; b.Loop(); i++ {
		buf.Reset()
		cfg := sim.DefaultConfig()
		cfg.Seed, cfg.NoStateHashes = uint64(i%50+1), noHashes
		res, err := sim.Run(paxos.System, cfg.WithDefaults(paxos.System), &buf)
		if err != nil {
			b.Fatal(err)
		}
		events += int64(res.Steps)
		bytesOut += int64(buf.Len())
		b.StopTimer()
		f, err := record.Read(bytes.NewReader(buf.Bytes()), "bench", int64(buf.Len()))
		if err != nil {
			b.Fatal(err)
		}
		raw += f.Raw
		b.StartTimer()
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(bytesOut)/float64(events), "bytes/event")
	b.ReportMetric(float64(raw)/float64(bytesOut), "compression")
	b.ReportMetric(0, "ns/op")
}
