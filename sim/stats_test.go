package sim_test

import (
	"io"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/sim"
)

// Every message sent is accounted for at the end: delivered, lost, cut by
// a partition, addressed to a down node, or still in flight. (Sends to
// self were not counted as sent, so delivered could exceed sent.)
func TestNetworkStatsAccountForEveryMessage(t *testing.T) {
	for _, sys := range examples.All() {
		for seed := uint64(1); seed <= 3; seed++ {
			cfg := sim.DefaultConfig()
			cfg.Seed, cfg.Steps, cfg.Dup, cfg.Drop = seed, 3000, 0.05, 0.1
			if sys.Sim.Churn == 0 {
				cfg.Churn = 0.5
			}
			res, err := sim.Run(sys, cfg.WithDefaults(sys), io.Discard)
			if err != nil {
				t.Fatalf("%s seed %d: %v", sys.Name, seed, err)
			}
			st := res.Stats
			in := st.Sent + st.Duplicated
			out := st.Delivered + st.Lost + st.Partitioned + st.ToDownNode + st.InFlight
			if in != out || st.Sent == 0 {
				t.Fatalf("%s seed %d: sent %d + duplicated %d != delivered %d + lost %d + partitioned %d + to down nodes %d + in flight %d",
					sys.Name, seed, st.Sent, st.Duplicated, st.Delivered, st.Lost, st.Partitioned, st.ToDownNode, st.InFlight)
			}
		}
	}
}
