package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/replaycheck/replaycheck/internal/shellword"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/replaycheck/replaycheck/explore"
	"github.com/replaycheck/replaycheck/parcheck"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/statedb"
	"github.com/replaycheck/replaycheck/system"
	"github.com/replaycheck/replaycheck/world"
)

type exploreFlags struct {
	sim        simFlags
	strategy   string
	budget     int
	wall       time.Duration
	depth      int
	faults     int
	failStop   bool
	exhaustive bool
	samples    int
	jobs       int
	all        bool
	asJSON     bool
	from       []string
	at         int
	warmup     int
	// visit walks the flags given on the command line, to print the
	// command that re-runs a finding of an exploration --from a trace.
	visit func(func(*pflag.Flag))
}

// defaultBudget bounds an exploration given neither --budget nor --time.
const defaultBudget = 1000

func (a *App) exploreCmd() *cobra.Command {
	var f exploreFlags
	cmd := &cobra.Command{
		Use:   "explore SYSTEM --check PREDS.star [--strategy S] [--budget RUNS | --time DURATION] [flags] -o FOUND.lz4",
		Short: "Search executions of a system under a strategy; the first failing one becomes a trace",
		Long: `Run SYSTEM in the simulator again and again, each run's decisions (which
enabled event runs next, and crashes the strategy injects) made by a search
strategy, and check every run against PREDS.star exactly as replay check
does: safety violations and liveness alarms count. A handler panic counts
too. The first failing run is written to -o as an ordinary trace, with the
commands that re-run it (its schedule is in the trace) and open the debugger
at the violation. --all keeps going and writes one trace per distinct
finding (predicate and witness): FOUND.lz4, FOUND-2.lz4, ...

Strategies (docs/exploration.md has their sources and parameters):
  random      uniform among the enabled events (MaceMC's random walk)
  pct         random node priorities and --depth-1 priority change points (PCT)
  delay-rr    delaying explorer over round-robin, stratified sampling
  delay-rtc   ... over run-to-completion
  delay-prr   ... over probabilistic round-robin
              (--exhaustive: stratified exhaustive search with state caching)
  bfs, dfs    bounded exhaustive search over global states (--depth decisions
              per run), deduplicated by state hash

--depth is pct's bug depth (default 3), the delaying explorers' largest
delay bound (default 5), bfs/dfs's bound on decisions per run (default 50).
--faults N lets every run inject N crashes (restarting after a --down draw,
or never with --fail-stop); churn from the system's defaults applies as
well unless --churn 0. The same --seed gives the same runs and the same
found trace; --jobs N runs N executions at once with the same result.
Runs are numbered from 0: "run 4 fails" is the fifth. Without --budget or
--time the budget is ` + fmt.Sprint(defaultBudget) + ` runs. --virtual-time limits
each run's virtual time (sim's --time).

--from TRACE... --at STEP explores the futures of a recorded run, simulated
or live: every run keeps the recording's steps #0..#STEP (the world
replay fork rebuilds there) and continues it under the strategy. The
trace's bug, parameters and nodes hold; its network and fault settings
carry over unless a flag says otherwise. A finding is re-run by the same
exploration stopped after its run (the printed reproduce command).

--shard I/N runs only the runs numbered I, I+N, I+2N, ... below --budget
(which stays the whole exploration's), so N machines split one exploration,
and writes what the shard found to a result file (--results, default
SYSTEM-BUG-explore-results-I-of-N.json) for replay results merge. random
without --faults runs exactly the unsharded runs; pct, delay-* sampling and
--faults learn the length of a run from the shard's own runs only. bfs, dfs
and --exhaustive search one shared space and cannot be sharded.

Exit codes: 0 no violation (the budget or time ran out, or the bounded space
was exhausted: the output says which), 1 a violation or panic was found,
2 bad input, 3 a run's replay diverged from its simulation (the
exploration ends there; its trace is written after the findings before
it, for replay verify), 4 a predicate
could not be evaluated on a run (as check), or with --strict-tables a
table matched no object in any run and nothing was found, 130 Ctrl-C or
SIGTERM stopped it after the runs under way (with its summary and result
file, whatever it found).`,
		Example: `  replay explore paxos --bug spec --check scripts/paxos.star --strategy pct -o spec.lz4
  replay explore chainrep --bug neighbour-failure --check scripts/chainrep.star \
      --strategy delay-rtc --churn 0 --faults 2 --budget 2000 --jobs 2 -o nf.lz4
  replay explore paxos --check scripts/paxos.star --strategy bfs --depth 20 --churn 0 --budget 5000`,
		Args:        oneSystem,
		Annotations: map[string]string{argumentIsASystem: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			f.sim.changed = fl.Changed
			f.visit = fl.Visit
			return a.runExplore(args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.sim.check, "check", "", "predicates script to check every run against (required)")
	fl.StringVar(&f.strategy, "strategy", "random", "search strategy: "+strings.Join(explore.Names(), ", "))
	fl.IntVar(&f.budget, "budget", 0, fmt.Sprintf("stop after this many runs (default %d unless --time is given)", defaultBudget))
	fl.DurationVar(&f.wall, "time", 0, "stop after this much wall-clock time, e.g. 5m")
	fl.IntVar(&f.depth, "depth", 0, "pct: bug depth (3); delay-*: largest delay bound (5); bfs, dfs: decisions per run (50)")
	fl.IntVar(&f.faults, "faults", 0, "crashes each run may inject, at decision points the strategy chooses")
	fl.BoolVar(&f.failStop, "fail-stop", false, "an injected crash is never followed by a restart")
	fl.BoolVar(&f.exhaustive, "exhaustive", false, "delay-*: stratified exhaustive search instead of stratified sampling")
	fl.IntVar(&f.samples, "samples", 0, fmt.Sprintf("delay-* sampling: runs with 0 delays per round; stratum db gets samples*2^db (default %d)", explore.DefaultSamples))
	fl.IntVar(&f.jobs, "jobs", 1, "runs executed at once (the result does not depend on it)")
	fl.IntVar(&f.warmup, "warmup", defaultForkWarmup, "with --from: "+warmupUsage)
	fl.BoolVar(&f.all, "all", false, "keep going after a violation; report each distinct one")
	fl.StringVar(&f.sim.failOn, "fail-on", "safety,alarm", "which findings make a run fail (as replay check's --fail-on): safety, alarm, any (screened liveness intervals too), none; comma-separated")
	fl.BoolVar(&f.sim.strictTables, "strict-tables", false, strictTablesUsage)
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as one JSON object")
	fl.StringVar(&f.sim.shard, "shard", "", "run shard I of N (I/N, I from 0): the runs numbered I, I+N, ... below --budget")
	fl.StringVar(&f.sim.results, "results", "", "write the exploration's result file here, for replay results merge (default with --shard: SYSTEM-BUG-explore-results-I-of-N.json)")
	fl.StringSliceVar(&f.from, "from", nil, "explore futures of a recorded run: these trace files (simulated or live), forked at --at")
	fl.IntVar(&f.at, "at", 0, "with --from: every run continues the recorded world after this step")
	fl.Uint64Var(&f.sim.seed, "seed", 1, "exploration seed: the same seed gives the same runs")
	f.sim.registerSettings(fl, "virtual-time")
	fl.StringVarP(&f.sim.output, "output", "o", "", "where to write the failing run's trace (default: SYSTEM-BUG-explore.lz4)")
	f.sim.budgets.register(fl)
	cmd.SetHelpTemplate(cmd.HelpTemplate() + a.systemsHelp())
	return cmd
}

func (a *App) runExplore(name string, f exploreFlags) error {
	f.sim.program = a.prog()
	sys, err := a.Registry.Lookup(name)
	if err != nil {
		return badInput("%v", err)
	}
	changed := f.sim.changed
	positive := func(flag string, v int) error {
		if changed(flag) && v < 1 {
			return badInput("--%s %d: want a positive number (omit --%s for the default)", flag, v, flag)
		}
		return nil
	}
	for _, c := range []struct {
		flag string
		v    int
	}{{"budget", f.budget}, {"depth", f.depth}, {"jobs", f.jobs}, {"samples", f.samples}} {
		if err := positive(c.flag, c.v); err != nil {
			return err
		}
	}
	if err := jobsBound(f.jobs); err != nil {
		return err
	}
	switch {
	case !slices.Contains(explore.Names(), f.strategy):
		return badInput("--strategy %q: unknown (known: %s)", f.strategy, strings.Join(explore.Names(), ", "))
	case f.faults < 0 || f.warmup < 0:
		return checkAtLeast(atLeast{"faults", f.faults, 0}, atLeast{"warmup", f.warmup, 0})
	case changed("warmup") && !changed("from") && f.warmup != 0:
		// 0 is what a fresh exploration does anyway: a script passing it
		// to every exploration is not refused.
		return badInput("--warmup goes with --from TRACE (runs of a fresh system share no recorded steps)")
	case changed("time") && f.wall <= 0:
		return badInput("--time %v: want a positive wall-clock duration such as 5m", f.wall)
	case changed("depth") && (f.strategy == "random"):
		return badInput("--depth goes with pct, the delaying explorers and bfs/dfs; random has no depth")
	case f.failStop && f.faults == 0:
		return badInput("--fail-stop goes with --faults N (the crashes the strategy injects)")
	case f.exhaustive && !strings.HasPrefix(f.strategy, "delay-"):
		return badInput("--exhaustive is a mode of the delaying explorers (delay-rr, delay-rtc, delay-prr), not of %s", f.strategy)
	case changed("samples") && (f.exhaustive || !strings.HasPrefix(f.strategy, "delay-")):
		return badInput("--samples goes with a delaying explorer's sampling (delay-rr, delay-rtc, delay-prr without --exhaustive)")
	case f.sim.check == "":
		return badInput("missing --check PREDS.star (the predicates every run is checked against)")
	case changed("output") && f.sim.output == "":
		return badInput("-o: empty file name (omit -o for %s-%s-explore.lz4)", sys.Name, f.sim.bug)
	}
	counts, err := failPolicy(f.sim.failOn)
	if err != nil {
		return badInput("%v", err)
	}
	script, err := a.scriptArg(f.sim.check)
	if err != nil {
		return badInput("--check: %v", err)
	}
	// Printed commands name the script as builtin:NAME when it is one,
	// which means the same from any directory.
	f.sim.check = script.Name
	var cfg sim.Config
	var start explore.Starter
	var from *replay.Trace // the recording forked (--from)
	earlier := &prefixViolations{at: f.at}
	if changed("from") || changed("at") {
		cfg, start, from, err = a.exploreFrom(sys, f)
		// Every run repeats the recorded steps: what they already
		// violate is no finding of the search (predict says the same).
		counts = earlier.notCounting(counts)
	} else {
		cfg, err = simConfig(sys, f.sim)
	}
	if err != nil {
		return err
	}
	maxSteps, memory, timeBudget, err := f.sim.budgets.parse()
	if err != nil {
		return err
	}
	strat, err := explore.New(f.strategy, cfg, explore.Params{Seed: f.sim.seed, Depth: f.depth, Faults: f.faults,
		FailStop: f.failStop, Exhaustive: f.exhaustive, Samples: f.samples})
	if err != nil {
		return badInput("%v", err)
	}
	budget := f.budget
	if !changed("budget") && !changed("time") {
		budget = defaultBudget
	}
	shard := shardSpec{Index: 0, Count: 1}
	if changed("shard") {
		if shard, err = parseShard(f.sim.shard); err != nil {
			return err
		}
		if why := explore.Shardable(strat); why != "" && shard.Count > 1 {
			return badInput("--shard: %s cannot be split by run number: %s; run it on one machine (or shard random, pct or delay-* sampling)", f.strategy, why)
		}
	}
	resultsPath := f.sim.results
	if resultsPath == "" && changed("shard") { // --shard 0/1 included
		resultsPath = fmt.Sprintf("%s-%s-explore-results-%d-of-%d.json", sys.Name, cfg.Bug, shard.Index, shard.Count)
	}
	out := f.sim.output
	if out == "" {
		out = fmt.Sprintf("%s-%s-explore.lz4", sys.Name, cfg.Bug)
		if shard.Count > 1 {
			// Shards sharing a directory do not overwrite each other.
			out = fmt.Sprintf("%s-%s-explore-%d-of-%d.lz4", sys.Name, cfg.Bug, shard.Index, shard.Count)
		}
	}
	for _, p := range f.from {
		if sameFile(p, out) {
			return badInput("-o %s is also an input (--from); write the findings to another file", out)
		}
	}
	// Findings after the first, and a divergence after findings, go to
	// OUT-2.lz4, OUT-3.lz4, ...
	if err := numberedOutputs(out, f.from); err != nil {
		return err
	}
	// A bad -o or --results is refused now, not after the search.
	for _, p := range []string{out, resultsPath} {
		if p == "" {
			continue
		}
		if err := checkWritable(p); err != nil {
			return err
		}
	}
	if resultsPath != "" {
		if err := notOverATrace(resultsPath, "the result file"); err != nil {
			return err
		}
	}
	if resultsPath != "" && sameFile(resultsPath, out) {
		return badInput("--results %s is also the trace output (-o)", resultsPath)
	}
	if resultsPath != "" && numberedAs(filepath.Base(resultsPath), filepath.Base(strings.TrimSuffix(out, ".lz4")+"-"), ".lz4", 2) &&
		sameFile(filepath.Dir(resultsPath), filepath.Dir(out)) {
		return badInput("--results %s is where -o %s numbers a later finding's trace; name the result file another way (NAME.json)", resultsPath, out)
	}
	if err := replacesOnlyATrace(out); err != nil {
		return err // now, not after the search found a failure
	}

	// Ctrl-C or SIGTERM (a preempted Kubernetes pod) ends the
	// exploration after the runs under way, with its summary and result
	// file.
	ctx, stop := interruptContext(syscall.SIGTERM)
	defer stop()
	prog := a.progress()
	a.sayStalls(&cfg, "explore")
	check := simtest.Options{Registry: a.Registry, HandlerBound: simBound(a.handlerBound), MaxSteps: maxSteps, MemoryBudget: memory, TimeBudget: timeBudget, Counts: counts}
	clock := startWall(ctx, f.wall)
	if from != nil {
		check.Prefix = a.sharedPrefix(from, f.at, f.warmup, script.Path, check, func(s string) { prog.update("%s", s) }, clock.over)
		defer check.Prefix.Close()
		earlier.checked = check.Prefix
	}
	sum, runErr := explore.Run(ctx, sys, cfg, strat, explore.Options{
		Script: script.Path,
		Check:  check,
		Budget: budget, Time: clock.left(), Jobs: f.jobs, All: f.all, Start: start,
		Shard: explore.Shard{Index: shard.Index, Count: shard.Count},
		Progress: func(p explore.Progress) {
			states := statesNote(p.States)
			prog.update("explore %s %s: %d runs, %s events%s, %.0f runs/s, deepest %d decisions",
				sys.Name, f.strategy, p.Runs, humanize.SIWithDigits(float64(p.Events), 1, ""), states,
				float64(p.Runs)/p.Elapsed.Seconds(), p.MaxDepth)
		},
	})
	prog.done()
	var evalErr *predicates.EvalError
	var scriptErr *predicates.ScriptError
	var divErr *explore.DivergenceError
	switch {
	case runErr != nil && errors.As(runErr, &divErr):
		// Not a protocol bug, and no later run can be trusted: the
		// exploration ends there, with what it found before.
	case sum == nil:
		return badInput("%v", runErr)
	case runErr != nil && errors.As(runErr, &scriptErr):
		return badInput("%v", runErr)
	case runErr != nil && errors.As(runErr, new(*replay.ReadBackError)):
		// The machine's failure, not a finding: exit 2, as check does.
		return badInput("%v", runErr)
	case runErr != nil && !errors.As(runErr, &evalErr):
		return withCode(ExitViolations, runErr)
	}
	// A trace that cannot be written (a full disk) does not take the
	// summary and the result file with it: each finding's reproduce
	// command re-creates its trace. The write's error ends the verb
	// (exit 2) after them.
	var written []foundFile
	var writeErr error
	for i, fd := range sum.Found {
		ff, err := writeFinding(fd, out, i)
		if err != nil {
			writeErr = cmp.Or(writeErr, err)
			ff.failed = failedWrite(err)
		}
		written = append(written, ff)
	}
	var diverged *divergedRun
	if divErr != nil {
		// Kept for replay verify, after the findings' files.
		diverged = &divergedRun{run: divErr.Run, err: oneLine(divErr.Err.Error()), trace: findingPath(out, len(written)), step: -1}
		if d := (*replay.Divergence)(nil); errors.As(divErr, &d) {
			diverged.step = d.Step
		}
		diverged.reproduce, _ = rerunCommand(sys, cfg, f, shard, divErr.Run)
		diverged.debug = f.sim.prog() + " verify " + shellword.Path(diverged.trace)
		if err := writeBytes(diverged.trace, divErr.Trace); err != nil {
			writeErr = cmp.Or(writeErr, err)
			diverged.failed = failedWrite(err)
		}
	}
	if f.asJSON {
		if err := a.exploreJSON(sys, cfg, f, sum, written, diverged, earlier); err != nil {
			return err
		}
	} else {
		a.exploreText(sys, cfg, f, sum, written, diverged, earlier)
	}
	if len(sum.Found) == 0 && diverged == nil && sum.Runs > 0 {
		// pct and delay-rtc found nothing on a new user's failure
		// detector, whose bug needs a slow reply: no strategy here makes
		// one (docs/exploration.md, Limits), and the summary said nothing.
		fmt.Fprintf(a.Stderr, "%s explore: note: explored runs deliver each message at the earliest moment its latency window allows, so a bug that needs a slow message (a timeout firing before a reply) is out of their reach, and every run draws the same workload from --seed (another --seed explores another); a seed hunt (sim --seeds FROM-TO --check) draws latencies and workload per seed\n", a.name())
	}
	code := 0
	switch {
	case diverged != nil:
		code = ExitDivergence
	case sum.Stopped == "canceled":
		// Not 0 (nor a finding's 1) whatever was found: the slice was not
		// finished, and a Kubernetes index that exited 0 would never run
		// again. As a seed hunt does.
		code = ExitInterrupted
	case evalErr != nil:
		code = ExitPredicateError
	case len(sum.Found) > 0:
		code = ExitViolations
	case f.sim.strictTables && len(sum.Unmatched.Tables()) > 0:
		code = ExitPredicateError
	}
	if resultsPath != "" {
		if err := a.exploreResults(resultsPath, sys, cfg, f, script, shard, budget, sum, written, diverged, code); err != nil {
			return err
		}
	}
	if writeErr != nil {
		return withCode(ExitBadInput, fmt.Errorf("%w (the summary above says what was found; each reproduce command re-creates its trace)", writeErr))
	}
	switch {
	case diverged != nil:
		return &exitError{ExitDivergence, fmt.Errorf("run %d: %s: a nondeterministic handler (its replay differs from its simulation); wrote the run to %s: %s verify %s explains it%s",
			diverged.run, diverged.err, diverged.trace, a.prog(), shellword.Path(diverged.trace), carriedState(a.prog()))}
	case code == ExitInterrupted:
		said := ""
		if resultsPath != "" {
			said = " (the result file says so)"
		}
		return &exitError{ExitInterrupted, fmt.Errorf("interrupted after %s: the rest of the budget was not explored%s", plural(sum.Runs, "run"), said)}
	case evalErr != nil:
		if !f.asJSON && len(sum.Found) > 0 && sum.Found[len(sum.Found)-1].Check != nil {
			sum.Found[len(sum.Found)-1].Check.Report.WriteErrors(a.Stderr)
		}
		return &exitError{ExitPredicateError, runErr}
	case len(sum.Found) > 0:
		return &exitError{ExitViolations, fmt.Errorf("run %d: %s", sum.Found[0].Run, sum.Found[0].Headline())}
	case code == ExitPredicateError:
		return strictTables(sum.Unmatched.Tables(), sum.Unmatched.In("run"))
	}
	return nil
}

// foundFile is where a finding was written and how to reproduce it.
type foundFile struct {
	trace, schedule string
	failed          string // why the trace could not be written ("": written)
	reproduce       string
	debug           string
	step            int
	at              int // where debug opens: step, or an alarm's own step
}

// divergedRun is the run whose replay differed from its simulation,
// which ends an exploration, and where its trace was written.
type divergedRun struct {
	run              int
	err              string // the divergence, on one line
	step             int    // where the replay diverged (-1: unknown)
	trace            string
	failed           string // why its trace could not be written ("": written)
	reproduce, debug string
}

// written is the path of a trace that was written, or "".
func written(path, failed string) string {
	if failed != "" {
		return ""
	}
	return path
}

// failedWrite is why a write failed, on one line ("" for no error).
func failedWrite(err error) string {
	if err == nil {
		return ""
	}
	return oneLine(withoutPath(err).Error())
}

// wrote says that a trace was written, or why it could not be.
func wrote(path, failed string) string {
	if failed != "" {
		return fmt.Sprintf("could not write %s: %s", path, failed)
	}
	return "wrote " + path
}

func (d *divergedRun) headline() string { return "replay diverged: " + d.err }

// divergenceKey is the result-file key of an exploration's run that
// diverged.
func divergenceKey(run int) string { return fmt.Sprintf("divergence of run %d", run) }

// findingPath is where the i-th trace an exploration writes goes:
// FOUND.lz4, then FOUND-2.lz4, ...
func findingPath(out string, i int) string {
	if i == 0 {
		return out
	}
	return fmt.Sprintf("%s-%d.lz4", strings.TrimSuffix(out, ".lz4"), i+1)
}

// writeFinding writes the i-th finding's trace (findingPath) and, after a
// panic, the schedule that reproduces it.
func writeFinding(fd *explore.Finding, out string, i int) (foundFile, error) {
	ff := foundFile{trace: findingPath(out, i)}
	var err error
	ff.schedule, err = writeTrace(ff.trace, fd.Trace, fd.Schedule)
	return ff, err
}

func writeAtomic(path string, write func(*atomicFile) error) error {
	file, err := createAtomic(path)
	if err != nil {
		return err
	}
	defer file.Abort()
	if err := write(file); err != nil {
		// The file's own error names the partial file, or path again.
		return fmt.Errorf("write %s: %w", path, withoutPath(err))
	}
	return file.Commit()
}

// commands fills in how to re-run a finding and where to debug it.
// fd is the i-th finding.
func (ff *foundFile) commands(sys *system.System, fd *explore.Finding, f exploreFlags, i int) {
	script := f.sim.check
	switch {
	case len(f.from) > 0:
		// A fork has no schedule of its own: the exploration itself,
		// stopped after this run, re-runs it (runs depend only on the
		// seed and their index); a shard stays, its runs being re-made.
		args := exploreArgs(sys, f, "budget", "time", "jobs", "all", "json", "output", "results")
		rerun := strings.TrimSuffix(ff.trace, ".lz4") + "-rerun.lz4"
		args = append(args, "--budget", strconv.Itoa(fd.Run+1), "-o", shellword.Path(rerun))
		if f.sim.shard != "" {
			args = append(args, "--results", shellword.Path(rerunResults(rerun)))
		}
		if f.all && i > 0 {
			// Without --all the rerun would stop at the first finding,
			// another run; with it, it writes the findings before this
			// one first.
			args = append(args, "--all", "#", "its trace is the last written:", shellword.Path(findingPath(rerun, i)))
		}
		ff.reproduce = strings.Join(args, " ")
		if fd.Violation != nil {
			ff.step = fd.Violation.Step
		}
	case fd.Schedule != nil:
		// The trace ends before the event that panicked (or stalled);
		// its schedule file holds that event too.
		rerun := strings.TrimSuffix(ff.trace, ".lz4") + "-rerun.lz4"
		ff.reproduce = strings.Join([]string{f.sim.prog(), "sim", shellword.Quote(sys.Name), "--schedule", shellword.Path(ff.schedule), "-o", shellword.Path(rerun)}, " ")
		ff.step = max(fd.Steps-1, 0)
	default:
		ff.reproduce = withProgram(f.sim.prog(), simtest.SimCommand(sys, fd.Config, ff.trace))
		switch {
		case fd.Violation != nil:
			// Where the predicate broke, as check and seed hunts
			// report it: for an alarm, where its interval began.
			ff.step = fd.Violation.Step
		case fd.Check != nil && len(fd.Check.Report.Errors) > 0:
			ff.step = fd.Check.Report.Errors[0].Step
		}
	}
	// The debugger opens an alarm where it was raised, as check's,
	// hunts' and shrink's commands do.
	ff.at = ff.step
	if v := fd.Violation; v != nil {
		ff.at = v.Decided()
	}
	ff.debug = fmt.Sprintf("%s debug %s --preds %s --at %d", f.sim.prog(), shellword.Path(ff.trace), shellword.Path(script), ff.at)
}

// prefixViolations collects the violations a fork exploration's runs
// decide at or before the fork step (--at): the recorded steps every run
// repeats already break those predicates, so they are no findings.
type prefixViolations struct {
	at    int
	mu    sync.Mutex // counts is called from every job
	first map[string]int
	// checked is the one check of the recorded steps the runs took over
	// from (nil: each was checked from #0).
	checked *parcheck.Prefix
}

// checkedLine says how many forks (what: "run", "future") were checked
// from a warm-up after p, the one check of the recording up to its step,
// and how many from #0 ("": p is nil, every fork was checked from #0).
func checkedLine(p *parcheck.Prefix, what string) string {
	if p == nil {
		return ""
	}
	checks, resumed := p.Stats()
	var line string
	switch {
	case p.Cannot() != "" && checks > 0:
		return fmt.Sprintf("Checked every %s from #0: none can take over from the check of the recording up to #%d (%s).", what, p.At(), p.Cannot())
	case resumed == 0 && checks > 0:
		line = fmt.Sprintf("Checked every %s from #0: none could take over from the check of the recording up to #%d", what, p.At())
	default:
		line = fmt.Sprintf("Checked %s from a warm-up of %d steps, after one check of the recording up to #%d; %d from #0",
			plural(resumed, what), p.Warmup(), p.At(), checks-resumed)
	}
	if why := p.Refusal(); why != "" {
		line += " (the first refused: " + why + ")"
	}
	return line + "."
}

// checkedCounts are checkedLine's numbers for --json (nil, nil: p is nil).
func checkedCounts(p *parcheck.Prefix) (resumed, fromStart *int) {
	if p == nil {
		return nil, nil
	}
	checks, n := p.Stats()
	rest := checks - n
	return &n, &rest
}

// notCounting wraps a --fail-on policy so that findings judged at or
// before the fork step do not count, and are remembered instead.
func (p *prefixViolations) notCounting(counts func(*predicates.Violation) bool) func(*predicates.Violation) bool {
	return func(v *predicates.Violation) bool {
		if !counts(v) {
			return false
		}
		d := v.JudgedAt()
		if d > p.at {
			return true
		}
		p.mu.Lock()
		if p.first == nil {
			p.first = map[string]int{}
		}
		if s, ok := p.first[v.Predicate]; !ok || d < s {
			p.first[v.Predicate] = d
		}
		p.mu.Unlock()
		return false
	}
}

// breaks are the predicates with the first step each broke at, in step
// order.
func (p *prefixViolations) breaks() []earlyBreak {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []earlyBreak{}
	for name, step := range p.first {
		out = append(out, earlyBreak{Predicate: name, Step: step})
	}
	slices.SortFunc(out, func(a, b earlyBreak) int {
		return cmp.Or(cmp.Compare(a.Step, b.Step), strings.Compare(a.Predicate, b.Predicate))
	})
	return out
}

// names are the predicates, sorted; with steps, as "P (#N)".
func (p *prefixViolations) names(steps bool) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []string{}
	for name, step := range p.first {
		if steps {
			name = fmt.Sprintf("%s (#%d)", name, step)
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func (a *App) exploreText(sys *system.System, cfg sim.Config, f exploreFlags, sum *explore.Summary, files []foundFile, diverged *divergedRun, earlier *prefixViolations) {
	w := a.Stdout
	fmt.Fprintf(w, "explore %s (bug %s) with %s\n", sys.Name, cfg.Bug, sum.Strategy)
	for i, fd := range sum.Found {
		ff := &files[i]
		ff.commands(sys, fd, f, i)
		fmt.Fprintf(w, "\nrun %d fails: %s\n", fd.Run, fd.Headline())
		writeFoundBy(w, "", fd.Runs)
		switch {
		case fd.Panic != nil:
			writeStack(w, fd.Panic.Stack)
			if ff.failed != "" {
				fmt.Fprintln(w, wrote(ff.trace, ff.failed))
				break
			}
			fmt.Fprintf(w, "wrote %s (the %d events before the panic) and %s (with the event that panicked)\n", ff.trace, fd.Steps, ff.schedule)
		case fd.Stall != nil:
			fmt.Fprintf(w, "  (%s; the exploration stops here: the stuck goroutine cannot be ended)\n", fd.Stall.Error())
			if ff.failed != "" {
				fmt.Fprintln(w, wrote(ff.trace, ff.failed))
				break
			}
			fmt.Fprintf(w, "wrote %s (the %d events before the stuck one) and %s (with the event whose handler did not return)\n", ff.trace, fd.Steps, ff.schedule)
		default:
			fmt.Fprintln(w)
			fd.Check.Report.WriteText(w, fd.Elapsed)
			fmt.Fprintln(w, wrote(ff.trace, ff.failed))
		}
		fmt.Fprintf(w, "chooser:   %s\nreproduce: %s\ndebug:     %s\n", fd.Chooser, ff.reproduce, ff.debug)
	}
	if d := diverged; d != nil {
		fmt.Fprintf(w, "\nrun %d diverged on replay: %s\n%s\nreproduce: %s\ndebug:     %s\n", d.run, d.err, wrote(d.trace, d.failed), d.reproduce, d.debug)
	}
	if names := earlier.names(true); len(names) > 0 {
		fmt.Fprintf(w, "\nalready violated in the recorded steps, at or before #%d, not findings: %s\n", f.at, strings.Join(names, ", "))
	}
	fmt.Fprintf(w, "\n%s%s, %d events in %v (%.1f runs/s)", plural(sum.Runs, "run"), failedNote(sum.FailedRuns), sum.Events, sum.Elapsed.Round(time.Millisecond), sum.RunsPerSecond())
	fmt.Fprint(w, statesNote(sum.States))
	fmt.Fprintf(w, "; deepest run: %s\n", plural(sum.MaxDepth, "decision"))
	fmt.Fprintf(w, "stopped: %s\n", stoppedText(f, sum, cfg.WithDefaults(sys)))
	if line := findingsByPredicate(sum.Found); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := checkedLine(earlier.checked, "run"); line != "" {
		fmt.Fprintln(w, line)
	}
	sum.Unmatched.WriteText(w, "run")
}

// findingsByPredicate counts --all's findings by predicate when one
// predicate was found at several witnesses ("" otherwise): a finding is
// a predicate and its witness, so a bug broken on per-key rows (Txs[6],
// Txs[9], ...) is listed once per key, and a new user read 13 findings
// of one bug as 13 bugs.
func findingsByPredicate(found []*explore.Finding) string {
	var order []string
	count := map[string]int{}
	many := false
	for _, fd := range found {
		what := "a handler's panic"
		switch {
		case fd.Violation != nil:
			what = fd.Violation.Predicate
		case fd.Stall != nil:
			what = "a handler that did not return"
		case fd.EvalErr != nil:
			what = "an evaluation error"
		}
		if count[what] == 0 {
			order = append(order, what)
		}
		count[what]++
		many = many || count[what] > 1
	}
	if !many {
		return ""
	}
	parts := make([]string, len(order))
	for i, what := range order {
		parts[i] = fmt.Sprintf("%s %d", what, count[what])
	}
	return fmt.Sprintf("findings by predicate: %s (one predicate at several witnesses is often one bug)", strings.Join(parts, ", "))
}

// stoppedText says why the exploration ended, in words; cfg is the runs'
// configuration with the system's defaults.
func stoppedText(f exploreFlags, sum *explore.Summary, cfg sim.Config) string {
	none := ""
	if len(sum.Found) == 0 {
		none = ", no violation"
		if f.sim.failOn != "safety,alarm" {
			none += " counted by --fail-on " + f.sim.failOn
		}
	}
	switch sum.Stopped {
	case "violation":
		return "at the first failing run (--all keeps going)"
	case "budget":
		if f.sim.shard != "" {
			// A shard runs its slice of the runs numbered below --budget.
			if f.budget > 0 {
				return fmt.Sprintf("this shard's %d of the --budget %d runs are done%s", sum.Runs, f.budget, none)
			}
			return fmt.Sprintf("this shard's %d runs of the budget are done%s", sum.Runs, none)
		}
		return fmt.Sprintf("the budget of %d runs ran out%s", sum.Runs, none)
	case "time":
		return fmt.Sprintf("the time budget (%v) ran out%s", f.wall, none)
	case "exhausted":
		// Exhausted is a result only within the bound: say how small it is.
		bound := ""
		if strings.HasPrefix(f.strategy, "bfs") || strings.HasPrefix(f.strategy, "dfs") {
			bound = fmt.Sprintf(": every order of the first %d decisions of a run, nothing deeper", sum.MaxDepth)
		}
		// Random faults are drawn, not searched: exhausting the orders
		// says nothing of the faults not drawn.
		var drawn []string
		if cfg.Churn > 0 {
			drawn = append(drawn, "--churn 0")
		}
		if cfg.Drop > 0 {
			drawn = append(drawn, "--drop 0")
		}
		if cfg.Dup > 0 {
			drawn = append(drawn, "--dup 0")
		}
		hint := ""
		if len(drawn) > 0 {
			hint = "; churn, loss and duplicates are drawn, not searched: use " + strings.Join(drawn, " ")
		}
		return "the strategy exhausted its bounded space" + bound + none + " (docs/exploration.md says what the bound covers" + hint + ")"
	case "canceled":
		return "interrupted" + none
	case "divergence":
		return "a run's replay diverged from its simulation (a nondeterministic handler): no later run can be trusted"
	}
	return sum.Stopped
}

func (a *App) exploreJSON(sys *system.System, cfg sim.Config, f exploreFlags, sum *explore.Summary, files []foundFile, diverged *divergedRun, earlier *prefixViolations) error {
	type found struct {
		Run       int    `json:"run"`
		Chooser   string `json:"chooser,omitempty"`
		Kind      string `json:"kind"` // violation, panic, predicate error, divergence
		Headline  string `json:"headline"`
		Predicate string `json:"predicate,omitempty"`
		Witness   string `json:"witness,omitempty"`
		// AlarmWitness as in result files (huntFailure).
		AlarmWitness string `json:"alarm_witness,omitempty"`
		Step         int    `json:"step"`
		// Runs: how many runs found it, this one the first (--all).
		Runs      int    `json:"runs"`
		Trace     string `json:"trace"`
		Schedule  string `json:"schedule,omitempty"`
		Reproduce string `json:"reproduce"`
		Debug     string `json:"debug"`
	}
	out := struct {
		System     string  `json:"system"`
		Bug        string  `json:"bug"`
		Strategy   string  `json:"strategy"`
		Runs       int     `json:"runs"`
		FailedRuns int     `json:"failed_runs"`
		Events     int64   `json:"events"`
		States     *int    `json:"distinct_states"`
		MaxDepth   int     `json:"max_depth"`
		Seconds    float64 `json:"seconds"`
		RunsPerSec float64 `json:"runs_per_second"`
		Stopped    string  `json:"stopped"`
		Exhausted  bool    `json:"exhausted"`
		Found      []found `json:"found"`
		// AlreadyViolated: predicates the recorded steps of a fork
		// exploration break (at or before --at): no findings.
		AlreadyViolated []string `json:"already_violated"`
		// AlreadyViolatedAt: each with the first step it broke at.
		AlreadyViolatedAt []earlyBreak `json:"already_violated_at"`
		// Runs of a fork exploration checked from a warm-up after one
		// check of the recorded steps, and from #0 (null: every one
		// from #0), as predict says.
		Resumed   *int `json:"checked_from_warmup,omitempty"`
		FromStart *int `json:"checked_from_start,omitempty"`
		// Tables that matched no object in any run (see check's).
		Unmatched []predicates.UnmatchedTable `json:"unmatched_tables,omitempty"`
	}{Unmatched: sum.Unmatched.Tables(), System: sys.Name, Bug: cfg.Bug, Strategy: sum.Strategy, Runs: sum.Runs, FailedRuns: sum.FailedRuns, Events: sum.Events, MaxDepth: sum.MaxDepth,
		Seconds: sum.Elapsed.Seconds(), RunsPerSec: sum.RunsPerSecond(), Stopped: sum.Stopped, Exhausted: sum.Stopped == "exhausted",
		Found: []found{}, AlreadyViolated: earlier.names(false), AlreadyViolatedAt: earlier.breaks()}
	if sum.States >= 0 {
		out.States = &sum.States
	}
	out.Resumed, out.FromStart = checkedCounts(earlier.checked)
	for i, fd := range sum.Found {
		ff := &files[i]
		ff.commands(sys, fd, f, i)
		j := found{Run: fd.Run, Runs: fd.Runs, Chooser: fd.Chooser, Headline: fd.Headline(), Step: ff.step, Trace: written(ff.trace, ff.failed),
			Schedule: ff.schedule, Reproduce: ff.reproduce, Debug: ff.debug, Kind: "violation"}
		switch {
		case fd.Panic != nil:
			j.Kind = "panic"
		case fd.Stall != nil:
			j.Kind = "stall"
		case fd.EvalErr != nil:
			j.Kind, j.Predicate = "predicate error", failedPredicate(fd.EvalErr)
		case fd.Violation != nil:
			j.Predicate, j.Witness, j.AlarmWitness = fd.Violation.Predicate, fd.Violation.Witness, alarmWitness(fd.Violation)
		}
		out.Found = append(out.Found, j)
	}
	if d := diverged; d != nil {
		out.Found = append(out.Found, found{Run: d.run, Runs: 1, Kind: "divergence", Headline: d.headline(), Step: d.step,
			Trace: written(d.trace, d.failed), Reproduce: d.reproduce, Debug: d.debug})
	}
	enc := json.NewEncoder(a.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// exploreFrom prepares runs that each continue a recorded world: the
// trace replayed to --at, then simulated under the strategy's chooser, as
// replay fork does. Each run needs its own world: a copy of the one
// rebuilt here, or, for nodes a copy cannot reproduce (state.Copyable),
// a fresh replay to --at.
func (a *App) exploreFrom(sys *system.System, f exploreFlags) (sim.Config, explore.Starter, *replay.Trace, error) {
	switch {
	case len(f.from) == 0:
		return sim.Config{}, nil, nil, badInput("--at goes with --from TRACE (the recorded run to explore futures of)")
	case !f.sim.changed("at"):
		return sim.Config{}, nil, nil, badInput("--from needs --at STEP (the step whose futures to explore)")
	case f.at < 0:
		return sim.Config{}, nil, nil, badInput("--at %d: want a step, 0 or more", f.at)
	}
	tr, err := a.loadTrace(f.from)
	if err != nil {
		return sim.Config{}, nil, nil, err
	}
	if tr.Header.System != sys.Name {
		return sim.Config{}, nil, nil, badInput("--from %s is a trace of %s, not %s", f.from[0], tr.Header.System, sys.Name)
	}
	if err := checkForkStep(tr, f.at, f.from); err != nil {
		return sim.Config{}, nil, nil, err
	}
	if f.sim.changed("bug") || f.sim.changed("param") || f.sim.changed("nodes") {
		return sim.Config{}, nil, nil, badInput("--bug, --param and --nodes come from the --from trace; they cannot change")
	}
	cfg, err := forkConfig(sys, tr, f.sim)
	if err != nil {
		return sim.Config{}, nil, nil, err
	}
	start, _, err := a.forkStarter(tr, f.at)
	if err != nil {
		return sim.Config{}, nil, nil, err
	}
	if note := timeCutNote(tr, f.at); note != "" {
		fmt.Fprintln(a.Stderr, a.name()+" explore: note: "+note)
	}
	if note := inputsNote(tr, f.at, "runs"); note != "" {
		fmt.Fprintln(a.Stderr, a.name()+" explore: note: "+note)
	}
	return cfg, start, tr, nil
}

// forkStarter is explore.ForkStarter with progress on a terminal and
// the exit codes of rebuildWorld.
func (a *App) forkStarter(tr *replay.Trace, at int) (explore.Starter, *world.World, error) {
	prog := a.progress()
	start, w, err := a.forkStarterWith(tr, at, func(s string) { prog.update("%s", s) })
	prog.done()
	return start, w, err
}

// forkStarterWith is forkStarter telling progress instead of the terminal
// (the debugger shows it in its status line).
func (a *App) forkStarterWith(tr *replay.Trace, at int, progress func(string)) (explore.Starter, *world.World, error) {
	start, w, err := explore.ForkStarter(tr, a.Registry, at, func(step int) { progress(fmt.Sprintf("rebuilding the world at #%d: step %d", at, step)) }, a.watch)
	if err != nil {
		return nil, nil, worldError(at, err)
	}
	return start, w, nil
}

// plural says "1 run", "2 runs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// exploreBase is the command of an exploration without the flags that
// do not change its runs (how long, how many at once, where the output
// goes, which shard): the flags given, in flag order, so shards started
// with one command agree on it.
func exploreBase(sys *system.System, f exploreFlags) string {
	return strings.Join(exploreArgs(sys, f, "budget", "time", "jobs", "warmup", "all", "json", "output", "results", "shard"), " ")
}

// exploreArgs is the exploration's command line as given, in flag order,
// without the flags named in skip, each value quoted for a POSIX shell.
func exploreArgs(sys *system.System, f exploreFlags, skip ...string) []string {
	args := []string{f.sim.prog(), "explore", shellword.Quote(sys.Name)}
	f.visit(func(fl *pflag.Flag) {
		// A profile of this command is no part of the hunt: its shards
		// would differ by it, and its reproduce commands overwrite it.
		if slices.Contains(skip, fl.Name) || fl.Name == "cpuprofile" || fl.Name == "starlark-profile" {
			return
		}
		vals := []string{fl.Value.String()}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			vals = sv.GetSlice()
		}
		for _, v := range vals {
			if fl.Value.Type() == "bool" {
				args = append(args, "--"+fl.Name)
			} else {
				args = append(args, "--"+fl.Name, shellword.Quote(v))
			}
		}
	})
	return args
}

// rerunCommand re-makes one run of the exploration: the exploration
// stopped after it (runs depend only on the seed, the shard and their
// number), writing to rerun.
func rerunCommand(sys *system.System, cfg sim.Config, f exploreFlags, shard shardSpec, run int) (cmd, rerun string) {
	rerun = fmt.Sprintf("%s-%s-run-%d.lz4", sys.Name, cfg.Bug, run)
	cmd = exploreBase(sys, f)
	if shard.Count > 1 {
		// Its own result file: by default a shard writes the hunt's,
		// which re-making one run would overwrite with a hunt of
		// another budget that no longer merges with the others.
		cmd += fmt.Sprintf(" --shard %d/%d --results %s", shard.Index, shard.Count, shellword.Path(rerunResults(rerun)))
	}
	cmd += " --budget " + strconv.Itoa(run+1)
	if f.all {
		cmd += " --all" // the run's finding is the last trace written
	}
	return cmd + " -o " + shellword.Path(rerun), rerun
}

// rerunResults is the result file of a command that re-makes one run of a
// shard (rerun is its trace), beside that trace.
func rerunResults(rerun string) string {
	return strings.TrimSuffix(rerun, ".lz4") + "-results.json"
}

// exploreResults writes a shard's result file. A finding's reproduce
// command is the shard's exploration stopped after the finding's run:
// runs depend only on the seed, the shard and their number, so it re-makes
// the run without the trace (which stays on the shard's machine).
func (a *App) exploreResults(path string, sys *system.System, cfg sim.Config, f exploreFlags, script scriptRef, shard shardSpec,
	budget int, sum *explore.Summary, files []foundFile, diverged *divergedRun, code int) error {
	digest, err := scriptDigest(script.Path)
	if err != nil {
		return err
	}
	base := exploreBase(sys, f)
	id := base
	if budget > 0 {
		id += " --budget " + strconv.Itoa(budget)
	}
	if f.all {
		id += " --all"
	}
	if f.sim.strictTables {
		id += " --strict-tables"
	}
	var from string
	if len(f.from) > 0 {
		if from, err = statedb.Fingerprint(f.from); err != nil {
			return badInput("--from: %v", err)
		}
	}
	rf := &resultFile{Hunt: huntID{Kind: "explore", System: sys.Name, Bug: cfg.Bug, Command: id, Script: script.Name, ScriptSHA256: digest, From: from},
		Shard: shard, Stopped: cmp.Or(map[string]string{"canceled": "interrupted"}[sum.Stopped], sum.Stopped), Runs: sum.Runs, FailedRuns: sum.FailedRuns, Steps: sum.Events, Exit: code,
		Complete: sum.Stopped == "budget" || sum.Stopped == "exhausted", Unmatched: sum.Unmatched.Tables()}
	for i, fd := range sum.Found {
		ff := files[i]
		ff.commands(sys, fd, f, i)
		run := fd.Run
		cmd, rerun := rerunCommand(sys, cfg, f, shard, run)
		hf := huntFailure{Run: &run, Runs: fd.Runs, Kind: "violation", Headline: fd.Headline(), Step: ff.step, Key: fd.Key(), Trace: written(ff.trace, ff.failed),
			// With --all the rerun writes the findings before this one first.
			Reproduce: cmd, Debug: fmt.Sprintf("%s debug %s --preds %s --at %d", f.sim.prog(), shellword.Path(findingPath(rerun, i)), shellword.Path(script.Name), ff.at)}
		switch {
		case fd.Panic != nil:
			hf.Kind = "panic"
		case fd.Stall != nil:
			hf.Kind = "stall"
		case fd.EvalErr != nil:
			hf.Kind, hf.Predicate = "predicate error", failedPredicate(fd.EvalErr)
		case fd.Violation != nil:
			hf.Predicate, hf.Witness, hf.AlarmWitness = fd.Violation.Predicate, fd.Violation.Witness, alarmWitness(fd.Violation)
			hf.AlarmStep = alarmStep(fd.Violation)
		}
		rf.Failures = append(rf.Failures, hf)
	}
	if d := diverged; d != nil {
		run := d.run
		_, rerun := rerunCommand(sys, cfg, f, shard, run)
		// The rerun writes the findings before it first, as this one did.
		rf.Failures = append(rf.Failures, huntFailure{Run: &run, Runs: 1, Kind: "divergence", Headline: d.headline(), Step: d.step,
			Key: divergenceKey(run), Trace: written(d.trace, d.failed), Reproduce: d.reproduce,
			Debug: f.sim.prog() + " verify " + shellword.Path(findingPath(rerun, len(sum.Found)))})
	}
	if err := writeResults(path, rf); err != nil {
		return err
	}
	if !f.asJSON {
		fmt.Fprintf(a.Stdout, "results: %s\n", path)
	}
	return nil
}

// failedPredicate names the first predicate an evaluation error is of
// ("" when it is no *predicates.EvalError).
func failedPredicate(err error) string {
	if e, ok := errors.AsType[*predicates.EvalError](err); ok && len(e.Failures) > 0 {
		return e.Failures[0].Name
	}
	return ""
}

// statesNote is ", N distinct states", or nothing for a strategy that
// counts no states (random: -1), which a 0 would misreport.
func statesNote(n int) string {
	if n < 0 {
		return ""
	}
	return fmt.Sprintf(", %d distinct states", n)
}
