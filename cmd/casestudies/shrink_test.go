package main

import (
	"context"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/shrink"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
)

// TestEveryBugShrinks shrinks the failing run of every seeded bug of every
// bundled system (the runs of docs/shrinking.md's table) at a small time
// budget, and checks independently, as replay check does, that the
// shrunk trace still breaks the predicate that catches the bug and has
// no more events than the run it came from. -short lowers the budget; the
// assertions stay.
func TestEveryBugShrinks(t *testing.T) {
	if raceDetector && testing.Short() {
		// It runs in the full suite (go test ./...); under -race -short
		// its dozens of full-length runs of every bundled system exceed
		// the test binary's timeout, and they race nothing: one goroutine.
		t.Skip("the full suite runs it; too slow under the race detector")
	}
	budget := 3 * time.Second
	if testing.Short() {
		budget = time.Second
	}
	reg := examples.Registry()
	cases, err := shrinkCases(reg)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.system] = true
		t.Run(c.system+"/"+c.bug, func(t *testing.T) {
			sys, err := reg.Lookup(c.system)
			if err != nil {
				t.Fatal(err)
			}
			data, from, err := c.failing(reg, sys, "../../")
			if err != nil {
				t.Fatal(err)
			}
			res, err := shrink.Shrink(context.Background(), sys, data, shrink.Options{Script: "../../" + c.script, Predicate: c.want,
				Check: simtest.Options{Registry: reg}, Time: budget, From: from})
			if err != nil {
				t.Fatal(err)
			}
			if res.After.Events > res.Before.Events {
				t.Errorf("shrunk %d events to %d", res.Before.Events, res.After.Events)
			}
			chk, err := simtest.CheckTrace(sys, sim.Config{}, nil, res.Trace, "../../"+c.script, simtest.Options{Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range chk.Failing {
				if v.Predicate == c.want {
					t.Logf("%s: %d events -> %d (%d candidates, %v): %s", from, res.Before.Events, res.After.Events,
						res.Candidates, res.Elapsed.Round(time.Millisecond), v.Headline())
					return
				}
			}
			t.Fatalf("the shrunk trace of %s does not break %s", from, c.want)
		})
	}
	// Every bundled system with seeded bugs is covered.
	for _, name := range reg.Names() {
		sys, _ := reg.Lookup(name)
		if len(sys.Bugs) > 0 && !seen[sys.Name] {
			t.Errorf("%s has seeded bugs and no shrink case", sys.Name)
		}
	}
}
