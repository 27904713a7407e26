package explore

import (
	"io"
	"testing"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/sim"
)

// BenchmarkChooser simulates paxos under the seeded chooser and under
// each sampling strategy's, without checking: the cost of exploring
// choices (enabled sets, advances, identity-keyed randomness) against
// the simulator's own time order. Reports events/s.
func BenchmarkChooser(b *testing.B) {
	cfg := paxosConfig("none")
	for _, name := range []string{"seeded", "random", "pct", "delay-rtc"} {
		b.Run(name, func(b *testing.B) {
			strat := name
			if name == "seeded" {
				strat = "random" // unused
			}
			st, _ := New(strat, cfg, Params{Seed: 1})
			events := 0
			for i := 0; i < b.N; i++ {
				c := cfg
				c.Seed = uint64(i)
				var ch sim.Chooser = sim.NewSeeded(uint64(i))
				if name != "seeded" {
					ch, _ = st.Next()
				}
				c.Chooser = ch
				res, err := sim.Run(paxos.System, c, io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				if name != "seeded" {
					st.Done(Outcome{Run: i, Chooser: ch, Steps: res.Steps})
				}
				events += res.Steps
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
