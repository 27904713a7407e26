package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/replaycheck/replaycheck/internal/shellword"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/critical"
	"github.com/replaycheck/replaycheck/explore"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/system"
	"github.com/replaycheck/replaycheck/world"
)

type criticalFlags struct {
	predicate string
	alarm     int // a step of the interval to search (-1: the default)
	walks     int
	walkSteps int
	walkTime  time.Duration
	stable    time.Duration
	faults    bool
	keepDown  bool // walks leave down nodes down (fail-stop)
	jobs      int
	warmup    int
	seed      uint64
	asJSON    bool
	output    string
	timeLimit time.Duration
	budgets   scriptBudgetFlags
	changed   func(string) bool
}

// Defaults of a critical-transition search.
const (
	defaultWalks     = 8
	defaultWalkSteps = 3000
	defaultStable    = time.Second
)

func (a *App) criticalCmd() *cobra.Command {
	var f criticalFlags
	cmd := &cobra.Command{
		Use:   "critical TRACE... PREDS.star --predicate NAME [--alarm STEP] [--walks K] [--walk-steps N] [--jobs N] [-o RECOVERING.lz4]",
		Short: "Find the step after which a liveness violation could no longer be avoided (the critical transition)",
		Long: `A liveness alarm says that the system has been stuck for a while, not when
it became doomed. critical finds that moment: the critical transition of
MaceMC. From the world rebuilt at a probed step (as replay fork rebuilds it),
K random walks let the system run on for up to N events each. A walk
recovers if the predicate holds where the walk ends and has held for the
last --stable of virtual time. A walk that goes quiet (no events left) is
judged --stable of virtual time later too, so a predicate on how long
something has waited breaks as it would have had time gone on. A
step is live if some walk recovers, dead if none does. critical probes the
last step (dead, or the run is not doomed where it ends), then the first,
then binary-searches for the earliest dead step after a live one: the event
at that step is where the run became doomed, and usually where the root
cause is.

The violation searched is the predicate's interval open at the end of the
trace (known at its alarm, or at the end if it raised none), else its first
alarm. When it has several, --alarm STEP searches the
one whose interval holds STEP (its alarm's step, or any step from its first
to its last, as replay check and the debugger's Violations panel show it).

Walks inject no new faults: nodes down at the probed step restart at once
(--keep-down leaves them down: a fail-stop system, whose crashed node is
never revived and whose liveness property is about noticing that), churn,
loss and duplication are off (--keep-faults keeps the trace's settings).
Walks receive no external inputs (the scenario is not run again).

The answer is probabilistic: "dead" means none of the K walks recovered,
not that none can, and the search assumes that a dead run stays dead. More
walks make a dead step likelier to be truly dead; the rate at the last live
step says how narrow the way out was.

The output names the critical step with its event, the last live step with
its recovery rate, every probe (with a sparkline of the rates), the commands
to debug the critical step and to compare with a recovering walk from the
last live step, which is written to -o (default TRACE-recovering.lz4).

Exit codes: 0 the search finished (a critical step, or walks from the end
recover), 1 interrupted (Ctrl-C) or stopped by --time before the search
finished (the bounds it found are printed), 2 bad input (no such predicate, a safety predicate, a predicate
that holds at the end with no alarm, an --alarm step in none of its alarms' intervals), 3 the trace diverges on replay,
4 a predicate could not be evaluated.`,
		Example: `  replay sim chord --bug finger-boundary --seed 1 -o fb.lz4
  replay critical fb.lz4 chord.star --predicate FingersCorrect
  replay critical fb.lz4 chord.star --predicate FingersCorrect --alarm 1818
  replay sim replicastore --bug balance-race --seed 1 -o br.lz4
  replay critical br.lz4 replicastore.star --predicate ReplicaDegree --walks 16 --jobs 2 --json`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.changed = cmd.Flags().Changed
			return a.runCritical(args, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.predicate, "predicate", "", "the liveness predicate whose violation to trace back (required)")
	fl.IntVar(&f.alarm, "alarm", -1, "the predicate's alarm to trace back: a step of its interval, e.g. the alarm's (-1: the interval open at the end, else the first alarm)")
	fl.IntVar(&f.walks, "walks", defaultWalks, "random walks per probed step")
	fl.DurationVar(&f.timeLimit, "time", 0, "stop after this much wall-clock time, e.g. 10m, and report the bounds found so far (default: no limit)")
	fl.IntVar(&f.walkSteps, "walk-steps", defaultWalkSteps, "events per walk at most")
	fl.DurationVar(&f.walkTime, "walk-time", 0, "virtual time per walk at most (default: the system's run time)")
	fl.DurationVar(&f.stable, "stable", defaultStable, "a walk recovers if the predicate holds for this much virtual time at its end")
	fl.BoolVar(&f.faults, "keep-faults", false, "walks keep the trace's churn, loss and duplication instead of settling")
	fl.BoolVar(&f.keepDown, "keep-down", false, "walks leave nodes down that are down where they start (fail-stop) instead of restarting them")
	fl.IntVar(&f.jobs, "jobs", 1, "walks run at once (the result does not depend on it)")
	fl.IntVar(&f.warmup, "warmup", defaultForkWarmup, warmupUsage)
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the walks: the same seed, the same search")
	fl.BoolVar(&f.asJSON, "json", false, "print the result as one JSON object")
	fl.StringVarP(&f.output, "output", "o", "", "where to write a recovering walk from the last live step (default: TRACE-recovering.lz4)")
	f.budgets.register(fl)
	return cmd
}

// target is a liveness predicate and what the original run says of it.
type target struct {
	name string
	open *predicates.Violation // the interval open at the end, if any (and chosen)
	// alarm is the searched interval's alarm: the one open at the end's,
	// else the first alarm, else (with --alarm) the chosen interval's.
	alarm *predicates.Violation
	// chosen: --alarm picked the interval (open, alarm: that interval's).
	chosen bool
	// alarms are the predicate's intervals that a search can trace back
	// (raised, or open at the end), in step order.
	alarms   []*predicates.Violation
	baseline time.Duration // one replay and check of the trace
}

// searched is the interval the search traces back: the one open at the
// end, else the alarm's.
func (t *target) searched() *predicates.Violation {
	if t.open != nil {
		return t.open
	}
	return t.alarm
}

// intervalText is a liveness interval as the Violations panel shows it:
// "#S..#E", or "#S..end" when it is open at the end.
func intervalText(v *predicates.Violation) string {
	if v.EndStep < 0 {
		return fmt.Sprintf("#%d..end", v.Step)
	}
	return fmt.Sprintf("#%d..#%d", v.Step, v.EndStep)
}

// holds says whether a liveness interval holds step: from its first step
// to the one where the predicate held again, both as shown.
func holds(v *predicates.Violation, step int) bool {
	return v.Step <= step && (v.EndStep < 0 || step <= v.EndStep)
}

// othersNote says, when the predicate has several alarms and --alarm did
// not pick one, which the search traces back and how to pick another.
func (t *target) othersNote() string {
	if t.chosen || len(t.alarms) < 2 {
		return ""
	}
	var all []string
	for _, v := range t.alarms {
		all = append(all, intervalText(v))
	}
	which := "the first alarm's"
	if t.open != nil {
		which = "the one open at the end"
	}
	return fmt.Sprintf("%s has %d alarms (%s): this searches %s, %s; --alarm STEP searches the one holding STEP",
		t.name, len(t.alarms), strings.Join(all, ", "), which, intervalText(t.searched()))
}

// lastStep is the last step the search probes: the trace's last, or,
// when the predicate holds at the end and its alarm's interval closed
// before (a stuck request that went away with its client's crash), the
// interval's last step. Probing the end of such a run only said that it
// was not doomed there.
func (t *target) lastStep(tr *replay.Trace) int {
	if t.open == nil && t.alarm != nil && t.alarm.EndStep > 0 {
		return t.alarm.EndStep - 1
	}
	return tr.Len() - 1
}

// checkTarget checks the original trace and finds predicate in it: it
// must be a liveness predicate that is false at the end or has an alarm.
// With alarm >= 0 it is the interval that holds that step instead, which
// must be raised or open at the end.
func (a *App) checkTarget(tr *replay.Trace, script, predicate string, alarm int, budgets scriptBudgetFlags, verb string, progress func(string)) (*target, error) {
	maxSteps, memory, timeBudget, err := budgets.parse()
	if err != nil {
		return nil, err
	}
	r, err := replay.New(tr, a.Registry, replay.Options{Watch: a.watch})
	if err != nil {
		return nil, badInput("%v", err)
	}
	c, err := predicates.Load(script, r, predicates.Options{To: -1, MaxSteps: maxSteps, MemoryBudget: memory, TimeBudget: timeBudget})
	if err != nil {
		return nil, badInput("%v", err)
	}
	var known []string
	var kind string
	for _, p := range c.Predicates() {
		known = append(known, p.Name)
		if p.Name == predicate {
			kind = p.Kind
		}
	}
	switch {
	case kind == "":
		return nil, badInput("--predicate %q: %s has no such predicate (it has: %s)", predicate, script, strings.Join(known, ", "))
	case kind != "liveness":
		return nil, badInput("--predicate %s is a %s predicate: %s traces back liveness violations (%[4]s shrink or %[4]s debug for a safety violation)", predicate, kind, verb, a.prog())
	}
	start := time.Now()
	rep, err := c.Run(predicates.RunOptions{Progress: func(step, total int) {
		progress(fmt.Sprintf("checking the trace: step %d of %d", step, total))
	}})
	var d *replay.Divergence
	switch {
	case errors.As(err, &d):
		return nil, &exitError{ExitDivergence, fmt.Errorf("the trace diverges on replay: %s (%s verify shows the details)", oneLine(d.Error()), a.prog())}
	case err != nil:
		return nil, withCode(ExitBadInput, err)
	case len(rep.Errors) > 0:
		rep.WriteErrors(a.Stderr)
		return nil, &exitError{ExitPredicateError, fmt.Errorf("%d evaluation error(s) (above) checking the trace", len(rep.Errors))}
	}
	t := &target{name: predicate, baseline: time.Since(start)}
	var at *predicates.Violation // the interval holding alarm
	for _, v := range rep.Violations {
		if v.Predicate != predicate {
			continue
		}
		if v.EndStep < 0 {
			t.open = v
		}
		if v.Alarm && (t.alarm == nil || v.AlarmStep < t.alarm.AlarmStep) {
			t.alarm = v
		}
		if v.Alarm || v.EndStep < 0 {
			t.alarms = append(t.alarms, v)
		}
		if alarm >= 0 && holds(v, alarm) {
			at = v
		}
	}
	slices.SortFunc(t.alarms, func(x, y *predicates.Violation) int { return x.Step - y.Step })
	if t.open == nil && t.alarm == nil {
		return nil, badInput("%s holds at the end of %s and never raised an alarm: there is no violation to trace back", predicate, tr.Files[0].Path)
	}
	if alarm < 0 {
		// The search traces back the interval open at the end: its own
		// alarm (or none yet) is where the violation is known, not the
		// first alarm of an interval that closed before it.
		if t.open != nil {
			t.alarm = nil
			if t.open.Alarm {
				t.alarm = t.open
			}
		}
		return t, nil
	}
	if at == nil || !at.Alarm && at.EndStep >= 0 {
		var all []string
		for _, v := range t.alarms {
			all = append(all, intervalText(v))
		}
		why := fmt.Sprintf("%s holds at #%d", predicate, alarm)
		if at != nil {
			why = fmt.Sprintf("%s's interval %s that holds #%d raised no alarm (screened)", predicate, intervalText(at), alarm)
		}
		return nil, badInput("--alarm %d: %s; its alarms: %s (give a step of one)", alarm, why, strings.Join(all, ", "))
	}
	t.chosen, t.open, t.alarm = true, nil, nil
	if at.EndStep < 0 {
		t.open = at
	}
	if at.Alarm {
		t.alarm = at
	}
	return t, nil
}

// walkConfig is the continuation of every walk: the trace's build and
// network, settled unless --keep-faults (no churn, loss or duplication).
func walkConfig(sys *system.System, tr *replay.Trace, f criticalFlags) (sim.Config, error) {
	sf := simFlags{steps: f.walkSteps, time: f.walkTime}
	given := map[string]bool{"steps": true, "time": f.walkTime > 0}
	if !f.faults {
		given["churn"], given["drop"], given["dup"] = true, true, true
	}
	sf.changed = func(name string) bool { return given[name] }
	return forkConfig(sys, tr, sf)
}

// walkSeed names the walks of one probe: the same search seed, the same
// walks from the same step, whatever was probed before.
func walkSeed(seed uint64, step int) uint64 {
	return seed*0x9e3779b97f4a7c15 + uint64(step) + 1
}

func (a *App) runCritical(args []string, f criticalFlags) error {
	paths, arg, err := splitScript(args)
	if err != nil {
		return err
	}
	switch {
	case f.predicate == "":
		return badInput("missing --predicate NAME (the liveness predicate whose violation to trace back)")
	case f.walks < 1, f.walkSteps < 1, f.jobs < 1, f.warmup < 0:
		return checkAtLeast(atLeast{"walks", f.walks, 1}, atLeast{"walk-steps", f.walkSteps, 1}, atLeast{"jobs", f.jobs, 1}, atLeast{"warmup", f.warmup, 0})
	case f.stable < 0:
		return badInput("--stable %v: want 0 or more (0: the predicate holds where a walk ends)", f.stable)
	case f.walkTime < 0 || f.changed("walk-time") && f.walkTime == 0:
		return badInput("--walk-time %v: want a positive duration (omit it for the system's run time)", f.walkTime)
	case f.alarm < -1 || f.changed("alarm") && f.alarm < 0:
		return badInput("--alarm %d: want a step of the alarm's interval (0 or more)", f.alarm)
	}
	if err := jobsBound(f.jobs); err != nil {
		return err
	}
	tr, err := a.loadTrace(paths)
	if err != nil {
		return err
	}
	if _, err := a.Registry.LookupRecorded(tr.Header.System); err != nil {
		return badInput("%v", err)
	}
	script, err := a.resolveScript(arg)
	if err != nil {
		return err
	}
	out := f.output
	if out == "" {
		out = strings.TrimSuffix(paths[0], ".lz4") + "-recovering.lz4"
	}
	if err := refuseInput(out, paths, "the recovering walk"); err != nil {
		return err
	}
	// Before the search, not after it: an output that cannot be written
	// lost the whole search and its answer.
	if err := replacesOnlyATrace(out); err != nil {
		return err
	}
	if err := checkWritable(out); err != nil {
		return err
	}
	ctx, stop := interruptContext(syscall.SIGTERM)
	defer stop()
	if f.timeLimit < 0 {
		return badInput("--time %v: want a duration above 0 (omit it for no limit)", f.timeLimit)
	}
	if f.timeLimit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeLimit)
		defer cancel()
	}
	prog := a.progress()
	found, err := a.critical(ctx, tr, script.Path, f, func(s string) { prog.update("%s", s) })
	prog.done()
	if found != nil {
		for _, n := range found.notes {
			fmt.Fprintf(a.Stderr, "%s critical: note: %s\n", a.name(), n)
		}
	}
	if err != nil {
		return err
	}
	tgt, res, elapsed := found.tgt, found.res, found.elapsed
	for _, n := range answerNotes(tr, res) {
		fmt.Fprintf(a.Stderr, "%s critical: note: %s\n", a.name(), n)
	}
	rep := &criticalReport{tr: tr, paths: paths, script: script.Name, f: f, tgt: tgt, res: res, elapsed: elapsed, becameLost: found.becameLost, latencyMax: found.latencyMax,
		walksResumed: found.walksResumed}
	// A recovering walk that cannot be written (the disk filled during
	// the search) does not take the answer with it: the report is
	// printed without it, then the write's error ends the verb.
	var writeErr error
	if res.LastLive >= 0 && res.Critical >= 0 {
		if writeErr = writeBytes(out, found.recovering); writeErr == nil {
			rep.recovering = out
		}
	}
	if f.asJSON {
		err = rep.writeJSON(a)
	} else {
		rep.writeText(a)
	}
	if err != nil {
		return err
	}
	if writeErr != nil {
		return withCode(ExitBadInput, fmt.Errorf("the recovering walk: %w", writeErr))
	}
	if res.Stopped != "" {
		return withCode(ExitViolations, fmt.Errorf("%s after %d probes, before the search finished", stoppedWhy(res.Stopped, f.timeLimit), len(res.Probes)))
	}
	return nil
}

// criticalFound is a finished (or interrupted) critical-transition
// search, before anything is written or printed.
type criticalFound struct {
	tgt        *target
	res        *critical.Result
	recovering []byte   // the first recovering walk from res.LastLive (nil if none)
	notes      []string // walks whose handlers panicked (not recoveries)
	elapsed    time.Duration
	// becameLost: messages in flight in the fork at the last live step
	// that the fork at the critical step takes as lost by the run (their
	// receiver's clock passed their latency window): the loss happened
	// when each was sent, and shows only there.
	becameLost []lostMessage
	latencyMax time.Duration // the walks' latency window
	// walksResumed walks were checked from a warm-up after one check of
	// the recording up to their probe's step.
	walksResumed int
}

// lostMessage is a message that became lost at the critical step, and
// why: with receiverDown, its receiver was down there (since its crash at
// crashStep) as its window closed, so nothing was there to take it; else
// its receiver's clock passed the window, and the run lost it when it was
// sent.
type lostMessage struct {
	world.Message
	receiverDown bool
	crashStep    int
}

// critical checks tr for f.predicate (it must be a liveness violation)
// and binary-searches its critical transition. It is the search behind
// replay critical and the debugger's c, apart from printing: progress
// hears what it is doing, and ctx ending stops the search with the
// bounds found so far (res.Stopped "canceled"), not an error. A failed
// search still returns the notes of the walks made before it failed.
func (a *App) critical(ctx context.Context, tr *replay.Trace, script string, f criticalFlags, progress func(string)) (*criticalFound, error) {
	if f.alarm >= tr.Len() {
		// An interval open at the end would hold it.
		return nil, badInput("--alarm %d: the trace has steps #0..#%d", f.alarm, tr.Len()-1)
	}
	tgt, err := a.checkTarget(tr, script, f.predicate, f.alarm, f.budgets, "critical", progress)
	if err != nil {
		return nil, err
	}
	sys, err := a.Registry.LookupRecorded(tr.Header.System)
	if err != nil {
		return nil, badInput("%v", err)
	}
	cfg, err := walkConfig(sys, tr, f)
	if err != nil {
		return nil, err
	}
	a.sayStalls(&cfg, "critical") // its walks' handlers: --handler-bound, and said when long
	maxSteps, memory, timeBudget, err := f.budgets.parse()
	if err != nil {
		return nil, err
	}

	var notes []string
	if n := tgt.othersNote(); n != "" {
		notes = append(notes, n)
	}
	recovering := map[int][]byte{}   // the first recovering walk of each live probe
	restarted := map[int][]node.ID{} // the nodes the walks from a step restarted
	// By probed step (Search probes one step at a time).
	flying, lost := map[int][]world.Message{}, map[int]map[node.MsgID]bool{}
	downLost := map[int]map[node.MsgID]int{} // by probed step: messages lost as their receiver was down, and its last step (its crash; -1: not started)
	stepTime := func(step int) int64 { return tr.Event(step).Time }
	var walksResumed atomic.Int64 // see criticalReport
	probe := func(ctx context.Context, step int) (critical.Probe, error) {
		began := time.Now()
		start, w, err := a.forkStarterWith(tr, step, progress)
		if err != nil {
			return critical.Probe{}, err
		}
		var lostHere []world.Message
		flying[step], lostHere = sim.SplitInFlight(w, stepTime, cfg.LatencyMax)
		lost[step], downLost[step] = map[node.MsgID]bool{}, map[node.MsgID]int{}
		for _, m := range lostHere {
			lost[step][m.ID] = true
			if sim.ReceiverWasDown(w, m, cfg.LatencyMax) {
				downLost[step][m.ID] = w.Node[m.To].LastStep
			}
		}
		strat, err := explore.New("random", cfg, explore.Params{Seed: walkSeed(f.seed, step)})
		if err != nil {
			return critical.Probe{}, err
		}
		p := critical.Probe{Step: step}
		var restart []node.ID
		if !f.keepDown {
			restart = w.Down()
			restarted[step] = restart
		}
		check := simtest.Options{Registry: a.Registry, HandlerBound: simBound(a.handlerBound), MaxSteps: maxSteps, MemoryBudget: memory, TimeBudget: timeBudget,
			// A walk that went quiet is judged --stable later too.
			QuietFor: f.stable,
			Counts:   func(*predicates.Violation) bool { return false }}
		if f.walks > 1 {
			check.Prefix = a.sharedPrefix(tr, step, f.warmup, script, check, progress, startWall(ctx, 0).over)
			defer func() {
				if check.Prefix != nil {
					_, resumed := check.Prefix.Stats()
					walksResumed.Add(int64(resumed))
				}
				check.Prefix.Close()
			}()
		}
		sum, err := explore.Run(ctx, sys, cfg, critical.Settle(strat, restart), explore.Options{
			Script: script,
			Check:  check,
			Budget: f.walks, Jobs: f.jobs, All: true, Start: start,
			OnRun: func(run int, check *simtest.Result) {
				p.Walks++
				if check == nil { // a handler panic: not a recovery
					return
				}
				walk := critical.Walk{Report: check.Report, Fork: step, End: check.Sim.Time, Quiet: check.Sim.Reason == sim.ReasonQuiet}
				if critical.Recovered(walk, f.predicate, f.stable) {
					if p.Recovered == 0 {
						recovering[step] = check.Trace
					}
					p.Recovered++
				}
				progress(fmt.Sprintf("probing #%d: walk %d of %d, %d recovered", step, p.Walks, f.walks, p.Recovered))
			},
		})
		if err != nil {
			var ee *predicates.EvalError
			if errors.As(err, &ee) {
				return p, &exitError{ExitPredicateError, fmt.Errorf("walks from #%d: %w", step, err)}
			}
			return p, fmt.Errorf("walks from #%d: %w", step, err)
		}
		for _, fd := range sum.Found {
			if fd.Panic != nil || fd.Stall != nil {
				notes = append(notes, fmt.Sprintf("walk %d from #%d: %s", fd.Run, step, fd.Headline()))
			}
		}
		p.Elapsed = time.Since(began)
		return p, nil
	}
	began := time.Now()
	res, err := critical.Search(ctx, 0, tgt.lastStep(tr), probe, func(p critical.Probe) {
		progress(fmt.Sprintf("probed #%d: %d of %d walks recovered", p.Step, p.Recovered, p.Walks))
	})
	if err != nil {
		return &criticalFound{notes: notes}, err
	}
	var becameLost []lostMessage
	if res.Stopped == "" && res.LastLive >= 0 && res.Critical == res.LastLive+1 {
		for _, m := range flying[res.LastLive] {
			if lost[res.Critical][m.ID] {
				crash, down := downLost[res.Critical][m.ID]
				becameLost = append(becameLost, lostMessage{m, down, crash})
			}
		}
	}
	if res.Stopped == "" && res.Critical < 0 {
		// Walks that recover from the end only because they revived a
		// node the run lost for good answer nothing about a fail-stop
		// system: said, with the way out.
		if down := restarted[tgt.lastStep(tr)]; len(down) > 0 {
			notes = append(notes, fmt.Sprintf("the walks from #%d restarted %s, down there; a walk recovers with %s back, which a fail-stop system never has: --keep-down leaves them down",
				tgt.lastStep(tr), joinIDs(down), map[bool]string{true: "it", false: "them"}[len(down) == 1]))
		}
	}
	return &criticalFound{tgt: tgt, res: res, recovering: recovering[res.LastLive], notes: notes, elapsed: time.Since(began),
		becameLost: becameLost, latencyMax: cfg.LatencyMax, walksResumed: int(walksResumed.Load())}, nil
}

// interval is the liveness interval searched, in --json (alarm_step 0: not
// raised, open at the end).
type interval struct {
	Step      int `json:"step"`
	EndStep   int `json:"end_step"`
	AlarmStep int `json:"alarm_step,omitempty"`
}

// lostMsg is a message that became lost at the critical step, in --json.
type lostMsg struct {
	Type     string  `json:"type"`
	From     node.ID `json:"from"`
	To       node.ID `json:"to"`
	SendStep int     `json:"send_step"`
	// ReceiverDownSince is the step of the receiver's crash when it was
	// down as the message's window closed (the cause is the crash, not
	// the send).
	ReceiverDownSince *int `json:"receiver_down_since,omitempty"`
}

// criticalReport is a finished search, for printing.
type criticalReport struct {
	tr         *replay.Trace
	paths      []string
	script     string
	f          criticalFlags
	tgt        *target
	res        *critical.Result
	elapsed    time.Duration
	recovering string
	becameLost []lostMessage
	latencyMax time.Duration
	// walksResumed walks were checked from a warm-up after one check of
	// the recording up to their probe's step; the others from #0.
	walksResumed int
}

// decided is the step and time where the original run's violation is
// known: the searched interval's alarm, else the end of the trace, where
// the interval still open is judged.
func (r *criticalReport) decided() (step int, at int64) {
	if v := r.tgt.alarm; v != nil {
		return v.AlarmStep, r.tr.Event(v.AlarmStep).Time
	}
	last := r.tgt.lastStep(r.tr)
	return last, r.tr.Event(last).Time
}

func (r *criticalReport) writeText(a *App) {
	w := a.Stdout
	res, f := r.res, r.f
	ren := newRenderer(a, r.tr)
	fmt.Fprintf(w, "critical transition of %s in %s\n", f.predicate, strings.Join(r.paths, " "))
	fmt.Fprintf(w, "(%d random walks of up to %d events per probed step, %s; a walk recovers if %s holds for its last %v)\n",
		f.walks, f.walkSteps, map[bool]string{false: "no new faults", true: "the trace's faults"}[f.faults]+map[bool]string{true: ", down nodes kept down"}[f.keepDown], f.predicate, f.stable)
	switch v := r.tgt.alarm; {
	case r.tgt.open == nil && v != nil && v.EndStep > 0 && r.tgt.chosen:
		fmt.Fprintf(w, "(--alarm %d: the alarm at #%d, of the interval %s, which closed: the search ends at #%d, the interval's last step)\n",
			f.alarm, v.AlarmStep, intervalText(v), v.EndStep-1)
	case r.tgt.open == nil && v != nil && v.EndStep > 0:
		fmt.Fprintf(w, "(%s holds at the end: its alarm at #%d belongs to an interval that closed at #%d, so the search ends at #%d, the interval's last step)\n",
			f.predicate, v.AlarmStep, v.EndStep, v.EndStep-1)
	case r.tgt.chosen && r.tgt.open != nil:
		fmt.Fprintf(w, "(--alarm %d: the interval %s, open at the end of the trace)\n", f.alarm, intervalText(r.tgt.open))
	}
	fmt.Fprintln(w)
	switch {
	case res.Stopped != "":
		// The bisection did not finish: only its bounds are known.
		why := stoppedWhy(res.Stopped, f.timeLimit)
		switch {
		case res.Critical < 0:
			fmt.Fprintf(w, "%s before the first probe (#%d) finished: nothing is known yet\n", why, r.tgt.lastStep(r.tr))
		case res.LastLive < 0:
			fmt.Fprintf(w, "%s after %d probes: no walk from #%d recovered; the critical step is at or before it\n", why, len(res.Probes), res.Critical)
		default:
			fmt.Fprintf(w, "%s after %d probes: the critical step lies in #%d..#%d (walks recovered from #%d, none from #%d)\n",
				why, len(res.Probes), res.LastLive+1, res.Critical, res.LastLive, res.Critical)
		}
	case res.Critical < 0:
		end, _ := res.Probe(r.tgt.lastStep(r.tr))
		if r.tgt.open == nil {
			fmt.Fprintf(w, "walks from #%d, the last step of the alarm's interval, recover (%d of %d): the run was not doomed there, so it has no critical transition.\n",
				end.Step, end.Recovered, end.Walks)
		} else {
			fmt.Fprintf(w, "walks from the last step #%d recover (%d of %d): the run is not doomed where it ends, so it has no critical transition.\n",
				end.Step, end.Recovered, end.Walks)
		}
		fmt.Fprintf(w, "The violation may need more time to clear than the walks give (--walk-steps, --stable), or it is a timing fault that heals.\n")
	case res.LastLive < 0:
		p, _ := res.Probe(res.Critical)
		fmt.Fprintf(w, "doomed from the first probed step #%d: no walk from it recovered (0 of %d)\n", res.Critical, p.Walks)
		fmt.Fprintf(w, "  %s\n", ren.StepLine(res.Critical))
		// Dead from the start is more often walks too short to show a
		// recovery, or a predicate that never holds for --stable, than a
		// run doomed before it began.
		fmt.Fprintf(w, "If the run could not have been doomed this early, the walks may be too short to show a recovery: raise --walk-steps (%d) or lower --stable (%v). A predicate that is false whenever work is in flight (every request eventually completes) holds for --stable only once the workload stops; write it to hold while the system makes progress (docs/liveness.md, \"Cost and limits\").\n",
			r.f.walkSteps, r.f.stable)
	default:
		dead, _ := res.Probe(res.Critical)
		live, _ := res.Probe(res.LastLive)
		fmt.Fprintf(w, "critical step:\n  %s\n", ren.StepLine(res.Critical))
		fmt.Fprintf(w, "  after it no walk recovered (0 of %d)\n", dead.Walks)
		// A message the run lost shows as lost only once its receiver's
		// clock passes its latency window: then the cause is its send.
		const told = 5
		for i, m := range r.becameLost {
			if i == told {
				fmt.Fprintf(w, "  and %d more messages became lost at this step\n", len(r.becameLost)-told)
				break
			}
			var why string
			switch {
			case m.receiverDown && m.crashStep < 0:
				why = fmt.Sprintf("its latency window (%v) closed before %s started, which nothing after this step can undo", r.latencyMax, m.To)
			case m.receiverDown:
				why = fmt.Sprintf("its latency window (%v) closed with %s down, which nothing after this step can undo; the cause may be its crash (#%d)", r.latencyMax, m.To, m.crashStep)
			default:
				why = fmt.Sprintf("%s's clock passed its latency window (%v) without a delivery, so the run lost it when it was sent; the cause may be there (#%d)", m.To, r.latencyMax, m.SendStep)
			}
			fmt.Fprintf(w, "  at this step %s from %s to %s, sent at #%d, became lost: %s\n", m.Type, m.ID.From, m.To, m.SendStep, why)
		}
		fmt.Fprintf(w, "last live step #%d: %d of %d walks recovered (%.0f%%)\n", live.Step, live.Recovered, live.Walks, 100*live.Rate())
		step, at := r.decided()
		// The alarm decided() names: the first, unless the search picked
		// its interval (--alarm, or the one open at the end).
		first := map[bool]string{false: "first alarm", true: "alarm"}[r.tgt.chosen || r.tgt.open != nil]
		known := map[bool]string{true: first, false: "open at the end"}[r.tgt.alarm != nil]
		ahead := time.Duration(at - r.tr.Event(res.Critical).Time).Round(time.Millisecond)
		if step >= res.Critical {
			fmt.Fprintf(w, "the violation is known at #%d (%s): the critical step is %d steps and %v of virtual time before it\n",
				step, known, step-res.Critical, ahead)
		} else {
			// Walks from the alarm's step recovered: the alarm flagged an
			// episode the system would have come out of, left alone.
			fmt.Fprintf(w, "the %s, at #%d, comes %d steps (%v) before the critical step: walks from there still recovered, so the run was not yet doomed when it was raised\n",
				first, step, res.Critical-step, -ahead)
		}
	}
	fmt.Fprintf(w, "\nprobes (recovered/walks by step; · none recovered): %s\n", critical.Sparkline(res.Probes))
	for _, p := range res.Probes {
		fmt.Fprintf(w, "  #%-8d %3d/%-3d %s\n", p.Step, p.Recovered, p.Walks, strings.Repeat("█", int(p.Rate()*20+0.5)))
	}
	walks := fmt.Sprintf("%d walks", res.WalksRun())
	if c := res.CutShort; c != nil {
		walks += fmt.Sprintf(" (%d from #%d, cut short)", c.Walks, c.Step)
	}
	fmt.Fprintf(w, "\nsearch: %d probes, %s in %v (%.1f× one check of the trace, %v)\n", len(res.Probes), walks,
		r.elapsed.Round(time.Millisecond), r.elapsed.Seconds()/max(r.tgt.baseline.Seconds(), 1e-9), r.tgt.baseline.Round(time.Millisecond))
	fmt.Fprintf(w, "These are random walks: a dead step is one from which none of %d walks recovered, not one from which none can.\n", f.walks)
	if res.Critical >= 0 && res.Stopped == "" {
		traces := shellword.Paths(r.paths)
		fmt.Fprintf(w, "\ndebug the critical step:   %s debug %s --preds %s --at %d\n", a.prog(), traces, shellword.Path(r.script), res.Critical)
		if r.recovering != "" {
			fmt.Fprintf(w, "compare a recovering walk: %s debug %s --preds %s --at %d   (forked after #%d; wrote %s)\n",
				a.prog(), shellword.Path(r.recovering), shellword.Path(r.script), res.LastLive+1, res.LastLive, filepath.Base(r.recovering))
		}
	}
}

func (r *criticalReport) writeJSON(a *App) error {
	type event struct {
		Step int    `json:"step"`
		Node string `json:"node"`
		Line string `json:"event"`
		Time int64  `json:"time_ns"`
	}
	ren := newRenderer(a, r.tr)
	ev := func(step int) *event {
		e := r.tr.Event(step)
		return &event{Step: step, Node: string(e.Node), Line: ren.StepLine(step), Time: e.Time - r.tr.Header.Start}
	}
	type crit struct {
		*event
		DecidedStep     int   `json:"violation_known_step"`
		StepsBefore     int   `json:"steps_before"`
		TimeBeforeNS    int64 `json:"time_before_ns"`
		DoomedFromStart bool  `json:"doomed_from_first_step"`
		// AtOrBefore: the search stopped (stopped) before it narrowed
		// the transition to one step: the critical step is at or before
		// step, the earliest dead probe found (and after last_live).
		AtOrBefore bool `json:"at_or_before,omitempty"`
		// BecameLost: messages that show as lost from this step on
		// (their receiver's clock passed their latency window): the run
		// lost each when it was sent.
		BecameLost []lostMsg `json:"became_lost,omitempty"`
	}
	out := struct {
		Predicate string   `json:"predicate"`
		Traces    []string `json:"traces"`
		// Interval is the one searched: open at the end (end_step -1),
		// else the (first, or --alarm's) alarm's.
		Interval   *interval        `json:"interval,omitempty"`
		Walks      int              `json:"walks"`
		WalkSteps  int              `json:"walk_steps"`
		StableNS   int64            `json:"stable_ns"`
		Faults     bool             `json:"faults"`
		KeepDown   bool             `json:"keep_down"`
		Critical   *crit            `json:"critical"`
		LastLive   *critical.Probe  `json:"last_live"`
		Probes     []critical.Probe `json:"probes"`
		Recovering string           `json:"recovering_walk,omitempty"`
		Seconds    float64          `json:"seconds"`
		CheckSecs  float64          `json:"check_seconds"`
		Stopped    string           `json:"stopped,omitempty"`
		// WalksRun: every walk run, a probe cut short's included.
		WalksRun int             `json:"walks_run"`
		CutShort *critical.Probe `json:"cut_short,omitempty"`
		// Walks checked from a warm-up after one check of the recording
		// up to their probe's step, and from #0, as predict says.
		WalksResumed   int `json:"walks_checked_from_warmup"`
		WalksFromStart int `json:"walks_checked_from_start"`
	}{Predicate: r.f.predicate, Traces: r.paths, Walks: r.f.walks, WalkSteps: r.f.walkSteps, StableNS: int64(r.f.stable),
		Faults: r.f.faults, KeepDown: r.f.keepDown, Probes: r.res.Probes, Recovering: r.recovering, Seconds: r.elapsed.Seconds(),
		CheckSecs: r.tgt.baseline.Seconds(), Stopped: r.res.Stopped, WalksRun: r.res.WalksRun(), CutShort: r.res.CutShort,
		WalksResumed: r.walksResumed, WalksFromStart: r.res.WalksRun() - r.walksResumed}
	if c := r.res.Critical; c >= 0 {
		step, at := r.decided()
		// A search stopped before any walk recovered knows no live step:
		// that is not "doomed from the first step", which only a finished
		// search (every probe before it dead, step 0 among them) says.
		stopped := r.res.Stopped != ""
		out.Critical = &crit{event: ev(c), DecidedStep: step, StepsBefore: step - c, TimeBeforeNS: at - r.tr.Event(c).Time,
			DoomedFromStart: r.res.LastLive < 0 && !stopped, AtOrBefore: stopped}
		for _, m := range r.becameLost {
			lm := lostMsg{Type: m.Type, From: m.ID.From, To: m.To, SendStep: m.SendStep}
			if m.receiverDown && m.crashStep >= 0 {
				lm.ReceiverDownSince = &m.crashStep
			}
			out.Critical.BecameLost = append(out.Critical.BecameLost, lm)
		}
	}
	if p, ok := r.res.Probe(r.res.LastLive); ok {
		out.LastLive = &p
	}
	if v := r.tgt.searched(); v != nil {
		out.Interval = &interval{Step: v.Step, EndStep: v.EndStep}
		if v.Alarm {
			out.Interval.AlarmStep = v.AlarmStep
		}
	}
	enc := json.NewEncoder(a.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// r2stopped says why a search stopped early, as the report's lines begin.
func stoppedWhy(reason string, limit time.Duration) string {
	if reason == "time limit" {
		return fmt.Sprintf("stopped by --time %v", limit)
	}
	return "interrupted"
}

// answerNotes says what may make the answer earlier or later than the
// real transition. Walks get no inputs: from before an input, one may
// "recover" only because the input that would show the failure never
// came. And the walks that decided it (from the last live step and from
// the critical step) may start from a world that is not a time cut: one
// node ran ahead in time within the steps kept, so the others' timers
// and messages were overdue when the walks began, and a step can look
// dead for that alone (a new user's heartbeat detector: every monitor
// suspected every peer at the walk's first check).
func answerNotes(tr *replay.Trace, res *critical.Result) []string {
	var notes []string
	if res.Critical > 0 && tr.Event(res.Critical).Kind == node.KindInput {
		notes = append(notes, fmt.Sprintf("the critical step #%d is an external input, and walks receive none: the run may have been doomed before it, with nothing left to show it until an input arrived", res.Critical))
	}
	for _, step := range []int{res.LastLive, res.Critical} {
		if step < 0 {
			continue
		}
		if n := timeCutNote(tr, step); n != "" {
			notes = append(notes, fmt.Sprintf("walks from #%d start from a world that is not a time cut, and a step may look dead for that alone: %s", step, n))
		}
	}
	return notes
}
