package predicates_test

import (
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/internal/bench"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
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

// accumulatorScript keeps every accept ever received (a derived value
// that grows at some steps and is returned unchanged at the others, as
// docs/predicates.md writes an accumulator) and a safety predicate that
// reads only its length.
const accumulatorScript = `
def _accepts():
    before = accepts() or []
    if event.kind == "recv" and event.msg_type == "paxos.Accept":
        return before + [(event.node, event.msg.Round, event.msg.Value)]
    return before
accepts = derived("accepts", _accepts)
safety("Some", lambda: len(accepts()) >= 0)
`

// BenchmarkAccumulatingDerived: a check of a 20,000-step paxos run whose
// derived value accumulates every accept, per step.
//
//	go test ./predicates -run='^$' -bench=AccumulatingDerived -benchtime=3x
func BenchmarkAccumulatingDerived(b *testing.B) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps, cfg.Time = 1, 20_000, time.Hour
	tr := paxosTraceOf(b, cfg)
	for b.Loop() {
		r, err := replay.New(tr, system.NewRegistry(paxos.System), replay.Options{})
		if err != nil {
			b.Fatal(err)
		}
		c, err := predicates.LoadSource("acc.star", []byte(accumulatorScript), r, predicates.Options{To: -1})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Run(predicates.RunOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tr.Len()), "ns/step")
}
