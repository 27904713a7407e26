package chainrep_test

import (
	"bytes"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples/chainrep"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/system"
)

const script = "../../scripts/chainrep.star"

const prefixPred = "HistoryIsPrefixOfPredecessor"

// forced runs the given crashes (the "crash" parameter) without churn, so
// they are the only failures of the run.
func forced(t *testing.T, bug, crash string, seed uint64) *simtest.Result {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug, cfg.Churn = seed, bug, 0
	cfg.Params = map[string]string{"crash": crash}
	res, err := simtest.Run(chainrep.System, cfg, script, simtest.Options{})
	if err != nil {
		t.Fatalf("bug %s crash %s seed %d: %v", bug, crash, seed, err)
	}
	return res
}

func describe(vs []*predicates.Violation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "\n  %s", v.Headline())
	}
	return b.String()
}

// The correct system, with the default churn and the scenario's master and
// client crashes, keeps every property and raises no alarm.
func TestCorrectChainClean(t *testing.T) {
	seeds := uint64(50)
	if testing.Short() {
		seeds = 10
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		cfg := sim.DefaultConfig()
		cfg.Seed = seed
		simtest.Check(t, chainrep.System, cfg, script)
	}
}

// Two neighbouring middle servers crashing at the same virtual time are
// detected in one round: the buggy master re-routes s1 to s4 without a
// resume point and s4's history gets a hole, every seed. The correct
// master repairs the same runs cleanly.
func TestNeighbourFailureCaught(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		res := forced(t, chainrep.BugNeighbourFailure, "s2+s3@3s", seed)
		if len(res.Failing) == 0 || res.Failing[0].Predicate != prefixPred {
			t.Errorf("seed %d: want %s violated first, got:%s", seed, prefixPred, describe(res.Failing))
			continue
		}
		v := res.Failing[0]
		if v.Witness != "s4" {
			t.Errorf("seed %d: witness %q, want s4 (the survivor after the failed pair)", seed, v.Witness)
		}
		if clean := forced(t, "none", "s2+s3@3s", seed); len(clean.Failing) > 0 {
			t.Errorf("seed %d: the correct master failed the same crashes:%s", seed, describe(clean.Failing))
		}
	}
}

// With the bug, a single failure, two failures that are not neighbours,
// and neighbouring failures at either end of the chain (a head or tail
// repair, not a re-route) are all repaired correctly.
func TestBugNeedsNeighbouringMiddleFailures(t *testing.T) {
	for _, crash := range []string{"s2@3s", "s3@3s", "s2+s4@3s", "s1+s2@3s", "s3+s4@3s", "s2@3s,s3@6s", "master@2s,s2@2.1s,s3@2.6s"} {
		for seed := uint64(1); seed <= 3; seed++ {
			res := forced(t, chainrep.BugNeighbourFailure, crash, seed)
			want := crash == "master@2s,s2@2.1s,s3@2.6s" // s2, s3 fail apart while the master is down: detected together when it returns
			if got := len(res.Failing) > 0; got != want {
				t.Errorf("crash %s seed %d: violations %v, want %v:%s", crash, seed, got, want, describe(res.Failing))
			}
		}
	}
}

// Replay re-executes every step of simulated runs, under heavy churn and
// duplication and with every bug, with identical effects and state
// hashes; the same seed gives a byte-identical trace.
func TestReplayReproduces(t *testing.T) {
	reg := system.NewRegistry(chainrep.System)
	for seed := uint64(1); seed <= 10; seed++ {
		cfg := sim.DefaultConfig()
		cfg.Seed, cfg.Churn, cfg.Dup = seed, 0.2, 0.1
		cfg.Bug = chainrep.System.BugNames()[seed%2]
		cfg = cfg.WithDefaults(chainrep.System)
		var a, b bytes.Buffer
		if _, err := sim.Run(chainrep.System, cfg, &a); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Run(chainrep.System, cfg, &b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("seed %d: two simulations differ", seed)
		}
		tr, err := replay.FromBytes(a.Bytes(), fmt.Sprintf("chainrep-%d.lz4", seed))
		if err != nil {
			t.Fatal(err)
		}
		r, err := replay.New(tr, reg, replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		hashed := 0
		err = r.RunTo(tr.Len()-1, func(step int) error {
			if r.Replayed() == nil {
				return fmt.Errorf("step %d was not replayed", step)
			}
			if r.Recorded().HasStateHash {
				hashed++
			}
			return nil
		})
		if err != nil {
			t.Fatalf("seed %d bug %s: %v", seed, cfg.Bug, err)
		}
		if hashed < tr.Len()/2 {
			t.Fatalf("seed %d: only %d of %d steps had state hashes", seed, hashed, tr.Len())
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		nodes  int
		params map[string]string
		want   string
	}{
		{6, nil, ""},
		{4, nil, ""},
		{11, map[string]string{"crash": "s2+s3@3s,s9@1s"}, ""},
		{3, nil, "3 nodes: need 4 to 11"},
		{12, nil, "12 nodes"},
		{6, map[string]string{"crashes": "s2@1s"}, `unknown parameter "crashes"`},
		{6, map[string]string{"crash": "s2"}, "lacks @TIME"},
		{6, map[string]string{"crash": "s2@soon"}, "not a time"},
		{6, map[string]string{"crash": "s2+@1s"}, "empty node name"},
		{6, map[string]string{"crash": "s7@1s"}, `no node "s7"`},
	} {
		sys := chainrep.System
		err := sys.CheckConfig(system.Config{Bug: "none", Nodes: sys.NodeIDs(c.nodes), Params: c.params})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%d nodes %v: %v", c.nodes, c.params, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "chainrep: ")):
			t.Errorf("%d nodes %v: %v, want %q", c.nodes, c.params, err, c.want)
		}
	}
}

var sweep = flag.Int("sweep", 0, "count the seeds 1..N whose default run hits neighbour-failure (slow)")

// TestSweep measures how rarely seeds hit the bug with the default
// settings: go test ./examples/chainrep -run Sweep -sweep 2000 -v
func TestSweep(t *testing.T) {
	if *sweep == 0 {
		t.Skip("measurement; enable with -sweep N")
	}
	var hits []uint64
	for seed := uint64(1); seed <= uint64(*sweep); seed++ {
		cfg := sim.DefaultConfig()
		cfg.Seed, cfg.Bug = seed, chainrep.BugNeighbourFailure
		res, err := simtest.Run(chainrep.System, cfg, script, simtest.Options{StopAtFirst: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Failing) > 0 {
			hits = append(hits, seed)
			t.Logf("seed %d: %s", seed, res.Failing[0].Headline())
		}
	}
	t.Logf("neighbour-failure hit by %d of %d seeds: %v", len(hits), *sweep, hits)
}
