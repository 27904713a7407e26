package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/predicates"
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
// (exit 4: that seed was not fully checked).
func (a *App) huntSeeds(sys *system.System, cfg sim.Config, f simFlags) error {
	if f.seeds == "" || f.check == "" {
		return badInput("--seeds and --check go together: --seeds FROM-TO --check PREDS.star")
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
	script, err := a.resolveScript(f.check)
	if err != nil {
		return err
	}
	out := f.output
	if out == "" {
		out = fmt.Sprintf("%s-%s-hunt.lz4", sys.Name, cfg.Bug)
	}
	prog := a.progress()
	start := time.Now()
	steps, screened := 0, 0
	for seed := from; seed <= to; seed++ {
		cfg.Seed = seed
		prog.update("seed %d (%d of %d), %d steps checked", seed, seed-from+1, to-from+1, steps)
		runStart := time.Now()
		res, err := simtest.Run(sys, cfg, script.Path, simtest.Options{Registry: a.Registry, Counts: counts, StopAtFirst: true,
			MaxSteps: maxSteps, MemoryBudget: memory, TimeBudget: timeBudget})
		var evalErr *predicates.EvalError
		if err != nil && !(errors.As(err, &evalErr) && res != nil) {
			prog.done()
			var se *predicates.ScriptError
			if errors.As(err, &se) {
				return badInput("%v", err)
			}
			return withCode(ExitViolations, fmt.Errorf("seed %d: %w", seed, err))
		}
		steps += res.Report.Steps
		for _, v := range res.Report.Violations {
			if v.Status() == "screened" {
				screened++
			}
		}
		if len(res.Failing) == 0 && evalErr == nil {
			continue
		}
		// A seed whose check failed to evaluate is not clean: stop there,
		// as at a violation, with the trace and the commands.
		prog.done()
		file, err := createAtomic(out)
		if err != nil {
			return err
		}
		defer file.Abort()
		if _, err := file.Write(res.Trace); err != nil {
			return err
		}
		if err := file.Commit(); err != nil {
			return err
		}
		if evalErr != nil {
			at := evalErr.Failures[0].Step
			fmt.Fprintf(a.Stdout, "seed %d could not be fully checked (%d of seeds %d-%d tried): a predicate failed at step #%d\n\n", seed, seed-from+1, from, to, at)
			res.Report.WriteText(a.Stdout, time.Since(runStart))
			res.Report.WriteErrors(a.Stderr)
			fmt.Fprintf(a.Stdout, "wrote %s\nreproduce: %s\ndebug:     replay debug %s --preds %s --at %d\n",
				out, simtest.SimCommand(sys, res.Config, out), out, shellQuote(script.Name), at)
			return &exitError{ExitPredicateError, fmt.Errorf("seed %d: %d evaluation error(s) (above): the seed was not fully checked", seed, len(evalErr.Failures))}
		}
		v := res.Failing[0]
		fmt.Fprintf(a.Stdout, "seed %d fails (%d of seeds %d-%d tried): %s\n\n", seed, seed-from+1, from, to, v.Headline())
		res.Report.WriteText(a.Stdout, time.Since(runStart))
		fmt.Fprintf(a.Stdout, "wrote %s\nreproduce: %s\ndebug:     replay debug %s --preds %s --at %d\n",
			out, simtest.SimCommand(sys, res.Config, out), out, shellQuote(script.Name), v.Step)
		return &exitError{ExitViolations, fmt.Errorf("seed %d: %s", seed, v.Headline())}
	}
	prog.done()
	fmt.Fprintf(a.Stdout, "seeds %d-%d of %s (bug %s): %d runs, %d steps checked in %v: no violation counted by --fail-on %s",
		from, to, sys.Name, cfg.Bug, to-from+1, steps, time.Since(start).Round(time.Millisecond), f.failOn)
	if screened > 0 {
		fmt.Fprintf(a.Stdout, " (%d liveness interval(s) screened by stability measures)", screened)
	}
	fmt.Fprintln(a.Stdout)
	return nil
}
