package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/replaycheck/replaycheck/internal/shellword"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/internal/regular"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/shrink"
	"github.com/replaycheck/replaycheck/simtest"
)

type shrinkFlags struct {
	predicate string
	wall      time.Duration
	asJSON    bool
	output    string
	budgets   scriptBudgetFlags
	noLoss    bool
}

// defaultShrinkTime bounds a shrink given no --time: long enough for
// every bundled bug to reach its fixpoint or close to it (docs/shrinking.md).
const defaultShrinkTime = time.Minute

// storyLines is how many events of the shrunk run are printed; a longer
// run shows its first and last events.
const storyLines = 40

func (a *App) shrinkCmd() *cobra.Command {
	var f shrinkFlags
	cmd := &cobra.Command{
		Use:   "shrink TRACE PREDS.star [--predicate NAME] [--time DURATION] [--json] -o SMALL.lz4",
		Short: "Shrink a failing simulated run or fork to a small one that breaks the same predicate",
		Long: `Find a smaller simulated run that violates the same predicate as TRACE (by
default the first violation check finds in it; --predicate names another),
by delta debugging over TRACE's schedule, in rounds: fewer nodes where the
system accepts another node count, then the inputs, crashes and restarts
the violation does not need, then the injected crashes earlier and every
delivery as early as its latency allows, then the message deliveries it
does not need (a delivery left out is a loss), then fewer nodes again.
Every accepted run is cut after its violation. Each candidate runs in the simulator and
counts only if replay check of it finds the same predicate failing.

SMALL.lz4 is an ordinary simulated trace (check, debug, events, verify read
it); its header names TRACE (shrunk_from) and the predicate (shrunk_for).
When its schedule re-runs it (no scenario input or crash was left out), it
is written next to it as SMALL.schedule for replay sim --schedule. The
same TRACE and script give the same SMALL.lz4, byte for byte, unless --time
(default ` + defaultShrinkTime.String() + `) or Ctrl-C stops the shrink first: both keep
the smallest run found so far and write it.

TRACE is a simulated run (replay sim, replay explore) or a fork (replay
fork, and the traces of explore --from, predict and critical). Of a fork
only the continuation is shrunk: its steps #0..#fork_at are the
recording's, replayed, and stay as they are; each candidate continues
the world at the fork step, rebuilt once from those steps. The nodes stay
(the world fixes them), and SMALL.lz4 is again a fork, with no schedule
file. A live recording is not shrunk directly: fork it first (replay fork
LIVE... --at STEP -o f.lz4, or replay explore --from) and shrink the fork.

Exit codes: 0 the shrunk trace was written, 2 bad input (a trace that is
neither a simulated run nor a fork, does not violate the predicate, or
violates it within a fork's recorded steps; an unknown predicate, a broken
script), 3 TRACE does not replay (divergence), 4 a predicate could not be
evaluated on TRACE.`,
		Example: `  replay sim paxos --bug no-persist --seeds 1-20 --check scripts/paxos.star -o found.lz4
  replay shrink found.lz4 scripts/paxos.star -o small.lz4
  replay shrink found.lz4 scripts/paxos.star --predicate GlobalConsistency --time 30s --json -o small.lz4
  replay sim paxos --bug spec --seed 8 -o spec.lz4
  replay predict spec.lz4 scripts/paxos.star --at 1038 --budget 100
  replay shrink spec-predict-1.lz4 scripts/paxos.star -o spec-small.lz4`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return badInput("want TRACE PREDS.star, got %d argument(s) (see %s --help)", len(args), cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("time") && f.wall <= 0 {
				return badInput("--time %v: want a positive wall-clock duration such as 30s", f.wall)
			}
			return a.runShrink(args[0], args[1], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.predicate, "predicate", "", "the predicate that must keep failing (default: the trace's first violation)")
	fl.DurationVar(&f.wall, "time", defaultShrinkTime, "stop after this much wall-clock time and keep the smallest run so far")
	fl.BoolVar(&f.asJSON, "json", false, "print a summary as one JSON object")
	fl.StringVarP(&f.output, "output", "o", "", "where to write the shrunk trace (default: TRACE-small.lz4)")
	fl.BoolVar(&f.noLoss, "no-loss", false, "lose no message: keep every delivery (as for a liveness predicate), for a predicate that holds only on a network that loses nothing")
	f.budgets.register(fl)
	return cmd
}

func (a *App) runShrink(path, arg string, f shrinkFlags) error {
	ref, err := a.scriptArg(arg)
	if err != nil {
		return err
	}
	maxSteps, memory, timeBudget, err := f.budgets.parse()
	if err != nil {
		return err
	}
	out := f.output
	if out == "" {
		out = strings.TrimSuffix(path, ".lz4") + "-small.lz4"
	}
	in, err := regular.Open(path)
	if err != nil {
		return badInput("%v", err)
	}
	data, err := io.ReadAll(in)
	in.Close()
	if err != nil {
		return badInput("%v", err)
	}
	hdr, err := record.Read(bytes.NewReader(data), path, int64(len(data)))
	if err != nil {
		return badInput("%v", err)
	}
	sys, err := a.Registry.LookupRecorded(hdr.Header.System)
	if err != nil {
		return badInput("%s: %v", path, err)
	}
	if hdr.Damage != nil && hdr.Header.Driver == "sim" && len(hdr.Events) > 0 {
		// The events recovered are a prefix of the run: re-run into a
		// whole trace, they shrink as any run does.
		sched, whole := strings.TrimSuffix(path, ".lz4")+".schedule", strings.TrimSuffix(path, ".lz4")+"-recovered.lz4"
		return badInput("%v; shrink needs an undamaged trace: to shrink the %d events recovered, re-run them into one with %s schedule %s -o %s, then %s sim %s --schedule %s -o %s",
			hdr.Damage, len(hdr.Events), a.prog(), shellword.Path(path), shellword.Path(sched), a.prog(), shellword.Quote(sys.Name), shellword.Path(sched), shellword.Path(whole))
	}
	if len(hdr.Events) == 0 {
		// Said here, of this file: the shrink would find it in its
		// re-run, under the run's own name.
		return badInput("%s: no events recorded: nothing to shrink", path)
	}
	// A bad -o is refused now, not after the shrink.
	if err := checkWritable(out); err != nil {
		return err
	}
	if err := refuseInput(out, []string{path}, "the shrunk trace"); err != nil {
		return err
	}
	if sched := schedulePath(out); hdr.Header.Driver == "sim" {
		// A simulated run's shrunk trace comes with its schedule.
		if sameFile(sched, path) {
			return badInput("-o %s would write its schedule %s over the input; write the shrunk trace to another file", out, sched)
		}
		if err := replacesOnlyASchedule(sched); err != nil {
			return err
		}
	}

	// Ctrl-C ends the shrink after the candidate under way; the smallest
	// run so far is written.
	ctx, stop := interruptContext(syscall.SIGTERM)
	defer stop()
	prog := a.progress()
	res, err := shrink.Shrink(ctx, sys, data, shrink.Options{
		Script: ref.Path, Predicate: f.predicate, Time: f.wall, From: path, HandlerBound: simBound(a.handlerBound), NoLoss: f.noLoss,
		Check: simtest.Options{Registry: a.Registry, HandlerBound: simBound(a.handlerBound), MaxSteps: maxSteps, MemoryBudget: memory, TimeBudget: timeBudget},
		Progress: func(p shrink.Progress) {
			prog.update("shrink %s: %s; %d candidates, %d events now (%d at start), %v",
				path, p.Phase, p.Candidates, p.Events, p.Start, p.Elapsed.Round(time.Second))
		},
	})
	prog.done()
	if err != nil {
		return shrinkExit(err)
	}
	files, err := writeShrunk(res, out)
	if err != nil {
		return err
	}
	if b, n := res.Before.Dropped, res.After.Dropped; n > b && !f.noLoss && res.Violation.Kind == "safety" {
		// A new user's failure detector: the shrunk run broke its
		// accuracy by losing messages, which the correct build fails too.
		fmt.Fprintf(a.Stderr, "%s shrink: note: the network of the shrunk run dropped %s, that of %s %d; if %s holds only on a network that loses nothing, shrink with --no-loss\n",
			a.name(), plural(n, "message"), path, b, res.Predicate)
	}
	if f.asJSON {
		return a.shrinkJSON(res, path, ref.Name, files)
	}
	return a.shrinkText(res, path, ref.Name, files)
}

// shrinkExit maps a shrink that could not start to its exit code.
func shrinkExit(err error) error {
	var in *shrink.InputError
	var d *replay.Divergence
	var evalErr *predicates.EvalError
	var scriptErr *predicates.ScriptError
	switch {
	case errors.As(err, &in), errors.As(err, &scriptErr):
		return badInput("%v", err)
	case errors.As(err, &d):
		return withCode(ExitDivergence, fmt.Errorf("the trace does not replay, so it cannot be shrunk: %s", oneLine(d.Error())))
	case errors.As(err, &evalErr):
		return withCode(ExitPredicateError, fmt.Errorf("%w: the trace was not fully checked, so it cannot be shrunk", err))
	}
	return withCode(ExitViolations, err)
}

// shrunkFiles are what a shrink wrote and the commands that use them.
type shrunkFiles struct {
	trace, schedule     string
	check, debug, rerun string
}

func writeShrunk(res *shrink.Result, out string) (shrunkFiles, error) {
	sf := shrunkFiles{trace: out}
	var err error
	sf.schedule, err = writeTrace(out, res.Trace, res.Schedule)
	return sf, err
}

func (sf *shrunkFiles) commands(prog string, res *shrink.Result, script, system string) {
	sf.check = fmt.Sprintf("%s check %s %s", prog, shellword.Path(sf.trace), shellword.Path(script))
	sf.debug = fmt.Sprintf("%s debug %s --preds %s --at %d", prog, shellword.Path(sf.trace), shellword.Path(script), res.Violation.Decided())
	if sf.schedule != "" {
		rerun := strings.TrimSuffix(sf.trace, ".lz4") + "-rerun.lz4"
		sf.rerun = fmt.Sprintf("%s sim %s --schedule %s -o %s", prog, shellword.Quote(system), shellword.Path(sf.schedule), shellword.Path(rerun))
	}
}

func (a *App) shrinkText(res *shrink.Result, path, script string, sf shrunkFiles) error {
	tr, err := replay.FromBytes(res.Trace, sf.trace)
	if err != nil {
		return err
	}
	sf.commands(a.prog(), res, script, tr.Header.System)
	w := a.Stdout
	b, n := res.Before, res.After
	fmt.Fprintf(w, "shrunk %s: %d events -> %d", path, b.Events, n.Events)
	if b.Prefix > 0 {
		fmt.Fprintf(w, " (a fork: steps #0..#%d kept as recorded, its continuation %d -> %d)", b.Prefix-1, b.Events-b.Prefix, n.Events-n.Prefix)
	}
	fmt.Fprintf(w, ", %d nodes -> %d, %d faults -> %d (crashes %d -> %d, messages lost %d -> %d)\n",
		b.Nodes, n.Nodes, b.Faults, n.Faults, b.Crashes, n.Crashes, b.Lost, n.Lost)
	if res.CutOnly {
		fmt.Fprintf(w, "only cut after its violation: no phase found a smaller run before it\n")
	}
	fmt.Fprintf(w, "%s still fails: %s\n\n", res.Predicate, res.Violation.Headline())
	r := newRenderer(a, tr)
	last := min(res.Violation.Decided(), tr.Len()-1)
	// A fork's story is its continuation: the recorded steps before it
	// are the same as in TRACE, and are one command away.
	first := n.Prefix
	if first > 0 {
		fmt.Fprintf(w, "  #0..#%d: the recording's steps, as in %s (%s events %s --limit %d)\n",
			first-1, path, a.prog(), shellword.Path(sf.trace), first)
	}
	for step := first; step <= last; step++ {
		if last+1-first > storyLines && step == first+storyLines/4 {
			skip := last + 1 - first - storyLines
			fmt.Fprintf(w, "  ... %d steps (%s events %s --from %d --limit %d)\n", skip, a.prog(), shellword.Path(sf.trace), step, skip)
			step += skip - 1
			continue
		}
		fmt.Fprintln(w, r.StepLine(step))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "wrote %s", sf.trace)
	if sf.schedule != "" {
		fmt.Fprintf(w, " and %s", sf.schedule)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "check:     %s\ndebug:     %s\n", sf.check, sf.debug)
	if sf.rerun != "" {
		fmt.Fprintf(w, "reproduce: %s\n", sf.rerun)
	} else {
		fmt.Fprintf(w, "reproduce: the trace itself (no schedule file: %s)\n", res.NoSchedule)
		// A new user checked a fix against it and met a divergence.
		fmt.Fprintf(w, "           it replays the code that made it: to try a fix, simulate the original run again (its seed or schedule)\n")
	}
	fmt.Fprintf(w, "\n%d candidates (%d failed the same way) in %v; stopped: %s\n",
		res.Candidates, res.Accepted, res.Elapsed.Round(time.Millisecond), shrinkStopped(res.Stopped))
	unevaluatedNote(a, res)
	return nil
}

// unevaluatedNote says on stderr that some candidates could not be
// judged: the shrunk run is real, but perhaps not as small as it could be.
func unevaluatedNote(a *App, res *shrink.Result) {
	if res.Unevaluated > 0 {
		fmt.Fprintf(a.Stderr, "%s shrink: note: on %d candidate(s) a predicate could not be evaluated; they counted as not failing the same way, so a smaller run may exist\n", a.name(), res.Unevaluated)
	}
}

func shrinkStopped(s string) string {
	switch s {
	case shrink.StoppedDone:
		return "no phase found a smaller run"
	case shrink.StoppedTime:
		return "the time budget ran out (--time); the smallest run so far was written"
	case shrink.StoppedCanceled:
		return "interrupted; the smallest run so far was written"
	}
	return s
}

func (a *App) shrinkJSON(res *shrink.Result, path, script string, sf shrunkFiles) error {
	tr, err := replay.FromBytes(res.Trace, sf.trace)
	if err != nil {
		return err
	}
	sf.commands(a.prog(), res, script, tr.Header.System)
	out := struct {
		From        string      `json:"from"`
		Trace       string      `json:"trace"`
		Schedule    string      `json:"schedule,omitempty"`
		NoSchedule  string      `json:"no_schedule,omitempty"`
		Predicate   string      `json:"predicate"`
		Headline    string      `json:"headline"`
		Step        int         `json:"step"`
		Before      shrink.Size `json:"before"`
		After       shrink.Size `json:"after"`
		Candidates  int         `json:"candidates"`
		Accepted    int         `json:"accepted"`
		CutOnly     bool        `json:"cut_only,omitempty"`
		Unevaluated int         `json:"unevaluated_candidates"`
		Seconds     float64     `json:"seconds"`
		Stopped     string      `json:"stopped"`
		Check       string      `json:"check"`
		Debug       string      `json:"debug"`
		Reproduce   string      `json:"reproduce,omitempty"`
	}{From: path, Trace: sf.trace, Schedule: sf.schedule, NoSchedule: res.NoSchedule, Predicate: res.Predicate,
		Headline: res.Violation.Headline(), Step: res.Violation.Decided(), Before: res.Before, After: res.After,
		Candidates: res.Candidates, Accepted: res.Accepted, CutOnly: res.CutOnly, Unevaluated: res.Unevaluated, Seconds: res.Elapsed.Seconds(), Stopped: res.Stopped,
		Check: sf.check, Debug: sf.debug, Reproduce: sf.rerun}
	unevaluatedNote(a, res)
	enc := json.NewEncoder(a.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
