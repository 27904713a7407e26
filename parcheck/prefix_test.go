package parcheck_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/explore"
	"github.com/replaycheck/replaycheck/parcheck"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
)

// TestFuturesResumedFromAPrefixReportAsFromZero forks every bundled
// system, correct and with its seeded bugs, at a late step and checks the
// same futures twice: from #0, and from a short warm-up taking over from
// one check of the recording up to the step (what replay predict does),
// two futures at a time.
// Every future's report must be the same, text and JSON; and most
// futures must have taken the short way, or the test proves nothing.
func TestFuturesResumedFromAPrefixReportAsFromZero(t *testing.T) {
	const steps, at, warmup, depth = 2000, 1400, 300, 250
	budget := 4
	var futures, resumed, findings, early, quiet, quietFindings int
	for _, sys := range examples.All() {
		bugs := []string{"none"}
		for _, b := range sys.Bugs {
			bugs = append(bugs, b.Name)
		}
		if testing.Short() && len(bugs) > 2 {
			bugs = bugs[:2]
			budget = 2
		}
		scripts := []string{sys.Name + ".star"}
		switch sys.Name {
		case "raftkv":
			scripts = []string{"raft.star", "raftkv-linearizable.star"}
		case "transport":
			scripts = append(scripts, "../parcheck/testdata/quiet.star")
		}
		for _, bug := range bugs {
			cfg := sim.Config{Seed: 3, Steps: steps, Time: time.Hour, Bug: bug, Drop: 0.1, Churn: 0.5}
			tr, err := replay.FromBytes(simulate(t, sys, cfg), sys.Name+".lz4")
			if err != nil {
				t.Fatal(err)
			}
			if tr.Len() <= at {
				t.Fatalf("%s/%s: %d steps, want more than %d", sys.Name, bug, tr.Len(), at)
			}
			start, _, err := explore.ForkStarter(tr, examples.Registry(), at, nil, nil)
			if err != nil {
				t.Fatalf("%s/%s: %v", sys.Name, bug, err)
			}
			fork := cfg
			fork.Steps = depth
			if sys.Name == "transport" {
				// Without the scenario's inputs and churn, its forks go
				// quiet once what is in flight is delivered: judged again
				// later, as critical's settled walks are.
				fork.Steps, fork.Churn = 5000, 0
			}
			for _, script := range scripts {
				name := fmt.Sprintf("%s/%s/%s", sys.Name, bug, script)
				load := loader(t, script)
				// A run that went quiet is judged once more a second later,
				// as critical's walks are.
				check := simtest.Options{Registry: examples.Registry(), Counts: func(*predicates.Violation) bool { return true }, QuietFor: time.Second}
				pre, err := parcheck.NewPrefix(tr, examples.Registry(), at, parcheck.PrefixOptions{Warmup: warmup}, load)
				if err != nil || pre == nil {
					t.Fatalf("%s: prefix %v, %v", name, pre, err)
				}
				// all: every run checked to its end; else each stops at its
				// first violation (StopAtFirst), and the search at the
				// first run with one.
				reports := func(prefix *parcheck.Prefix, all bool) []string {
					opts := check
					opts.Prefix = prefix
					var out []string
					strat, err := explore.New("random", fork, explore.Params{Seed: 5, Faults: 1})
					if err != nil {
						t.Fatal(err)
					}
					_, err = explore.Run(context.Background(), sys, fork, strat, explore.Options{
						Script: scriptPath(t, script), Check: opts, Budget: budget, All: all, Start: start, Jobs: 2,
						OnRun: func(run int, c *simtest.Result) {
							if c == nil {
								out = append(out, fmt.Sprintf("run %d: no check", run))
								return
							}
							out = append(out, fmt.Sprintf("run %d:\n%s", run, report(t, c.Report)))
							if c.Sim.Reason == sim.ReasonQuiet && prefix == nil && all {
								quiet++
								for _, v := range c.Report.Violations {
									if v.Predicate == "Busy" && v.Step == c.Report.LastStep {
										quietFindings++
									}
								}
							}
							if prefix == nil && all {
								for _, v := range c.Report.Violations {
									if v.Step > at {
										findings++
									}
								}
							}
						},
					})
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					return out
				}
				for _, all := range []bool{true, false} {
					want, got := reports(nil, all), reports(pre, all)
					if len(want) != len(got) {
						t.Fatalf("%s, all %v: %d futures from #0, %d resumed", name, all, len(want), len(got))
					}
					for i := range want {
						if want[i] != got[i] {
							t.Fatalf("%s, all %v: future %d differs when resumed from #%d\nfrom #0:\n%s\nresumed:\n%s", name, all, i, at, want[i], got[i])
						}
					}
					if all {
						checks, n := pre.Stats()
						futures, resumed = futures+checks, resumed+n
					}
				}
				if checks, n := pre.Stats(); n < checks {
					t.Logf("%s: %d of %d futures resumed; %s", name, n, checks, pre.Refusal())
				}
				pre.Close()
			}
			early++
		}
	}
	t.Logf("%d futures of %d traces, %d resumed from the prefix, %d findings, %d quiet runs", futures, early, resumed, findings, quiet)
	if futures == 0 || resumed < futures*3/4 {
		t.Errorf("only %d of %d futures were checked from the prefix on", resumed, futures)
	}
	if quietFindings == 0 {
		t.Errorf("%d futures went quiet, and no last judgement of one found anything: the comparison does not cover it", quiet)
	}
	if findings == 0 {
		t.Errorf("no future reported a violation after #%d: the comparison covers clean reports only", at)
	}
}

func scriptPath(tb testing.TB, script string) string {
	tb.Helper()
	path, err := filepath.Abs("../scripts/" + script)
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// A history holding operations from before the longest warm-up cannot be
// rebuilt by any: the prefix says so at once and every fork is checked
// from #0 without paying a warm-up first (a new user read "the first
// refused: ... Linearizable last evaluated true where the warm-up has
// ... false" with no word of why).
func TestPrefixWithAnEarlyHistoryTriesNoWarmup(t *testing.T) {
	sys, err := examples.Registry().Lookup("raftkv")
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{Seed: 3, Steps: 2000, Time: time.Hour}
	tr, err := replay.FromBytes(simulate(t, sys, cfg), "raftkv.lz4")
	if err != nil {
		t.Fatal(err)
	}
	const at = 1400
	for _, c := range []struct {
		script string
		cannot bool
	}{{"raftkv-linearizable.star", true}, {"raft.star", false}} {
		pre, err := parcheck.NewPrefix(tr, examples.Registry(), at, parcheck.PrefixOptions{Warmup: 300}, loader(t, c.script))
		if err != nil || pre == nil {
			t.Fatalf("%s: prefix %v, %v", c.script, pre, err)
		}
		why := pre.Cannot()
		if (why != "") != c.cannot {
			t.Errorf("%s: Cannot() = %q", c.script, why)
		}
		if c.cannot {
			if !strings.Contains(why, "history writes holds an operation called at #") {
				t.Errorf("%s: Cannot() = %q, want the history named", c.script, why)
			}
			if _, ok, err := pre.Check(tr, examples.Registry(), replay.Options{}, predicates.RunOptions{}); ok || err != nil {
				t.Errorf("%s: Check took over (%v) or failed (%v)", c.script, ok, err)
			}
		}
		pre.Close()
	}
}
