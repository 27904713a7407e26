package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/replaycheck/replaycheck/internal/shellword"

	printableText "github.com/replaycheck/replaycheck/internal/printable"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/system"
)

func parseSeeds(spec string) (uint64, uint64, error) {
	lo, hi, ok := strings.Cut(spec, "-")
	if !ok {
		hi = lo
	}
	from, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
	to, err2 := strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
	if err1 != nil || err2 != nil || to < from {
		return 0, 0, fmt.Errorf("--seeds %q: want FROM-TO with FROM <= TO, e.g. 1-100", spec)
	}
	return from, to, nil
}

// huntSeeds runs seeds in order, checking each run, and stops at the first
// with a counted violation (exit 1) or whose check failed to evaluate
// (exit 4: that seed was not fully checked). With --all it checks every
// seed and reports each failing one; with --shard I/N only the seeds
// FROM+I, FROM+I+N, ...: N machines split one hunt, and --results writes
// what this shard found for replay results merge.
func (a *App) huntSeeds(sys *system.System, cfg sim.Config, f simFlags) error {
	if f.seeds == "" && f.check != "" && f.changed != nil && f.changed("seed") {
		return badInput("--check runs with a hunt: for seed %d alone, give --seeds %d-%d --check %s", cfg.Seed, cfg.Seed, cfg.Seed, shellword.Path(f.check))
	}
	if f.seeds == "" || f.check == "" {
		return badInput("--seeds and --check go together: --seeds FROM-TO --check PREDS.star (one seed: --seeds N-N)")
	}
	if f.changed != nil && f.changed("seed") {
		return badInput("--seed and --seeds: a hunt runs every seed of --seeds FROM-TO; give --seeds N-N for one seed")
	}
	from, to, err := parseSeeds(f.seeds)
	if err != nil {
		return badInput("%v", err)
	}
	counts, err := failPolicy(f.failOn)
	if err != nil {
		return badInput("%v", err)
	}
	maxSteps, memory, timeBudget, err := f.budgets.parse()
	if err != nil {
		return err
	}
	shard := shardSpec{Index: 0, Count: 1}
	if f.shard != "" || f.changed != nil && f.changed("shard") {
		if shard, err = parseShard(f.shard); err != nil {
			return err
		}
	}
	script, err := a.resolveScript(f.check)
	if err != nil {
		return err
	}
	out := f.output
	if out == "" {
		out = fmt.Sprintf("%s-%s-hunt.lz4", sys.Name, cfg.Bug)
		if shard.Count > 1 {
			out = fmt.Sprintf("%s-%s-hunt-%d-of-%d.lz4", sys.Name, cfg.Bug, shard.Index, shard.Count)
		}
	}
	resultsPath := f.results
	// --shard 0/1 is a sweep of one machine: it writes its file too, as
	// docs/user-guide.md promises for any --shard.
	sharded := f.shard != "" || f.changed != nil && f.changed("shard")
	if resultsPath == "" && sharded {
		resultsPath = fmt.Sprintf("%s-%s-results-%d-of-%d.json", sys.Name, cfg.Bug, shard.Index, shard.Count)
	}
	if resultsPath != "" && sameFile(resultsPath, out) {
		return badInput("--results %s is also the trace output (-o)", resultsPath)
	}
	if err := replacesOnlyATrace(out); err != nil {
		return err // now, not after the hunt found a failure
	}
	var rf *resultFile
	if resultsPath != "" || f.asJSON {
		id, err := huntIdentity(sys, cfg, f, from, to, script)
		if err != nil {
			return err
		}
		rf = &resultFile{Hunt: id, Shard: shard, Stopped: "done", Complete: true}
	}
	if resultsPath != "" {
		// A bad --results is refused now, not after the hunt.
		if err := notOverATrace(resultsPath, "the result file"); err != nil {
			return err
		}
		if err := checkWritable(resultsPath); err != nil {
			return err
		}
	}
	jsonOut := a.Stdout
	if f.asJSON {
		// The report goes to stderr: stdout holds one JSON document.
		quiet := *a
		quiet.Stdout = a.Stderr
		a = &quiet
	}
	mine := seedsOfShard(from, to, shard) // seeds in this shard's slice
	slice := fmt.Sprintf("seeds %d-%d", from, to)
	if shard.Count > 1 {
		slice = fmt.Sprintf("seeds %d-%d, shard %d/%d", from, to, shard.Index, shard.Count)
	}
	// Ctrl-C or SIGTERM (a preempted shard) ends the hunt after the seed
	// it is on, with the summary and the result file of what it tried.
	interrupted, stopSignals := onInterrupt(syscall.SIGTERM)
	defer stopSignals()
	prog := a.progress()
	start := time.Now()
	steps, screened, tried := 0, 0, uint64(0)
	var failures []huntFailure
	var unmatched predicates.UnmatchedAcross // tables with no row in any run: typos
	var firstErr *exitError                  // the exit of the hunt, set by its first failure
	wroteTrace := false
	stopped := false   // a signal ended the hunt
	var writeErr error // the failing seed's trace could not be written to -o
	finish := func() error {
		end := firstErr
		if end == nil && f.strictTables {
			if err := strictTables(unmatched.Tables(), unmatched.In("run")); err != nil {
				end = err.(*exitError)
			}
		}
		if stopped {
			// Not 0 (nor a finding's 1): the slice was not finished. A
			// Kubernetes index that exited 0 would never be run again.
			said := ""
			if rf != nil {
				said = " (the result file says so)"
			}
			rest := ""
			if shard.Count == 1 && tried < mine {
				// Seeds run in order: what is left is one range (a
				// shard's seeds are strided; its slice runs again whole).
				rest = fmt.Sprintf("; --seeds %d-%d checks the rest", from+tried, to)
			}
			end = &exitError{ExitInterrupted, fmt.Errorf("interrupted after %d of %d seeds: the rest of this slice was not checked%s%s", tried, mine, said, rest)}
		}
		if rf != nil {
			rf.Runs, rf.Steps, rf.Failures, rf.Unmatched = int(tried), int64(steps), failures, unmatched.Tables()
			if end != nil {
				rf.Exit = end.code
			}
			if resultsPath != "" {
				if err := writeResults(resultsPath, rf); err != nil {
					return err
				}
				fmt.Fprintf(a.Stdout, "results: %s\n", resultsPath)
			}
			if f.asJSON {
				if err := rf.encode(jsonOut); err != nil {
					return err
				}
			}
		}
		if writeErr != nil {
			return withCode(ExitBadInput, fmt.Errorf("%w (the seed's reproduce command above re-creates it)", writeErr))
		}
		if end != nil {
			return end
		}
		return nil
	}
	for i := uint64(shard.Index); i <= to-from; i += uint64(shard.Count) {
		if interrupted.Load() {
			stopped = true
			if rf != nil {
				rf.Complete, rf.Stopped = false, "interrupted"
			}
			break
		}
		seed := from + i
		tried++
		cfg.Seed = seed
		prog.update("seed %d (%d of %d), %d steps checked", seed, tried, mine, steps)
		runStart := time.Now()
		// A signal ends the seed under way too (a run of thousands of
		// nodes takes minutes): it is then not counted, and the slice
		// is not finished.
		cfg.Stop = interrupted.Load
		a.sayStalls(&cfg, "sim")
		res, err := simtest.Run(sys, cfg, script.Path, simtest.Options{Registry: a.Registry, HandlerBound: simBound(a.handlerBound), Counts: counts, StopAtFirst: true,
			MaxSteps: maxSteps, MemoryBudget: memory, TimeBudget: timeBudget, Stop: interrupted.Load})
		if errors.Is(err, sim.ErrInterrupted) || interrupted.Load() && err == nil && len(res.Failing) == 0 && !res.Report.Complete {
			tried--
			stopped = true
			if rf != nil {
				rf.Complete, rf.Stopped = false, "interrupted"
			}
			break
		}
		// A seed not fully checked (a predicate failed, or the replay
		// diverged) comes with its result; any other error ends the hunt.
		var evalErr *predicates.EvalError
		var div *replay.Divergence
		var panicked *node.PanicError
		var stalled *sim.StallError
		notFullyChecked := res != nil && (errors.As(err, &evalErr) || errors.As(err, &div) || errors.As(err, &panicked) || errors.As(err, &stalled))
		if err != nil && !notFullyChecked {
			prog.done()
			var se *predicates.ScriptError
			if errors.As(err, &se) {
				return badInput("%v", err)
			}
			return withCode(ExitViolations, err)
		}
		unmatched.Add(res.Report)
		if res.Report != nil { // nil: a handler panicked or stalled, nothing was checked
			steps += res.Report.Steps
			for _, v := range res.Report.Violations {
				if v.Status() == "screened" {
					screened++
				}
			}
		}
		if len(res.Failing) == 0 && evalErr == nil && div == nil && panicked == nil && stalled == nil {
			if to-from-i < uint64(shard.Count) {
				break // the next seed of the slice would pass TO (or wrap)
			}
			continue
		}
		// A seed whose check failed to evaluate is not clean: stop there,
		// as at a violation, with the trace and the commands (with --all,
		// record it and go on).
		prog.done()
		// Every failure is reproduced from nothing by its seed; the trace
		// of the first is written to -o as well.
		seedTrace := fmt.Sprintf("%s-%d.lz4", sys.Name, seed)
		fail := huntFailure{Seed: &seed, Kind: "violation", Reproduce: withProgram(f.prog(), simtest.SimCommand(sys, res.Config, seedTrace))}
		if !wroteTrace {
			wroteTrace = true
			fail.Trace = out
			// A trace that cannot be written (a full disk) does not lose
			// the seed and the result file: the seed's reproduce command
			// re-creates it, and the write's error ends the hunt (exit 2)
			// after them.
			if err := writeBytes(out, res.Trace); err != nil {
				writeErr, fail.Trace = err, ""
			}
		}
		var code *exitError
		debugAt := -1 // where debug opens: the failure's step unless set
		switch {
		case panicked != nil:
			// The system's own code failed: its trace holds what ran,
			// up to the event that panicked.
			fail.Kind, fail.Step = "panic", max(0, res.Sim.Steps-1)
			fail.Headline = printableText.Escape(panicked.Error())
			code = &exitError{ExitViolations, fmt.Errorf("seed %d: %s", seed, fail.Headline)}
		case stalled != nil:
			// Its trace holds what ran, up to the event whose handler
			// did not return.
			fail.Kind, fail.Step = "stall", max(0, res.Sim.Steps-1)
			fail.Headline = printableText.Escape(stalled.Error())
			code = &exitError{ExitViolations, fmt.Errorf("seed %d: %s", seed, fail.Headline)}
		case div != nil:
			// The handler is nondeterministic: the seed's check stopped
			// at the divergence, so it is not clean, nor a protocol bug.
			fail.Kind, fail.Step = "divergence", div.Step
			fail.Headline = fmt.Sprintf("replay diverged at step #%d (%s %s): %s", div.Step, div.Node, printableText.Escape(div.Event), printableText.Escape(div.What))
			// The trace written for this seed (-o) is the one to
			// verify; a later seed's is made by its reproduce command.
			explain := fmt.Sprintf("%s verify %s explains it", f.prog(), shellword.Path(fail.Trace))
			if fail.Trace == "" {
				explain = fmt.Sprintf("%s, then %s verify %s, explains it", fail.Reproduce, f.prog(), shellword.Path(seedTrace))
			}
			code = &exitError{ExitDivergence, fmt.Errorf("seed %d: %s; %s%s", seed, fail.Headline, explain, carriedState(f.prog()))}
		case evalErr != nil:
			// Named with its message: a merged report is all a sharded
			// hunt's operator sees of it.
			first := evalErr.Failures[0]
			fail.Kind, fail.Step, fail.Predicate = "predicate error", first.Step, first.Name
			fail.Headline = evalErr.Error()
			code = &exitError{ExitPredicateError, fmt.Errorf("seed %d: %d evaluation error(s) (above): the seed was not fully checked", seed, len(evalErr.Failures))}
		default:
			v := res.Failing[0]
			fail.Headline, fail.Predicate, fail.Witness, fail.Step = v.Headline(), v.Predicate, v.Witness, v.Step
			debugAt = v.Decided() // an alarm opens where it was raised
			fail.AlarmStep, fail.AlarmWitness = alarmStep(v), alarmWitness(v)
			code = &exitError{ExitViolations, fmt.Errorf("seed %d: %s", seed, v.Headline())}
		}
		if debugAt < 0 {
			debugAt = fail.Step
		}
		// A diverged seed is explained by verify; the debugger cannot
		// index a trace that does not replay.
		debugCmd := func(trace string) string {
			if div != nil {
				return f.prog() + " verify " + shellword.Path(trace)
			}
			return fmt.Sprintf("%s debug %s --preds %s --at %d", f.prog(), shellword.Path(trace), shellword.Path(script.Name), debugAt)
		}
		fail.Debug = debugCmd(seedTrace)
		failures = append(failures, fail)
		if firstErr == nil || worseExit(firstErr.code, code.code) != firstErr.code {
			firstErr = code // ranked as results merge ranks them
		}
		if f.all {
			if fail.Trace != "" {
				// Written already: its debug command opens what is there.
				fmt.Fprintf(a.Stdout, "seed %d fails (%d of %s tried): %s\n  wrote:     %s\n  debug:     %s\n  reproduce: %s\n",
					seed, tried, slice, fail.Headline, fail.Trace, debugCmd(fail.Trace), fail.Reproduce)
			} else {
				fmt.Fprintf(a.Stdout, "seed %d fails (%d of %s tried): %s\n  reproduce: %s\n  then:      %s\n",
					seed, tried, slice, fail.Headline, fail.Reproduce, fail.Debug)
			}
			if evalErr != nil {
				res.Report.WriteErrors(a.Stderr)
			}
			if stalled != nil || div != nil && res.Report == nil {
				// The goroutine of a handler that did not return (when
				// simulated, or only when replayed: a divergence without
				// a report) cannot be ended: going on would leave one
				// more behind at every such seed (spinning, each takes a
				// core).
				fmt.Fprintf(a.Stdout, "the hunt stops at seed %d even with --all: its stuck handler's goroutine cannot be ended\n", seed)
				if rf != nil {
					rf.Complete, rf.Stopped = tried == mine, "failure"
				}
				break
			}
			if to-from-i < uint64(shard.Count) {
				break
			}
			continue
		}
		if rf != nil {
			rf.Complete, rf.Stopped = tried == mine, "failure"
		}
		debug := debugCmd(out)
		switch {
		case panicked != nil:
			fmt.Fprintf(a.Stdout, "seed %d: a handler panicked (%d of %s tried): %s\n", seed, tried, slice, fail.Headline)
			writeStack(a.Stdout, panicked.Stack)
			fmt.Fprintln(a.Stdout)
		case stalled != nil:
			fmt.Fprintf(a.Stdout, "seed %d: a handler did not return (%d of %s tried): %s\n\n", seed, tried, slice, fail.Headline)
		case div != nil:
			fmt.Fprintf(a.Stdout, "seed %d could not be checked past step #%d (%d of %s tried): %s\n\n", seed, div.Step, tried, slice, fail.Headline)
			if res.Report != nil { // nil: the replay was stuck in a handler
				res.Report.WriteText(a.Stdout, time.Since(runStart))
			}
		case evalErr != nil:
			fmt.Fprintf(a.Stdout, "seed %d could not be fully checked (%d of %s tried): %s\n\n", seed, tried, slice, fail.Headline)
			res.Report.WriteText(a.Stdout, time.Since(runStart))
			res.Report.WriteErrors(a.Stderr)
		default:
			fmt.Fprintf(a.Stdout, "seed %d fails (%d of %s tried): %s\n\n", seed, tried, slice, fail.Headline)
			res.Report.WriteText(a.Stdout, time.Since(runStart))
		}
		fmt.Fprintf(a.Stdout, "%s\nreproduce: %s\ndebug:     %s\n", wrote(out, failedWrite(writeErr)), withProgram(f.prog(), simtest.SimCommand(sys, res.Config, out)), debug)
		return finish()
	}
	prog.done()
	if stopped {
		fmt.Fprintf(a.Stdout, "interrupted after %d of %d seeds: ", tried, mine)
	}
	fmt.Fprintf(a.Stdout, "%s of %s (bug %s): %s, %d steps simulated and checked in %v: ",
		slice, sys.Name, cfg.Bug, plural(int(tried), "run"), steps, time.Since(start).Round(time.Millisecond))
	if len(failures) == 0 {
		fmt.Fprintf(a.Stdout, "no violation counted by --fail-on %s", f.failOn)
	} else {
		what := "wrote the first, seed %d, to %s"
		if writeErr != nil {
			what = "the first, seed %d, could not be written to %s"
		}
		fmt.Fprintf(a.Stdout, "%s ("+what+")", plural(len(failures), "failing seed"), *failures[0].Seed, out)
	}
	if screened > 0 {
		fmt.Fprintf(a.Stdout, " (%d liveness interval(s) not raised: closed, or screened by an alarm function)", screened)
	}
	fmt.Fprintln(a.Stdout)
	if early := earliestFailure(failures); early != nil && early != &failures[0] {
		// The first seed is not the one to read: a new user shrank a
		// 1,357-event run for minutes where another seed failed at #40.
		fmt.Fprintf(a.Stdout, "earliest failure: seed %d at #%d (seed %d fails at #%d): the shortest run to read and shrink\n  reproduce: %s\n",
			*early.Seed, early.decided(), *failures[0].Seed, failures[0].decided(), early.Reproduce)
	}
	unmatched.WriteText(a.Stdout, "run")
	return finish()
}

// earliestFailure is the failure decided at the earliest step (the first
// of those), or nil for none: a liveness alarm where it was raised, which
// is as far as its run must go.
func earliestFailure(failures []huntFailure) *huntFailure {
	var early *huntFailure
	for i := range failures {
		if early == nil || failures[i].decided() < early.decided() {
			early = &failures[i]
		}
	}
	return early
}

// huntIdentity names a seed hunt for its result file: the settings that
// decide which runs are made and what counts as a failure. The seed
// range is part of it (shards of different ranges are different splits).
func huntIdentity(sys *system.System, cfg sim.Config, f simFlags, from, to uint64, script scriptRef) (huntID, error) {
	digest, err := scriptDigest(script.Path)
	if err != nil {
		return huntID{}, err
	}
	cfg.Seed = from
	// The run's settings as sim prints them, less the seed and output.
	settings := simtest.SimCommand(sys, cfg, "x")
	settings = strings.TrimSuffix(settings, " -o x")
	settings = strings.TrimPrefix(settings, fmt.Sprintf("replay sim %s --seed %d", shellword.Quote(sys.Name), from))
	cmd := fmt.Sprintf("%s sim %s%s --seeds %d-%d --check %s", f.prog(), shellword.Quote(sys.Name), settings, from, to, shellword.Path(script.Name))
	if f.failOn != "safety,alarm" {
		cmd += " --fail-on " + shellword.Quote(f.failOn)
	}
	cmd += f.budgets.String()
	if f.all {
		cmd += " --all"
	}
	if f.strictTables {
		cmd += " --strict-tables"
	}
	return huntID{Kind: "sim", System: sys.Name, Bug: cfg.Bug, Command: cmd, Script: script.Name, ScriptSHA256: digest}, nil
}

// seedsOfShard is how many of the seeds from..to shard runs: from+I,
// from+I+N, ... Saturated at the largest uint64: seeds
// 0-18446744073709551615 on one shard are 2^64, which wrapped to 0
// ("interrupted after 496 of 0 seeds").
func seedsOfShard(from, to uint64, shard shardSpec) uint64 {
	if uint64(shard.Index) > to-from {
		return 0
	}
	return min((to-from-uint64(shard.Index))/uint64(shard.Count), math.MaxUint64-1) + 1
}

// carriedState is the rest of a search's divergence line: a run that
// diverged when checked in the process that ran many may replay cleanly
// on its own, when the handlers keep state in the process from one run
// to the next, which verify of the one trace cannot see.
func carriedState(prog string) string {
	return fmt.Sprintf(" (if it replays cleanly there, the handlers carry state from one run to the next in the process, such as package-level variables: %s vet names writes to them)", prog)
}
