package predicates_test

import (
	"testing"

	"github.com/replaycheck/replaycheck/internal/bench"
)

// BenchmarkRingCheck: checking ring consistency on a 1,000-member ring
// against a 10-member one, per step (target <= 2x).
//
//	go test ./predicates -run='^$' -bench=RingCheck -benchtime=1x -v
func BenchmarkRingCheck(b *testing.B) {
	for b.Loop() {
		r, err := bench.RingScaling(20_000)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.Value, r.Unit+"@1000")
		b.ReportMetric(r.Ratio, "ratio")
		b.ReportMetric(0, "ns/op")
		b.Logf("%s: %.4g %s, %.2fx vs %s", r.Name, r.Value, r.Unit, r.Ratio, r.Baseline)
	}
}

// BenchmarkCheckPaxos: replay + scripts/paxos.star on the default paxos
// runs of seeds 1-10, against replay alone.
//
//	go test ./predicates -run='^$' -bench=CheckPaxos -benchtime=1x -v
func BenchmarkCheckPaxos(b *testing.B) {
	for b.Loop() {
		r, err := bench.CheckPaxos("../scripts/paxos.star", 10)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.Value, "check-steps/s")
		b.ReportMetric(r.Ratio, "check/replay")
		b.ReportMetric(0, "ns/op")
		b.Logf("%s: %.4g %s, %.2fx vs %s", r.Name, r.Value, r.Unit, r.Ratio, r.Baseline)
	}
}
