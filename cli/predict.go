package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/replaycheck/replaycheck/internal/shellword"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/explore"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/parcheck"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/simtest"
)

type predictFlags struct {
	sim      simFlags
	at       int
	depth    int
	strategy string
	budget   int
	wall     time.Duration
	faults   int
	jobs     int
	warmup   int
	asJSON   bool
}

// Defaults of predict: CrystalBall looks a short way ahead, widely.
const (
	defaultPredictDepth    = 100
	defaultPredictBudget   = 500
	defaultPredictStrategy = "random"
)

func (a *App) predictCmd() *cobra.Command {
	var f predictFlags
	cmd := &cobra.Command{
		Use:   "predict TRACE... PREDS.star --at STEP [--depth D] [--strategy S] [--budget RUNS] [-o PREFIX.lz4]",
		Short: "Explore the futures of a recorded step and report the safety violations they reach",
		Long: `Consequence prediction, as CrystalBall does from a live snapshot: rebuild the
world after STEP (as replay fork does) and explore its futures, up to D events
each, under a search strategy (default random walks; bfs and dfs search
every order of the first D decisions, deduplicated by state hash, and reach
only a few decisions deep on a busy system: docs/liveness.md). Every
distinct safety violation reached is reported with the shortest path found
to it (a branch trace: the recording's steps #0..#STEP, then the path) and
how many steps after STEP it happens. Violations that already happened at or
before STEP are not predictions and are listed apart.

The futures inherit the trace's network and fault settings (a simulated
trace's header; a live trace takes the system's defaults) unless flags say
otherwise; --faults N lets each future inject N crashes. A node down at
STEP restarts only under churn (the trace's, or --churn N); without it,
it stays down in every future and a note on stderr says so. Futures
receive no external inputs. A prediction is a possibility the search reached, not a
certainty, and finding none means none within the budget.

Branch traces go to PREFIX-1.lz4, PREFIX-2.lz4, ... (default
TRACE-predict-N.lz4), one per future: predictions found in the same
future (two witnesses of one break) name the same file. Each is an
ordinary trace for check and debug. Traces of an earlier run numbered
past this run's are left in place and named on stderr.

Exit codes: 0 no violation predicted, 1 violations predicted, 2 bad input,
3 the trace diverges on replay before STEP, 4 a predicate could not be
evaluated, 130 interrupted (Ctrl-C or SIGTERM) before any violation was
found (what was searched is printed).`,
		Example: `  replay sim paxos --bug spec --seed 8 -o spec.lz4
  replay predict spec.lz4 scripts/paxos.star --at 1038
  replay predict spec.lz4 scripts/paxos.star --at 1038 --strategy bfs --depth 20 --budget 2000 --jobs 2 --json`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.sim.changed = cmd.Flags().Changed
			return a.runPredict(args, f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.at, "at", 0, "the step whose futures to explore (required)")
	fl.IntVar(&f.depth, "depth", defaultPredictDepth, "events per future at most (bfs/dfs: decisions)")
	fl.StringVar(&f.strategy, "strategy", defaultPredictStrategy, "search strategy: "+strings.Join(explore.Names(), ", "))
	fl.IntVar(&f.budget, "budget", defaultPredictBudget, "futures to run at most")
	fl.DurationVar(&f.wall, "time", 0, "stop after this much wall-clock time, e.g. 2m (default: no limit but --budget)")
	fl.IntVar(&f.faults, "faults", 0, "crashes each future may inject")
	fl.IntVar(&f.jobs, "jobs", 1, "futures run at once (the result does not depend on it)")
	fl.IntVar(&f.warmup, "warmup", defaultForkWarmup, warmupUsage)
	fl.BoolVar(&f.asJSON, "json", false, "print the result as one JSON object")
	fl.Uint64Var(&f.sim.seed, "seed", 1, "exploration seed: the same seed, the same futures")
	fl.StringVarP(&f.sim.output, "output", "o", "", "prefix of the branch traces (default: TRACE-predict.lz4, numbered)")
	fl.SetAnnotation("output", outputPrefix, []string{"true"}) // not a file: nothing to compare with the inputs
	f.sim.registerSettings(fl, "virtual-time")
	// The trace names the build and the nodes: these are refused, so
	// --help does not offer them.
	for _, name := range []string{"bug", "param", "nodes"} {
		_ = fl.MarkHidden(name)
	}
	f.sim.budgets.register(fl)
	return cmd
}

// prediction is one distinct safety violation a future reached, with the
// shortest path found to it.
type prediction struct {
	violation *predicates.Violation
	run       int
	trace     []byte
	file      string
}

func (a *App) runPredict(args []string, f predictFlags) error {
	paths, arg, err := splitScript(args)
	if err != nil {
		return err
	}
	changed := f.sim.changed
	switch {
	case !changed("at"):
		return badInput("missing --at STEP (the step whose futures to explore)")
	case f.at < 0:
		return badInput("--at %d: want a step, 0 or more", f.at)
	case f.depth < 1 || f.budget < 1 || f.jobs < 1 || f.faults < 0 || f.warmup < 0:
		return checkAtLeast(atLeast{"depth", f.depth, 1}, atLeast{"budget", f.budget, 1}, atLeast{"jobs", f.jobs, 1}, atLeast{"faults", f.faults, 0}, atLeast{"warmup", f.warmup, 0})
	case !slices.Contains(explore.Names(), f.strategy):
		return badInput("--strategy %q: unknown (known: %s)", f.strategy, strings.Join(explore.Names(), ", "))
	case changed("time") && f.wall <= 0:
		return badInput("--time %v: want a positive wall-clock duration such as 2m", f.wall)
	case changed("bug") || changed("param") || changed("nodes"):
		return badInput("--bug, --param and --nodes come from the trace; they cannot change")
	}
	if err := jobsBound(f.jobs); err != nil {
		return err
	}
	script, err := a.resolveScript(arg)
	if err != nil {
		return err
	}
	tr, err := a.loadTrace(paths)
	if err != nil {
		return err
	}
	if err := checkForkStep(tr, f.at, paths); err != nil {
		return err
	}
	prefix := strings.TrimSuffix(cmpOr(f.sim.output, strings.TrimSuffix(paths[0], ".lz4")+"-predict.lz4"), ".lz4")
	// -o names a prefix, PREFIX-N.lz4: a folder (dir/ wrote dir/-1.lz4)
	// or a device (/dev/full wrote /dev/full-1.lz4) is not one.
	if st, err := os.Stat(prefix); strings.HasSuffix(prefix, "/") || filepath.Base(prefix) == "." || err == nil && !st.Mode().IsRegular() {
		example := "./predict"
		if err == nil && st.IsDir() || strings.HasSuffix(prefix, "/") {
			example = filepath.Join(prefix, "predict")
		}
		return badInput("-o %s: predict names its traces PREFIX-1.lz4, PREFIX-2.lz4, ...; give a prefix such as %s", f.sim.output, example)
	}
	// Before the search, not after it: an output that cannot be written
	// lost the whole search.
	if err := numberedTraces(prefix+".lz4", paths, 1); err != nil {
		return err
	}
	if err := checkWritable(prefix + "-1.lz4"); err != nil {
		return err
	}
	if note := inputsNote(tr, f.at, "futures"); note != "" {
		fmt.Fprintln(a.Stderr, a.name()+" predict: note: "+note)
	}
	ctx, stop := interruptContext(syscall.SIGTERM)
	defer stop()
	prog := a.progress()
	res, err := a.predict(ctx, tr, script.Path, f, func(s string) { prog.update("%s", s) })
	prog.done()
	if err != nil {
		return err
	}
	sum, preds := res.sum, res.preds
	for _, note := range res.notes {
		fmt.Fprintln(a.Stderr, a.name()+" predict: note: "+note)
	}
	if err := writePredictions(preds, prefix, false); err != nil {
		return err
	}
	wrote := distinctFiles(preds)
	if left := leftoverTraces(prefix, wrote); len(left) > 0 {
		verb := "is"
		if len(left) > 1 {
			verb = "are"
		}
		fmt.Fprintf(a.Stderr, "%s predict: note: %s %s left from an earlier run, not this one's (it wrote %s)\n",
			a.name(), strings.Join(left, ", "), verb, plural(wrote, "trace"))
	}
	var panics []*explore.Finding
	for _, fd := range sum.Found {
		if fd.Panic != nil || fd.Stall != nil {
			panics = append(panics, fd)
		}
	}
	if f.asJSON {
		if err := a.predictJSON(tr, paths, script.Name, f, res, panics); err != nil {
			return err
		}
	} else {
		a.predictText(tr, paths, script.Name, f, res, panics)
	}
	if len(preds) > 0 || len(panics) > 0 {
		return withCode(ExitViolations, fmt.Errorf("%d violation(s) predicted from #%d", len(preds)+len(panics), f.at))
	}
	if sum.Stopped == "canceled" {
		// Interrupted with nothing found is not "no violation predicted":
		// a script must not take it for a finished search.
		return &exitError{ExitInterrupted, fmt.Errorf("interrupted after %d of the futures asked for: nothing predicted so far", sum.Runs)}
	}
	return nil
}

// predicted is what predict found from a step, before anything is
// written or printed.
type predicted struct {
	sum     *explore.Summary
	preds   []*prediction                    // by step, then predicate and witness; file not yet set
	earlier map[string]*predicates.Violation // broken at or before the step: not predictions
	// checked is the one check of the recording up to the step that the
	// futures' checks took over from (nil: each was checked from #0).
	checked *parcheck.Prefix
	// notes are what the futures could not do that a reader would expect
	// (a node down at the step that no future restarts).
	notes []string
	// faults are the futures' random faults: what made a violation
	// reachable, in the header and the JSON.
	faults randomFaults
	// liveness names the script's liveness predicates, sorted: futures
	// do not judge them (a run cut at a depth proves no "never").
	liveness []string
}

// randomFaults are a fork's runs' random faults: crashes per virtual
// second, and the chances a message is lost or duplicated.
type randomFaults struct {
	Churn float64 `json:"churn"`
	Drop  float64 `json:"drop"`
	Dup   float64 `json:"dup"`
}

// String names those that are on ("churn=1 drop=0.1"; "" for none).
func (r randomFaults) String() string {
	var on []string
	for _, f := range []struct {
		name string
		v    float64
	}{{"churn", r.Churn}, {"drop", r.Drop}, {"dup", r.Dup}} {
		if f.v > 0 {
			on = append(on, fmt.Sprintf("%s=%g", f.name, f.v))
		}
	}
	return strings.Join(on, " ")
}

// predict explores the futures of tr after step f.at (checked by the
// caller: checkForkStep) and collects each distinct safety violation with
// the shortest path found to it. It is the search behind replay predict
// and the debugger's p, apart from printing: progress hears what it is
// doing, and ctx ending stops it with what it found (sum.Stopped
// "canceled"), not an error.
func (a *App) predict(ctx context.Context, tr *replay.Trace, script string, f predictFlags, progress func(string)) (*predicted, error) {
	changed := f.sim.changed
	sys, err := a.Registry.LookupRecorded(tr.Header.System)
	if err != nil {
		return nil, badInput("%v", err)
	}
	if !changed("steps") {
		f.sim.steps = f.depth
		inner := changed
		f.sim.changed = func(name string) bool { return name == "steps" || inner(name) }
	}
	cfg, err := forkConfig(sys, tr, f.sim)
	if err != nil {
		return nil, err
	}
	maxSteps, memory, timeBudget, err := f.sim.budgets.parse()
	if err != nil {
		return nil, err
	}
	depth := 0
	if f.strategy == "bfs" || f.strategy == "dfs" {
		depth = f.depth
	}
	strat, err := explore.New(f.strategy, cfg, explore.Params{Seed: f.sim.seed, Depth: depth, Faults: f.faults})
	if err != nil {
		return nil, badInput("%v", err)
	}
	start, base, err := a.forkStarterWith(tr, f.at, progress)
	if err != nil {
		return nil, err
	}
	var notes []string
	if down := base.Down(); len(down) > 0 && cfg.Churn == 0 {
		// As fork says: a new user read "no violation predicted" of
		// futures in which two of three replicas never came back.
		notes = append(notes, fmt.Sprintf("%s, down at #%d, stay down in every future: the futures have no churn (--churn N restarts crashed nodes after a --down draw)", idList(down), f.at))
	}
	check := simtest.Options{Registry: a.Registry, HandlerBound: simBound(a.handlerBound), MaxSteps: maxSteps, MemoryBudget: memory, TimeBudget: timeBudget,
		Counts: func(v *predicates.Violation) bool { return v.Kind == "safety" }}
	clock := startWall(ctx, f.wall)
	check.Prefix = a.sharedPrefix(tr, f.at, f.warmup, script, check, progress, clock.over)
	defer check.Prefix.Close()
	best := map[string]*prediction{}
	earlier := map[string]*predicates.Violation{}
	liveness := map[string]bool{}
	a.sayStalls(&cfg, "predict")
	sum, runErr := explore.Run(ctx, sys, cfg, strat, explore.Options{
		Script: script,
		Check:  check,
		Budget: f.budget, Time: clock.left(), Jobs: f.jobs, All: true, Start: start,
		OnRun: func(run int, check *simtest.Result) {
			if check == nil {
				return
			}
			for name, st := range check.Report.Predicates {
				if st.Kind == "liveness" {
					liveness[name] = true
				}
			}
			for _, v := range check.Failing {
				key := v.Predicate + " " + v.Witness
				if v.Step <= f.at {
					earlier[key] = v
					continue
				}
				if p := best[key]; p == nil || v.Step < p.violation.Step {
					best[key] = &prediction{violation: v, run: run, trace: check.Trace}
				}
			}
		},
		Progress: func(p explore.Progress) {
			progress(fmt.Sprintf("predicting from #%d: %d futures%s, %d violations", f.at, p.Runs, statesNote(p.States), len(best)))
		},
	})
	var evalErr *predicates.EvalError
	switch {
	case errors.As(runErr, &evalErr):
		return nil, &exitError{ExitPredicateError, fmt.Errorf("a future of #%d: %w", f.at, runErr)}
	case runErr != nil:
		return nil, withCode(ExitBadInput, runErr)
	}
	preds := make([]*prediction, 0, len(best))
	for _, p := range best {
		preds = append(preds, p)
	}
	slices.SortFunc(preds, func(x, y *prediction) int {
		return cmpOrInt(x.violation.Step-y.violation.Step, strings.Compare(x.violation.Predicate+x.violation.Witness, y.violation.Predicate+y.violation.Witness))
	})
	return &predicted{sum: sum, preds: preds, earlier: earlier, checked: check.Prefix, notes: notes, faults: randomFaults{cfg.Churn, cfg.Drop, cfg.Dup},
		liveness: slices.Sorted(maps.Keys(liveness))}, nil
}

// defaultForkWarmup is how many steps before a forked step each fork's
// check evaluates by default. A fork is short (predict's 100 events,
// critical's walks of 3,000), so the warm-up is paid about once more per
// fork: less than the 5,000 steps of a check --jobs segment, which pays
// it once for a long stretch. On the bundled systems 100 steps did as
// well as 500: the seams refused were refused at both (a history of
// operations kept since #0, a memo no warm-up makes). A seam refused
// costs its fork a check from #0.
const defaultForkWarmup = 500

// warmupUsage is the --warmup flag of the commands that check many
// forks of one step.
const warmupUsage = "check each fork from this many steps before its step, taking over from one check of the recording up to the step (0: check each from #0; the result does not depend on it)"

// sharedPrefix checks the recording up to step at once, for every fork
// of it that check checks (simtest.Options.Prefix): each is then checked
// from warmup steps before at on. It is nil when warmup is 0, when at is
// within the warm-up of #0, when stop said to stop (polled at every
// step: an interrupt, the command's --time), or when the check failed:
// the forks are then checked from #0, which reports what failed.
func (a *App) sharedPrefix(tr *replay.Trace, at, warmup int, script string, check simtest.Options, progress func(string), stop func() bool) *parcheck.Prefix {
	if warmup <= 0 || at < warmup {
		return nil
	}
	say := func(step int) {
		progress(fmt.Sprintf("checking the recording up to #%d (once, for every fork of it): step %d", at, step))
	}
	say(0)
	p, err := parcheck.NewPrefix(tr, a.Registry, at, parcheck.PrefixOptions{Warmup: warmup, Replay: replay.Options{Watch: a.watch}, Stop: stop, Progress: say},
		func(r *replay.Replayer, from int) (*predicates.Checker, error) {
			return predicates.Load(script, r, simtest.LoadOptions(check, from))
		})
	if err != nil {
		return nil
	}
	return p
}

// searchTime is a search's --time (0: none), counted from its start:
// the check of the recording before the search stops on it too, and the
// search gets what is left.
type searchTime struct {
	ctx   context.Context
	wall  time.Duration
	began time.Time
}

func startWall(ctx context.Context, wall time.Duration) searchTime {
	return searchTime{ctx: ctx, wall: wall, began: time.Now()}
}

// over reports whether to stop: interrupted, or the time is up.
func (c searchTime) over() bool {
	return c.ctx.Err() != nil || c.wall > 0 && time.Since(c.began) > c.wall
}

// left is what is left of the budget for a search that starts now (0:
// no budget): at least a nanosecond, which stops it at once.
func (c searchTime) left() time.Duration {
	if c.wall <= 0 {
		return 0
	}
	return max(c.wall-time.Since(c.began), time.Nanosecond)
}

// writePredictions writes each prediction's branch trace to
// PREFIX-1.lz4, PREFIX-2.lz4, ... in order, and records where. Predictions
// found in one future (two witnesses of a break) share its file: each
// file is a different future.
func writePredictions(preds []*prediction, prefix string, fresh bool) error {
	files := map[int]string{}
	for _, p := range preds {
		if file, ok := files[p.run]; ok {
			p.file = file
			continue
		}
		p.file = fmt.Sprintf("%s-%d.lz4", prefix, len(files)+1)
		var err error
		if fresh {
			// The debugger's: a file it did not write stays.
			p.file, err = writeFresh(p.file, p.trace)
		} else {
			err = writeBytes(p.file, p.trace)
		}
		if err != nil {
			return withCode(ExitBadInput, err)
		}
		files[p.run] = p.file
	}
	return nil
}

// distinctFiles is how many traces writePredictions wrote.
func distinctFiles(preds []*prediction) int {
	files := map[string]bool{}
	for _, p := range preds {
		files[p.file] = true
	}
	return len(files)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func cmpOrInt(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

func (a *App) predictText(tr *replay.Trace, paths []string, script string, f predictFlags, res *predicted, panics []*explore.Finding) {
	sum, preds, earlier := res.sum, res.preds, res.earlier
	w := a.Stdout
	faults := ""
	if on := res.faults.String(); on != "" {
		faults = ", " + on
	}
	fmt.Fprintf(w, "futures of #%d in %s (%s%s, up to %d events each)\n", f.at, strings.Join(paths, " "), sum.Strategy, faults, f.depth)
	if len(preds) == 0 {
		fmt.Fprintf(w, "\nno safety violation predicted\n")
	}
	for i, p := range preds {
		v := p.violation
		fmt.Fprintf(w, "\n%d. %s, %d steps after #%d (future %d)\n", i+1, v.Headline(), v.Step-f.at, f.at, p.run)
		if v.Witness != "" {
			fmt.Fprintf(w, "   witness: %s\n", v.Witness)
		}
		fmt.Fprintf(w, "   wrote %s; debug: %s debug %s --preds %s --at %d\n", p.file, a.prog(), shellword.Path(p.file), shellword.Path(script), v.Step)
	}
	for _, fd := range panics {
		fmt.Fprintf(w, "\nfuture %d: %s\n", fd.Run, fd.Headline())
	}
	if len(earlier) > 0 {
		var names []string
		for _, e := range earlierSteps(earlier) {
			name := fmt.Sprintf("%s (#%d)", e.Predicate, e.Step)
			if e.Witnesses > 1 {
				name = fmt.Sprintf("%s (#%d, %d witnesses)", e.Predicate, e.Step, e.Witnesses)
			}
			names = append(names, name)
		}
		fmt.Fprintf(w, "\nalready violated at or before #%d, not predictions: %s\n", f.at, strings.Join(names, ", "))
	}
	fmt.Fprintf(w, "\n%s, %d events in %v", plural(sum.Runs, "future"), sum.Events, sum.Elapsed.Round(time.Millisecond))
	fmt.Fprint(w, statesNote(sum.States))
	fmt.Fprintf(w, "; stopped: %s\n", map[string]string{"budget": "the budget ran out", "exhausted": "every future within the depth explored",
		"canceled": "interrupted", "time": "the time ran out"}[sum.Stopped])
	if line := checkedLine(res.checked, "future"); line != "" {
		fmt.Fprintln(w, line)
	}
	if len(res.liveness) > 0 {
		fmt.Fprintln(w, livenessNotJudged(res.liveness, a.prog()))
	}
	fmt.Fprintf(w, "A prediction is a future the search reached; none predicted means none within the budget.\n")
}

func (a *App) predictJSON(tr *replay.Trace, paths []string, script string, f predictFlags, res *predicted, panics []*explore.Finding) error {
	sum, preds, earlier := res.sum, res.preds, res.earlier
	type predJSON struct {
		Predicate  string `json:"predicate"`
		Witness    string `json:"witness,omitempty"`
		Step       int    `json:"step"`
		StepsAfter int    `json:"steps_after"`
		Future     int    `json:"future"`
		Trace      string `json:"trace"`
		Debug      string `json:"debug"`
	}
	out := struct {
		Traces    []string     `json:"traces"`
		At        int          `json:"at"`
		Strategy  string       `json:"strategy"`
		Depth     int          `json:"depth"`
		Futures   int          `json:"futures"`
		Events    int64        `json:"events"`
		States    *int         `json:"distinct_states"`
		Seconds   float64      `json:"seconds"`
		Stopped   string       `json:"stopped"`
		Faults    randomFaults `json:"random_faults"`
		Predicted []predJSON   `json:"predicted"`
		Panics    []string     `json:"panics"`
		Earlier   []string     `json:"already_violated"`
		EarlierAt []earlyBreak `json:"already_violated_at"`
		// Resumed futures were checked from a warm-up before the step
		// on; the others from #0 (both null: every future from #0).
		Resumed   *int `json:"checked_from_warmup"`
		FromStart *int `json:"checked_from_start"`
		// Liveness: the script's liveness predicates, which futures do
		// not judge.
		Liveness []string `json:"liveness_not_judged"`
	}{Liveness: append([]string{}, res.liveness...), Traces: paths, At: f.at, Strategy: sum.Strategy, Depth: f.depth, Futures: sum.Runs, Events: sum.Events,
		Seconds: sum.Elapsed.Seconds(), Stopped: sum.Stopped, Faults: res.faults, Predicted: []predJSON{}, Panics: []string{}, Earlier: []string{}}
	if sum.States >= 0 {
		out.States = &sum.States
	}
	out.Resumed, out.FromStart = checkedCounts(res.checked)
	for _, p := range preds {
		v := p.violation
		out.Predicted = append(out.Predicted, predJSON{Predicate: v.Predicate, Witness: v.Witness, Step: v.Step, StepsAfter: v.Step - f.at,
			Future: p.run, Trace: p.file, Debug: fmt.Sprintf("%s debug %s --preds %s --at %d", a.prog(), shellword.Path(p.file), shellword.Path(script), v.Step)})
	}
	for _, fd := range panics {
		out.Panics = append(out.Panics, fd.Headline())
	}
	out.EarlierAt = earlierSteps(earlier)
	for _, e := range out.EarlierAt {
		out.Earlier = append(out.Earlier, e.Predicate)
	}
	slices.Sort(out.Earlier)
	out.Earlier = slices.Compact(out.Earlier)
	enc := json.NewEncoder(a.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// earlyBreak is a predicate the recorded steps broke at or before the fork
// step, and the step; predict also counts the witnesses broken there.
type earlyBreak struct {
	Predicate string `json:"predicate"`
	Step      int    `json:"step"`
	Witnesses int    `json:"witnesses,omitempty"`
}

// earlierSteps is one entry per predicate and step, in step order: a
// step that broke a predicate for several witnesses counts them.
func earlierSteps(vs map[string]*predicates.Violation) []earlyBreak {
	type seen struct {
		step int
		pred string
	}
	witnesses := map[seen]int{}
	for _, v := range vs {
		witnesses[seen{v.Step, v.Predicate}]++
	}
	keys := slices.SortedFunc(maps.Keys(witnesses), func(a, b seen) int {
		return cmp.Or(cmp.Compare(a.step, b.step), strings.Compare(a.pred, b.pred))
	})
	out := []earlyBreak{}
	for _, k := range keys {
		out = append(out, earlyBreak{Predicate: k.pred, Step: k.step, Witnesses: witnesses[k]})
	}
	return out
}

// inputsNote says, when the recording has inputs after step at, that
// the forks explored from it (what: "futures", "runs") get none of them:
// the scenario does not run again in a fork, which a user comparing with
// the recording should know.
func inputsNote(tr *replay.Trace, at int, what string) string {
	n, first := inputsAfter(tr, at)
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("the recording has %s after #%d (the first at #%d); the %s explored here receive none of them", plural(n, "external input"), at, first, what)
}

// inputsAfter counts the recording's input events after step at, and
// gives the first one's step.
func inputsAfter(tr *replay.Trace, at int) (n, first int) {
	for i := at + 1; i < tr.Len(); i++ {
		if tr.Event(i).Kind == node.KindInput {
			if n == 0 {
				first = i
			}
			n++
		}
	}
	return n, first
}

// livenessNotJudged says that futures judge no liveness predicate, and
// names the script's.
func livenessNotJudged(names []string, prog string) string {
	return fmt.Sprintf("liveness predicates are not judged in futures: %s (a future cut at --depth proves no \"never\"; %s critical finds where one became unavoidable)",
		strings.Join(names, ", "), prog)
}
