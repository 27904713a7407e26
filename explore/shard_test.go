package explore

import (
	"context"
	"crypto/sha256"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/simtest"
)

// runsOf explores with shard sh and returns each run's trace digest by
// run number.
func runsOf(t *testing.T, strategy string, sh Shard) map[int][32]byte {
	t.Helper()
	cfg := paxosConfig("none")
	st, err := New(strategy, cfg, Params{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	runs := map[int][32]byte{}
	_, err = Run(context.Background(), paxos.System, cfg, st, Options{Script: "../scripts/paxos.star", Budget: 10, All: true, Batch: 3, Shard: sh,
		OnRun: func(run int, c *simtest.Result) {
			if _, dup := runs[run]; dup {
				t.Errorf("%s shard %v: run %d twice", strategy, sh, run)
			}
			runs[run] = sha256.Sum256(c.Trace)
		}})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// The shards of an exploration make disjoint runs whose numbers are the
// unsharded exploration's; random's runs are the very same runs.
func TestShardsPartitionRuns(t *testing.T) {
	for _, strategy := range []string{"random", "pct", "delay-rr"} {
		whole := runsOf(t, strategy, Shard{})
		union := map[int][32]byte{}
		for i := range 3 {
			for run, d := range runsOf(t, strategy, Shard{Index: i, Count: 3}) {
				if run%3 != i {
					t.Fatalf("%s shard %d/3 made run %d", strategy, i, run)
				}
				union[run] = d
			}
		}
		if got, want := slices.Sorted(maps.Keys(union)), slices.Sorted(maps.Keys(whole)); !slices.Equal(got, want) {
			t.Fatalf("%s: shards made runs %v, unsharded %v", strategy, got, want)
		}
		if strategy == "random" && !maps.Equal(union, whole) {
			t.Fatalf("random: the shards' runs are not the unsharded runs")
		}
	}
}

func TestShardRefusesSharedSpaces(t *testing.T) {
	cfg := paxosConfig("none")
	for _, c := range []struct {
		name string
		p    Params
	}{{"bfs", Params{}}, {"dfs", Params{}}, {"delay-rr", Params{Exhaustive: true}}} {
		st, err := New(c.name, cfg, c.p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(context.Background(), paxos.System, cfg, st, Options{Script: "../scripts/paxos.star", Budget: 4, Shard: Shard{Index: 0, Count: 2}})
		if err == nil || !strings.Contains(err.Error(), "cannot be sharded") {
			t.Fatalf("%s sharded: %v", c.name, err)
		}
	}
	if _, err := Run(context.Background(), paxos.System, cfg, mustNew(t, "random"), Options{Script: "../scripts/paxos.star", Budget: 4, Shard: Shard{Index: 2, Count: 2}}); err == nil {
		t.Fatal("shard 2/2 accepted")
	}
}

func mustNew(t *testing.T, name string) Strategy {
	t.Helper()
	st, err := New(name, paxosConfig("none"), Params{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A shard passes over the other shards' runs without making their
// choosers: skip leaves a strategy where as many Next calls would, so the
// run after names the same chooser.
func TestSkipIsNext(t *testing.T) {
	cfg := paxosConfig("none")
	for _, strategy := range []string{"random", "pct", "delay-rr", "delay-rtc"} {
		for _, n := range []int{0, 1, 5, 37} {
			made, err := New(strategy, cfg, Params{Seed: 3, Samples: 2})
			if err != nil {
				t.Fatal(err)
			}
			skipped, _ := New(strategy, cfg, Params{Seed: 3, Samples: 2})
			sk, ok := skipped.(skipper)
			if !ok {
				t.Fatalf("%s cannot skip", strategy)
			}
			for range n {
				made.Next()
			}
			sk.skip(n)
			a, _ := made.Next()
			b, _ := skipped.Next()
			if a.Describe() != b.Describe() {
				t.Errorf("%s after %d: next run %q, after skipping %q", strategy, n, a.Describe(), b.Describe())
			}
		}
	}
}
