package explore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/system"
)

const tinyScript = "testdata/tiny.star"

// legal wraps a chooser and fails the test on any decision outside what
// the Choice allows: an index out of range, a time outside the event's
// window (or later than the earliest it could run), a crash of a node
// that is not up, an advance past an event the chooser then runs late.
type legal struct {
	sim.Chooser
	errs *[]string
}

func (l *legal) Next(c *sim.Choice) (sim.Decision, error) {
	d, err := l.Chooser.Next(c)
	if err != nil {
		return d, err
	}
	fail := func(format string, args ...any) {
		*l.errs = append(*l.errs, fmt.Sprintf("%s: step %d: ", l.Describe(), c.Step())+fmt.Sprintf(format, args...))
	}
	en := c.Enabled()
	switch {
	case d.Stop != "", d.InTimeOrder:
	case d.Advance:
		if due, ok := c.Due(); !ok || d.At != due {
			fail("advance to %v, but the next scenario action is at %v (%v)", d.At, due, ok)
		}
	case d.Crash != "":
		if !slices.Contains(c.Up(), d.Crash) || d.At != c.Now() {
			fail("crash of %s at %v (now %v, up %v)", d.Crash, d.At, c.Now(), c.Up())
		}
	case d.Restart != "":
		fail("restart of %s: exploring choosers leave restarts to the simulator", d.Restart)
	case len(en) == 0:
	case d.Index < 0 || d.Index >= len(en):
		fail("index %d of %d enabled", d.Index, len(en))
	default:
		p := en[d.Index]
		if want := max(c.Now(), p.Earliest); d.At != want || d.At > p.Latest {
			fail("runs %s at %v, want %v (window %v..%v)", p, d.At, want, p.Earliest, p.Latest)
		}
		if due, ok := c.Due(); ok && due < d.At {
			fail("runs %s at %v after a scenario action due at %v", p, d.At, due)
		}
	}
	return d, nil
}

// checkedStart runs every chooser wrapped in legal.
func checkedStart(sys *system.System, errs *[]string) Starter {
	return func(cfg sim.Config, out io.Writer) (*sim.Result, error) {
		cfg.Chooser = &legal{Chooser: cfg.Chooser, errs: errs}
		return sim.Run(sys, cfg, out)
	}
}

func paxosConfig(bug string) sim.Config {
	cfg := sim.DefaultConfig()
	cfg.Bug = bug
	return cfg.WithDefaults(paxos.System)
}

// TestChoosersDecideLegally runs every strategy on paxos (churn, loss,
// scenario inputs) with injected faults, checking each decision.
func TestChoosersDecideLegally(t *testing.T) {
	cfg := paxosConfig("none")
	for _, tc := range []struct {
		name string
		p    Params
	}{
		{"random", Params{Faults: 2}}, {"pct", Params{Faults: 2}}, {"delay-rr", Params{Faults: 2}},
		{"delay-rtc", Params{Faults: 1, FailStop: true}}, {"delay-prr", Params{Faults: 2}},
		{"delay-rr", Params{Exhaustive: true, Faults: 1}}, {"bfs", Params{Faults: 1}}, {"dfs", Params{Faults: 1}},
	} {
		t.Run(fmt.Sprintf("%s-%v", tc.name, tc.p.Exhaustive), func(t *testing.T) {
			tc.p.Seed = 3
			st, err := New(tc.name, cfg, tc.p)
			if err != nil {
				t.Fatal(err)
			}
			var errs []string
			sum, err := Run(context.Background(), paxos.System, cfg, st, Options{Script: "../scripts/paxos.star", Budget: 12, Start: checkedStart(paxos.System, &errs)})
			if err != nil {
				t.Fatal(err)
			}
			if len(errs) > 0 {
				t.Fatalf("%d illegal decisions; the first: %s", len(errs), errs[0])
			}
			if sum.Runs != 12 || len(sum.Found) != 0 {
				t.Fatalf("runs %d, found %d (%s)", sum.Runs, len(sum.Found), sum.Stopped)
			}
		})
	}
}

// TestFaultsInjected: with a budget, sampling strategies crash nodes
// (after the first run, which learns how long a run is), never more than
// the budget, and fail-stop crashes never restart.
func TestFaultsInjected(t *testing.T) {
	cfg := paxosConfig("none")
	cfg.Churn = 0
	for _, name := range []string{"random", "pct", "delay-rr", "delay-rtc", "delay-prr"} {
		st, _ := New(name, cfg, Params{Seed: 1, Faults: 2, FailStop: true})
		crashes := 0
		for i := range 8 {
			ch, _ := st.Next()
			c := cfg
			c.Chooser = ch
			res, err := sim.Run(paxos.System, c, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			st.Done(Outcome{Run: i, Chooser: ch, Steps: res.Steps})
			switch {
			case i == 0 && res.Stats.Crashes != 0:
				t.Errorf("%s: the first run crashed %d nodes before knowing a run's length", name, res.Stats.Crashes)
			case res.Stats.Crashes > 2:
				t.Errorf("%s: run %d crashed %d nodes with a budget of 2", name, i, res.Stats.Crashes)
			case res.Stats.Restarts != 0:
				t.Errorf("%s: fail-stop crashes restarted", name)
			}
			crashes += int(res.Stats.Crashes)
		}
		if crashes == 0 {
			t.Errorf("%s: no crash in 8 runs with a budget of 2 each", name)
		}
	}
}

// TestSameSeedSameResult: the same seed finds the same run with the same
// trace bytes, whatever --jobs; another seed explores other runs.
func TestSameSeedSameResult(t *testing.T) {
	cfg := paxosConfig("spec")
	for _, name := range []string{"random", "pct", "delay-rtc"} {
		var first []byte
		var firstRun int
		for _, jobs := range []int{1, 2, 1} {
			st, _ := New(name, cfg, Params{Seed: 5, Faults: 1})
			sum, err := Run(context.Background(), paxos.System, cfg, st, Options{Script: "../scripts/paxos.star", Budget: 200, Jobs: jobs, Batch: 4})
			if err != nil {
				t.Fatal(err)
			}
			if len(sum.Found) != 1 {
				t.Fatalf("%s jobs %d: found %d in %d runs", name, jobs, len(sum.Found), sum.Runs)
			}
			f := sum.Found[0]
			if first == nil {
				first, firstRun = f.Trace, f.Run
				continue
			}
			if f.Run != firstRun || !bytes.Equal(f.Trace, first) {
				t.Fatalf("%s jobs %d: run %d (%d bytes), want run %d (%d bytes)", name, jobs, f.Run, len(f.Trace), firstRun, len(first))
			}
		}
	}
}

// TestFoundRunReplays: the found trace's schedule re-runs to the same
// events.
func TestFoundRunReplays(t *testing.T) {
	cfg := paxosConfig("spec")
	st, _ := New("pct", cfg, Params{Seed: 2})
	sum, err := Run(context.Background(), paxos.System, cfg, st, Options{Script: "../scripts/paxos.star", Budget: 100})
	if err != nil || len(sum.Found) != 1 {
		t.Fatalf("found %d: %v", len(sum.Found), err)
	}
	f := sum.Found[0]
	sc := schedule(t, f.Trace)
	var buf bytes.Buffer
	if _, err := sim.Run(paxos.System, sc.Config().WithDefaults(paxos.System), &buf); err != nil {
		t.Fatal(err)
	}
	if again := schedule(t, buf.Bytes()); !sameEvents(sc, again) {
		t.Fatal("the re-run's events differ from the found run's")
	}
}

func schedule(t *testing.T, trace []byte) *sim.Schedule {
	t.Helper()
	sc, err := panicSchedule(&job{trace: trace, chooser: sim.NewSeeded(0)})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func sameEvents(a, b *sim.Schedule) bool {
	var x, y strings.Builder
	a.Origin, b.Origin = "", ""
	a.Format(&x)
	b.Format(&y)
	return x.String() == y.String()
}

// TestPanicIsAFinding: a handler panic is reported like a violation,
// and its schedule (the trace's, plus the event that panicked)
// reproduces it.
func TestPanicIsAFinding(t *testing.T) {
	sys := tinySystem(3)
	cfg := sim.DefaultConfig()
	cfg.Bug = "panic"
	cfg = cfg.WithDefaults(sys)
	st, _ := New("random", cfg, Params{Seed: 1})
	sum, err := Run(context.Background(), sys, cfg, st, Options{Script: tinyScript, Budget: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Found) != 1 || sum.Found[0].Panic == nil {
		t.Fatalf("found %d in %d runs, want a panic", len(sum.Found), sum.Runs)
	}
	f := sum.Found[0]
	// The headline says where, as sim's does: the handler's line.
	if h := f.Headline(); !strings.Contains(h, " at ") || !strings.Contains(h, "_test.go:") {
		t.Errorf("headline %q does not say where the handler panicked", h)
	}
	last := f.Schedule.Events[len(f.Schedule.Events)-1]
	if last.Kind != node.KindRecv || last.Node != f.Panic.Node || len(f.Schedule.Events) != f.Steps+1 {
		t.Fatalf("schedule ends with %v at %s (%d events, trace %d); the panic was at %s", last.Pending, last.Node, len(f.Schedule.Events), f.Steps, f.Panic.Node)
	}
	_, err = sim.Run(sys, f.Schedule.Config().WithDefaults(sys), io.Discard)
	var pe *node.PanicError
	if !errors.As(err, &pe) || pe.Node != f.Panic.Node || pe.Seq != f.Panic.Seq {
		t.Fatalf("re-running the schedule: %v, want the panic of %s seq %d", err, f.Panic.Node, f.Panic.Seq)
	}
}

// TestAllReportsDistinct: --all keeps going and reports each distinct
// violation (predicate and witness) once.
func TestAllReportsDistinct(t *testing.T) {
	sys := tinySystem(3)
	cfg := sim.DefaultConfig()
	cfg.Bug = "inversion"
	cfg = cfg.WithDefaults(sys)
	st, _ := New("random", cfg, Params{Seed: 1})
	sum, err := Run(context.Background(), sys, cfg, st, Options{Script: tinyScript, Budget: 200, All: true, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, f := range sum.Found {
		if keys[f.Key()] {
			t.Fatalf("%s reported twice", f.Key())
		}
		keys[f.Key()] = true
	}
	// n1 (pinged by n2, n3) and n2 (by n1, n3) can see an inversion;
	// n3 too (by n1, n2).
	if sum.Runs != 200 || len(keys) < 2 {
		t.Fatalf("%d runs, distinct findings %v", sum.Runs, slices.Sorted(maps.Keys(keys)))
	}
}

// probe is what a recorder saw at each decision point with a choice:
// how many nodes had an enabled event, how many events were enabled,
// the world's timed state hash, the nodes up.
type probe struct {
	nodes, enabled []int
	keys           []uint64
	up             [][]node.ID
}

// runDelays runs the base scheduler with the given delays, recording
// the number of candidate nodes at each decision.
func runDelays(t *testing.T, sys *system.System, cfg sim.Config, base string, delays map[int]int) probe {
	t.Helper()
	c := &delayChooser{core: newCore(1, 0, false, settings{maxDown: 1}), base: baseSched{kind: base}, delays: delays}
	var pr probe
	w := &recorder{Chooser: c, at: func() int { return c.decisions }, pr: &pr}
	cfg.Chooser = w
	if _, err := sim.Run(sys, cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	return pr
}

// recorder wraps a chooser and records a probe; at is the wrapped
// chooser's number of decisions made, so an advance's second call at one
// decision is not recorded twice.
type recorder struct {
	sim.Chooser
	at func() int
	pr *probe
}

func (r *recorder) Next(c *sim.Choice) (sim.Decision, error) {
	if en := c.Enabled(); len(en) > 0 && r.at() == len(r.pr.nodes) {
		seen := map[node.ID]bool{}
		for _, p := range en {
			seen[p.Node] = true
		}
		r.pr.nodes = append(r.pr.nodes, len(seen))
		r.pr.enabled = append(r.pr.enabled, len(en))
		r.pr.keys = append(r.pr.keys, c.TimedStateHash())
		r.pr.up = append(r.pr.up, slices.Clone(c.Up()))
	}
	return r.Chooser.Next(c)
}

// TestSESEnumeratesPlacements: without state caching, SES runs exactly
// the placements of 0, 1, 2 delays that a brute-force enumeration over
// the base scheduler's decision points finds, each once, stratum by
// stratum; with caching it runs fewer and visits the same states.
func TestSESEnumeratesPlacements(t *testing.T) {
	sys := tinySystem(3)
	cfg := sim.DefaultConfig().WithDefaults(sys)
	const bound = 2
	for _, base := range []string{"rr", "rtc"} {
		// Brute force: a placement is a map point -> delays; its
		// children add k delays at a later point with enough nodes.
		var want []string
		strata := map[string]int{}
		var walk func(delays map[int]int, last, used int)
		walk = func(delays map[int]int, last, used int) {
			pr := runDelays(t, sys, cfg, base, delays)
			key := placementKey(delays)
			want = append(want, key)
			strata[key] = used
			for j := last + 1; j <= len(pr.nodes); j++ {
				for k := 1; k < pr.nodes[j-1] && used+k <= bound; k++ {
					d := maps.Clone(delays)
					d[j] = k
					walk(d, j, used+k)
				}
			}
		}
		walk(map[int]int{}, 0, 0)

		st, _ := New("delay-"+base, cfg, Params{Seed: 1, Depth: bound, Exhaustive: true})
		ses := st.(*sesStrategy)
		ses.noCache = true
		var got []string
		start := func(cfg sim.Config, out io.Writer) (*sim.Result, error) {
			d := map[int]int{}
			for q := cfg.Chooser.(*delayChooser).ses.pl; q != nil; q = q.parent {
				d[q.at] = q.delays
			}
			got = append(got, placementKey(d))
			return sim.Run(sys, cfg, out)
		}
		sum, err := Run(context.Background(), sys, cfg, st, Options{Script: tinyScript, Budget: 100000, Start: start})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Stopped != "exhausted" || sum.Runs != len(want) {
			t.Fatalf("%s: %d runs (%s), want %d", base, sum.Runs, sum.Stopped, len(want))
		}
		// Stratum by stratum: delays never decrease along the runs.
		for i := 1; i < len(got); i++ {
			if strata[got[i]] < strata[got[i-1]] {
				t.Fatalf("%s: run %d (%s, %d delays) after run %d (%s, %d delays)", base, i, got[i], strata[got[i]], i-1, got[i-1], strata[got[i-1]])
			}
		}
		sort.Strings(want)
		sorted := slices.Sorted(slices.Values(got))
		if !slices.Equal(sorted, want) {
			t.Fatalf("%s: SES ran\n%v\nbrute force\n%v", base, sorted, want)
		}
		allStates := maps.Clone(ses.visited)

		st, _ = New("delay-"+base, cfg, Params{Seed: 1, Depth: bound, Exhaustive: true})
		cached, err := Run(context.Background(), sys, cfg, st, Options{Script: tinyScript, Budget: 100000})
		if err != nil {
			t.Fatal(err)
		}
		if cached.Stopped != "exhausted" || cached.Runs >= sum.Runs || cached.States != len(allStates) {
			t.Fatalf("%s: with caching %d runs (%s) and %d states; without, %d runs and %d states", base, cached.Runs, cached.Stopped, cached.States, sum.Runs, len(allStates))
		}
		t.Logf("%s: %d placements of at most %d delays; caching runs %d, %d states", base, sum.Runs, bound, cached.Runs, cached.States)
	}
}

func placementKey(d map[int]int) string {
	var parts []string
	for _, j := range slices.Sorted(maps.Keys(d)) {
		parts = append(parts, fmt.Sprintf("%d+%d", j, d[j]))
	}
	return strings.Join(parts, " ")
}

// TestSearchExhausts: bfs and dfs exhaust the tiny system (with and
// without a crash to inject, with and without a scenario input that
// choosers must advance to) and count exactly the states a brute-force
// walk of every execution reaches.
func TestSearchExhausts(t *testing.T) {
	for _, sys := range []*system.System{tinySystem(2), tinyInputSystem(2)} {
		for _, faults := range []int{0, 1} {
			cfg := sim.DefaultConfig().WithDefaults(sys)
			want := bruteStates(t, sys, cfg, faults)
			for _, name := range []string{"bfs", "dfs"} {
				st, _ := New(name, cfg, Params{Seed: 1, Depth: 100, Faults: faults, FailStop: true})
				sum, err := Run(context.Background(), sys, cfg, st, Options{Script: tinyScript, Budget: 100000, Jobs: 2})
				if err != nil {
					t.Fatal(err)
				}
				if sum.Stopped != "exhausted" || sum.States != want {
					t.Fatalf("%s, scenario %v, faults %d: %s after %d runs with %d states, want exhausted with %d",
						name, sys.Scenario != nil, faults, sum.Stopped, sum.Runs, sum.States, want)
				}
				t.Logf("%s, scenario %v, faults %d: %d runs, %d states", name, sys.Scenario != nil, faults, sum.Runs, sum.States)
			}
		}
	}
}

// bruteStates walks every execution of sys (every enabled event, and a
// fail-stop crash of every up node while faults last, at every decision)
// and counts the distinct states at decisions with a choice, keyed as the
// search keys them.
func bruteStates(t *testing.T, sys *system.System, cfg sim.Config, faults int) int {
	states := map[uint64]bool{}
	var walk func(path []pathStep, left int)
	walk = func(path []pathStep, left int) {
		var pr probe
		c := &pathChooser{core: newCore(1, 0, false, settings{faults: faults, failStop: true, maxDown: cfg.MaxDown}), path: path}
		cfg.Chooser = &recorder{Chooser: c, at: func() int { return c.decisions }, pr: &pr}
		if _, err := sim.Run(sys, cfg, io.Discard); err != nil {
			t.Fatal(err)
		}
		if len(pr.keys) <= len(path) {
			return // the path ends the run
		}
		states[mix(pr.keys[len(path)], uint64(left))] = true
		for i := range pr.enabled[len(path)] {
			walk(append(slices.Clone(path), pathStep{index: i}), left)
		}
		if left > 0 {
			for _, id := range pr.up[len(path)] {
				walk(append(slices.Clone(path), pathStep{crash: id}), left-1)
			}
		}
	}
	walk(nil, faults)
	return len(states)
}

// pathChooser makes the decisions of an explicit path, then stops at the
// next decision (after the recorder saw it).
type pathChooser struct {
	core
	path []pathStep
	name string // the event of the decision under way
}

type pathStep struct {
	index int
	crash node.ID
}

func (c *pathChooser) Describe() string { return "path" }

func (c *pathChooser) Next(ch *sim.Choice) (sim.Decision, error) {
	en := ch.Enabled()
	if len(en) == 0 {
		return sim.Decision{}, nil
	}
	if c.decisions >= len(c.path) {
		return sim.Decision{Stop: "path done"}, nil
	}
	s := c.path[c.decisions]
	if s.crash != "" {
		return c.crash(ch, s.crash), nil
	}
	// An index names an event of the decision's first call; after an
	// advance, the same event.
	if c.name == "" {
		c.name = en[s.index].String()
	}
	i := slices.IndexFunc(en, func(p sim.Pending) bool { return p.String() == c.name })
	d := c.pick(ch, max(i, 0))
	if !d.Advance {
		c.name = ""
	}
	return d, nil
}

// The memory and time budgets measure the process: with --jobs, the runs
// beside an evaluation allocate too, and a run whose check ran out of
// such a budget failed at random (a hostile pass: exit 4 with --jobs 4,
// clean with --jobs 1). Such a check is run again alone, so the result
// does not depend on --jobs.
func TestProcessBudgetsDoNotDependOnJobs(t *testing.T) {
	cfg := paxosConfig("none")
	cfg.Steps = 401 // two heavy evaluations a run
	for _, jobs := range []int{1, 4, 4} {
		st, _ := New("random", cfg, Params{Seed: 1})
		sum, err := Run(context.Background(), paxos.System, cfg, st, Options{Script: "testdata/heapy.star", Budget: 16, Jobs: jobs, Batch: 8,
			Check: simtest.Options{MemoryBudget: 40 << 20}})
		if err != nil {
			t.Fatalf("jobs %d: %v", jobs, err)
		}
		if len(sum.Found) != 0 {
			f := sum.Found[0]
			t.Fatalf("jobs %d: run %d failed: %v", jobs, f.Run, f.EvalErr)
		}
		if sum.Runs != 16 {
			t.Fatalf("jobs %d: %d runs, want 16", jobs, sum.Runs)
		}
	}
}

// Findings of predicates that could not be evaluated are told apart by
// the predicate: every one had the key "error", so a merge of shards kept
// the first and dropped a second predicate's (a hostile pass). And the
// headline is the evaluation's, without the check's "seed N:", which
// names nothing of an exploration's run.
func TestEvaluationErrorFindingsByPredicate(t *testing.T) {
	wrap := func(name string) *Finding {
		e := &predicates.EvalError{Failures: []predicates.EvalFailure{{Name: name, Kind: "safety", Step: 3, Message: "boom"}}}
		return &Finding{EvalErr: fmt.Errorf("seed 1: %w", e)}
	}
	a, b := wrap("A"), wrap("B")
	if a.Key() == b.Key() {
		t.Errorf("errors of predicates A and B share the key %q", a.Key())
	}
	if h := a.Headline(); strings.Contains(h, "seed 1") || !strings.Contains(h, "A") {
		t.Errorf("headline %q", h)
	}
}

// A run whose check finished, or found a failure, before the exploration
// was canceled is kept: every run checked when the signal came was
// discarded, its finding with it (a review).
func TestCanceledRunKeepsWhatItFound(t *testing.T) {
	canceled := context.Canceled
	found := &simtest.Result{Report: &predicates.Report{}, Failing: []*predicates.Violation{{Predicate: "P"}}}
	done := &simtest.Result{Report: &predicates.Report{Complete: true}}
	cut := &simtest.Result{Report: &predicates.Report{}}
	for _, tc := range []struct {
		name     string
		canceled error
		err      error
		cr       *simtest.Result
		discard  bool
	}{
		{"a failure found", canceled, nil, found, false},
		{"a finished check", canceled, nil, done, false},
		{"a check stopped early", canceled, nil, cut, true},
		{"an evaluation error", canceled, errors.New("boom"), cut, false},
		{"not canceled", nil, nil, cut, false},
	} {
		if got := canceledCheck(tc.canceled, tc.err, tc.cr); got != tc.discard {
			t.Errorf("%s: discarded %v, want %v", tc.name, got, tc.discard)
		}
	}
}

// TestAllReportsEveryViolationOfARun: with --all, a run that breaks two
// predicates reports both. Only a run's first violation was kept, so a
// predicate every run broke after another one was never reported (a new
// user's G-counter: EntriesBoundedByOwner behind SumWithinIssued).
func TestAllReportsEveryViolationOfARun(t *testing.T) {
	sys := tinySystem(3)
	cfg := sim.DefaultConfig()
	cfg.Bug = "inversion"
	cfg = cfg.WithDefaults(sys)
	script := filepath.Join(t.TempDir(), "two.star")
	src, err := os.ReadFile(tinyScript)
	if err != nil {
		t.Fatal(err)
	}
	// Early breaks at step 3 of every run, before any inversion can.
	if err := os.WriteFile(script, append(src, "safety(\"Early\", lambda: event.step < 3)\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ := New("random", cfg, Params{Seed: 1})
	// How many runs broke each predicate, counted apart from the driver.
	var mu sync.Mutex
	broke := map[string]int{}
	onRun := func(_ int, check *simtest.Result) {
		mu.Lock()
		defer mu.Unlock()
		seen := map[string]bool{}
		for _, v := range check.Failing {
			if !seen[v.Predicate] {
				seen[v.Predicate] = true
				broke[v.Predicate]++
			}
		}
	}
	sum, err := Run(context.Background(), sys, cfg, st, Options{Script: script, Budget: 60, All: true, OnRun: onRun})
	if err != nil {
		t.Fatal(err)
	}
	preds := map[string]int{}
	hits := map[string]int{}
	for _, f := range sum.Found {
		if f.Violation == nil {
			t.Fatalf("a finding without a violation: %s", f.Headline())
		}
		preds[f.Violation.Predicate]++
		hits[f.Violation.Predicate] += f.Runs
	}
	if preds["Early"] != 1 || preds["NoInversion"] == 0 {
		t.Fatalf("findings by predicate %v in %d runs: want Early once and NoInversion too", preds, sum.Runs)
	}
	// Every run breaks Early: each failed, and each counts in the one
	// finding; each run that broke NoInversion counts in one of its.
	if sum.FailedRuns != sum.Runs || hits["Early"] != sum.Runs || hits["NoInversion"] != broke["NoInversion"] {
		t.Fatalf("%d runs, %d failed; runs per finding %v, runs that broke each %v", sum.Runs, sum.FailedRuns, hits, broke)
	}
}
