package cli

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/replaycheck/replaycheck/internal/shellword"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/stall"
	"github.com/replaycheck/replaycheck/statedb"
	"github.com/replaycheck/replaycheck/tui"
)

type indexFlags struct {
	preds  string
	db     string
	force  bool
	damage damageFlag
}

func (a *App) indexCmd() *cobra.Command {
	var f indexFlags
	cmd := &cobra.Command{
		Use:   "index FILE... [--preds P]",
		Short: "Build the trace database the debugger reads (replay debug builds it too)",
		Long: `Replay the traces once and store, in a database beside them, what the
debugger needs to travel anywhere in the run without replaying from the
start: the step index (node, seq, Lamport clock, kind, one-line summary, log
lines, message links), every field of every node's state as versions keyed
by step (so a field's history is one read), checkpoints of each node's
state, and, with --preds, the predicates' violations and the steps where
each predicate flips.

The database is FILE.db for one trace file and FIRST+N.HASH.db beside the
first of several (--db names another). It records a fingerprint of the
trace files and is rebuilt when they change; an up-to-date database is
reused, and a database without results for the --preds script as it is now
is re-checked. A build writes to a temporary directory that appears under
the database's name only when complete; the database it replaces is moved
aside and removed once no debugger reads it. One process at a time builds a
database (another waits for it and says so); any number of debuggers read
it at once. A database that cannot be read (a table file cut short) is
rebuilt.

Memory: the trace loaded as replay verify loads it (about 1 GB per million
events), plus the database's buffers, which do not grow with the trace
(docs/performance.md).

Exit codes: 0 built or up to date, 2 bad input (unreadable trace, script
error), 3 replay diverged from the recording (nothing is kept), 130
interrupted (Ctrl-C or SIGTERM: nothing half-built is kept).`,
		Example: `  replay index paxos.lz4 --preds scripts/paxos.star
  replay index n1.lz4 n2.lz4 n3.lz4 --db /tmp/cluster.db`,
		Args: requireArgs(1, "FILE (a trace file)"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runIndex(args, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.preds, "preds", "", "predicates script whose results to store")
	f.damage.register(fl)
	fl.StringVar(&f.db, "db", "", "database directory (default: beside the first trace file)")
	fl.BoolVar(&f.force, "force", false, "rebuild even if the database is up to date")
	return cmd
}

type debugFlags struct {
	preds     string
	db        string
	at        int
	budget    int // futures p explores
	depth     int // and their events at most
	faults    int // and the crashes each may inject
	walks     int // c's random walks per probed step
	walkSteps int // and their length
	keepDown  bool
}

func (a *App) debugCmd() *cobra.Command {
	var f debugFlags
	cmd := &cobra.Command{
		Use:   "debug FILE... [--preds P] [--at STEP]",
		Short: "Time-travel debugger: step through the run, inspect any node at any step",
		Long: `Open the time-travel debugger on the traces: a timeline of every step, the
message flow around the cursor (one column per node, arrows from send to
receipt, lost messages marked), the full state of any node at the cursor as
a tree with the fields the step changed highlighted, a field's history, a
diff against another step, the predicates' violations, and watches
(Starlark expressions evaluated at the cursor).

Step forward and back, on the same node, to the next violation, follow a
message to its send or receipt, run until a predicate or watch changes,
edit the predicates file and re-check the same run with r. Press ? for
every key; docs/debugger.md walks through a session.

p predicts from the cursor's step as replay predict does (--budget
futures of --depth events, each injecting up to --faults crashes) and lists the safety violations the futures reach; Enter opens a
branch trace at its violation, b comes back. On a liveness alarm, c
searches its critical transition as replay critical does (--walks,
--walk-steps) and goes to the critical step. Their branch traces are
written beside the trace (TRACE-atSTEP-predict-N.lz4,
TRACE-recovering.lz4).

The first open builds the trace database (see replay index) in the
background: the debugger opens at once on the steps indexed so far, the
status line says how far indexing got, and --at waits until its step is
indexed. Later opens reuse the database.`,
		Example: `  replay debug paxos.lz4 --preds scripts/paxos.star --at 269
  replay debug n1.lz4 n2.lz4 n3.lz4`,
		Args: requireArgs(1, "FILE (a trace file)"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runDebug(args, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.preds, "preds", "", "predicates script: violations, run-until-change, and tables for watches")
	fl.IntVar(&f.at, "at", 0, "start with the cursor at this step")
	fl.StringVar(&f.db, "db", "", "database directory (default: beside the first trace file)")
	fl.IntVar(&f.budget, "budget", defaultPredictBudget, "p (predict): futures to run at most")
	fl.IntVar(&f.depth, "depth", defaultPredictDepth, "p (predict): events per future at most (a failover may need hundreds)")
	fl.IntVar(&f.faults, "faults", 0, "p (predict): crashes each future may inject")
	fl.IntVar(&f.walks, "walks", defaultWalks, "c (critical transition): random walks per probed step")
	fl.IntVar(&f.walkSteps, "walk-steps", defaultWalkSteps, "c (critical transition): events per walk at most")
	fl.BoolVar(&f.keepDown, "keep-down", false, "c (critical transition): walks leave nodes down that are down where they start (fail-stop)")
	return cmd
}

// openDB builds or reuses the trace database, showing progress, and warns
// of what the trace lost (unless the caller, which loaded it, warned).
func (a *App) openDB(traces []string, preds, dir string, force, warned bool) (*statedb.DB, *statedb.Opened, error) {
	for _, t := range traces {
		if st, err := os.Stat(t); err != nil {
			return nil, nil, badInput("%v", err)
		} else if st.IsDir() {
			return nil, nil, badInput("%s is a directory, not a trace file", t)
		}
	}
	if preds != "" {
		if _, err := os.Stat(preds); err != nil {
			return nil, nil, badInput("--preds: %v", err)
		}
	}
	// Ctrl-C (or SIGTERM) abandons a build: nothing half-built is kept.
	interrupted, stopSignals := onInterrupt(syscall.SIGTERM)
	defer stopSignals()
	prog := a.progress()
	db, res, err := statedb.Ensure(traces, dir, statedb.Options{Registry: a.Registry, Preds: preds, Force: force, Watch: a.watch,
		Progress: func(phase string, done, total int) {
			prog.update("%s %s step %d of %d", phase, bar(done, total, 30), done, total)
		},
		Stop: interrupted.Load,
		Waiting: func(pid int) {
			who := "another replay"
			if pid > 0 {
				who = fmt.Sprintf("another replay (pid %d)", pid)
			}
			fmt.Fprintf(a.Stderr, "%s is building the trace database beside %s; waiting for it to finish (Ctrl-C stops)\n", who, traces[0])
		}})
	prog.done()
	if err != nil {
		var d *replay.Divergence
		var se *predicates.ScriptError
		var pe *fs.PathError
		switch {
		case errors.Is(err, statedb.ErrStopped):
			return nil, nil, &exitError{ExitInterrupted, err}
		case errors.As(err, &d):
			fmt.Fprint(a.Stdout, d.ReportAs(a.prog()))
			return nil, nil, &exitError{ExitDivergence, fmt.Errorf("cannot index a trace that does not replay: %s", oneLine(d.Error()))}
		case errors.As(err, &se), errors.As(err, &pe):
			return nil, nil, badInput("%v", err)
		}
		return nil, nil, badInput("%v", err)
	}
	if res.Warning != "" {
		fmt.Fprintf(a.Stderr, "warning: %s\n", res.Warning)
	}
	if tr := res.Trace; warned {
		// The caller loaded the trace and warned.
	} else if tr != nil {
		a.warnLoaded(tr, nil)
	} else {
		a.warnUnknownFromDB(db)
	}
	return db, res, nil
}

// bar draws a progress bar of width cells.
func bar(done, total, width int) string {
	fill := 0
	if total > 0 {
		fill = done * width / total
	}
	return "[" + strings.Repeat("#", fill) + strings.Repeat(".", width-fill) + fmt.Sprintf("] %3.0f%%", 100*float64(done)/float64(max(total, 1)))
}

func (a *App) runIndex(traces []string, f indexFlags) error {
	preds, err := a.resolveOptional(f.preds)
	if err != nil {
		return err
	}
	db, res, err := a.openDB(traces, preds.Path, f.db, f.force, false)
	if err != nil {
		return err
	}
	meta, p, dir := db.Meta(), db.Predicates(), db.Dir()
	// Measured closed: an open Badger holds preallocated log files.
	if err := db.Close(); err != nil {
		return err
	}
	what := "up to date"
	if res.Built {
		what = fmt.Sprintf("built in %.2fs", meta.IndexSeconds)
		if res.Why != "new" {
			what += " (" + res.Why + ")"
		}
	}
	fmt.Fprintf(a.Stdout, "%s: %s (%s): %d steps, %d nodes, %d field versions\n",
		dir, what, humanize.IBytes(uint64(statedb.SizeOnDisk(dir))), meta.Steps, len(meta.Nodes), meta.Fields)
	if p != nil {
		checked := "stored"
		if res.Checked {
			checked = "checked"
		}
		// Counted as replay check counts: screened intervals are not violations.
		violations := 0
		for _, v := range p.Violations {
			if v.Finding() {
				violations++
			}
		}
		// An interval open where checking stopped, or that nothing could
		// judge, was not screened: check says "not judged" of it.
		unjudged := 0
		for _, v := range p.Violations {
			if !v.Finding() && v.Unjudged {
				unjudged++
			}
		}
		screened := ""
		if n := len(p.Violations) - violations - unjudged; n > 0 {
			screened = fmt.Sprintf(", %d liveness interval(s) not raised (closed, or screened by an alarm function)", n)
		}
		if unjudged > 0 {
			screened += fmt.Sprintf(", %d liveness interval(s) not judged (open where checking stopped, or its alarm function failed)", unjudged)
		}
		script := p.Script
		if preds.Name != "" {
			script = preds.Name // not the temporary copy of a bundled script
		}
		errs := ""
		if n := len(p.Errors); n > 0 {
			errs = fmt.Sprintf(", %d predicate error(s): not fully checked", n)
		}
		if p.Lossy {
			errs += ", of what was recorded and recovered only"
		}
		if !res.Checked {
			if why := p.Outdated(); why != "" {
				checked = fmt.Sprintf("stored, outdated: %s; --preds %s checks it again", why, shellword.Path(script))
			}
		}
		fmt.Fprintf(a.Stdout, "predicates %s (%s): %d violation(s)%s%s\n", script, checked, violations, screened, errs)
		// A predicate that could not be evaluated means the stored results
		// are incomplete: say so where errors go, and exit as check does.
		for _, e := range p.Errors {
			fmt.Fprintf(a.Stderr, "%s index: predicate error: %s\n", a.name(), e)
		}
	}
	fmt.Fprintf(a.Stdout, "next: %s debug %s", a.prog(), shellword.Paths(traces))
	if f.preds != "" {
		fmt.Fprintf(a.Stdout, " --preds %s", shellword.Path(preds.Name))
	}
	fmt.Fprintln(a.Stdout)
	if res.Warning != "" {
		// index has no session to keep them for: what it was asked to
		// store is not there.
		return withCode(ExitBadInput, fmt.Errorf("the predicate results were checked but not stored (warning above): the next index or debugger checks them again"))
	}
	if p != nil && len(p.Errors) > 0 {
		return &exitError{ExitPredicateError, fmt.Errorf("%d predicate error(s): the run was not fully checked", len(p.Errors))}
	}
	if p != nil && p.Lossy && !f.damage.allow {
		// As check exits: the database is built, but its results are
		// not a verdict on the whole run.
		return badInput("the trace lacks part of the run (warnings above): only what was recorded and recovered was checked; the database was built; --allow-damaged takes that as the whole run")
	}
	return nil
}

func (a *App) runDebug(traces []string, f debugFlags) error {
	if a.Screen == nil && !term.IsTerminal(int(os.Stdout.Fd())) {
		// A missing trace is the first thing wrong, terminal or not.
		for _, t := range traces {
			if _, err := os.Stat(t); err != nil {
				return badInput("%s: %v", t, withoutPath(err))
			}
		}
		return badInput("debug needs a terminal (to inspect a run without one: %[1]s events, %[1]s check)", a.prog())
	}
	// Steps are #0 onwards; say so before spending an index build on it.
	if f.at < 0 {
		return badInput("--at %d: steps are numbered from #0", f.at)
	}
	if err := checkAtLeast(atLeast{"budget", f.budget, 1}, atLeast{"depth", f.depth, 1}, atLeast{"faults", f.faults, 0}, atLeast{"walks", f.walks, 1}, atLeast{"walk-steps", f.walkSteps, 1}); err != nil {
		return err
	}
	preds, err := a.resolveOptional(f.preds)
	if err != nil {
		return err
	}
	cfg := tui.Config{Traces: traces, Registry: a.Registry, Preds: preds.Path, PredsName: preds.Name, At: f.at}
	cfg.Predict, cfg.Critical = a.debugSearches(f, statTraces(traces))
	// A signal (kill, a closed terminal, Ctrl-C sent from outside: the
	// screen takes the key itself) ends the session as q does, so that
	// the terminal is given back and a background build is stopped and
	// removed, rather than the process dying with the terminal raw. It
	// is caught from before the build starts; one that comes before the
	// screen is up ends the session as soon as it is.
	watched := []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
	done := handling(watched)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, watched...)
	var got atomic.Bool // a signal ended the session
	defer func() { signal.Stop(sigs); close(sigs); done(got.Load()) }()
	// What loading the trace warns of is printed, then covered by the
	// screen: the session opens on it too.
	warned := &warningLines{}
	loud := *a
	loud.Stderr = io.MultiWriter(a.Stderr, warned)
	// A trace without a database opens at once: the debugger indexes it
	// in the background and browses what is indexed meanwhile.
	bg, err := loud.startBuild(traces, preds.Path, f.db)
	if err != nil {
		return err
	}
	if bg != nil {
		cfg.Building = bg
		if total := bg.DB.Meta().Steps; f.at >= total {
			bg.Close()
			return badInput("--at %d: the trace has %d steps (#0..#%d)", f.at, total, total-1)
		}
	} else {
		db, res, err := loud.openDB(traces, preds.Path, f.db, false, false)
		if err != nil {
			return err
		}
		defer db.Close()
		if f.at >= db.Len() {
			return badInput("--at %d: the trace has %d steps (#0..#%d)", f.at, db.Len(), db.Len()-1)
		}
		cfg.DB, cfg.Trace = db, res.Trace
	}
	cfg.Warnings = warned.lines
	m, err := tui.New(cfg)
	if err != nil {
		if bg != nil {
			bg.Close()
		}
		return badInput("%v", err)
	}
	// The branches' databases, and the background build's (stopped if
	// still running); the deferred db.Close above is the trace's.
	defer m.Close()
	view := tui.NewView(m, a.Screen)
	go func() {
		if s, ok := <-sigs; ok {
			got.Store(true)
			view.End(&exitError{ExitInterrupted, fmt.Errorf("%v: the debugger closed", s)})
		}
	}()
	return view.Run()
}

// warningLines keeps the "warning: " and "note: " lines written to it
// (progress drawn with carriage returns in between is dropped).
type warningLines struct {
	partial []byte
	lines   []string
}

func (w *warningLines) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if j := strings.LastIndexByte(line, '\r'); j >= 0 {
			line = line[j+1:]
		}
		line = strings.TrimPrefix(line, "\033[K")
		if strings.HasPrefix(line, "warning: ") || strings.HasPrefix(line, "note: ") {
			w.lines = append(w.lines, line)
		}
	}
}

// startBuild starts building the database of traces for the debugger to
// index in the background, or returns nil when there is nothing to build
// (or another process builds it: openDB waits for it and says so).
func (a *App) startBuild(traces []string, preds, dir string) (*statedb.Building, error) {
	for _, t := range traces {
		if st, err := os.Stat(t); err != nil {
			return nil, badInput("%v", err)
		} else if st.IsDir() {
			return nil, badInput("%s is a directory, not a trace file", t)
		}
	}
	if preds != "" {
		if _, err := os.Stat(preds); err != nil {
			return nil, badInput("--preds: %v", err)
		}
	}
	if need, err := statedb.NeedsBuild(traces, dir); err != nil || !need {
		return nil, nil // openDB says what is wrong
	}
	// The script is loaded before the screen is up, under a watch of the
	// build's own (the command's would end the session with the
	// terminal raw once the screen is up): a load stuck in one Starlark
	// step left a blank terminal for good, deaf to Ctrl-C.
	w := stall.NewWatch()
	var bg *statedb.Building
	var err error
	st, gaveUp, _ := w.Run(func() {
		bg, err = statedb.StartBuild(traces, dir, statedb.Options{Registry: a.Registry, Preds: preds, Watch: w})
	}, func() time.Duration { return 0 }, nil, nil)
	if gaveUp {
		return nil, badInput("%s; the debugger did not open", predicates.StuckFailure(st))
	}
	if errors.Is(err, statedb.ErrBusy) {
		return nil, nil
	}
	if err != nil {
		var se *predicates.ScriptError
		if errors.As(err, &se) {
			return nil, badInput("%v", err)
		}
		return nil, badInput("%v", err)
	}
	a.warnLoaded(bg.Trace(), nil)
	return bg, nil
}

// predictFlags are replay predict's flags for p at step: the debugger's
// --budget, --depth and --faults, predict's defaults otherwise.
func (f debugFlags) predictFlags(step int, budgets scriptBudgetFlags) predictFlags {
	pf := predictFlags{at: step, depth: cmp.Or(f.depth, defaultPredictDepth), strategy: defaultPredictStrategy, budget: f.budget, faults: f.faults, jobs: 1, warmup: defaultForkWarmup}
	pf.sim.seed, pf.sim.budgets = 1, budgets
	pf.sim.changed = func(string) bool { return false }
	return pf
}

// debugSearches are replay predict's and replay critical's searches for
// the debugger's p and c, with their defaults but for the flags debug
// takes, writing branch traces beside the trace they start from. They
// print nothing: the debugger owns the terminal, and hears progress and
// results through the functions.
func (a *App) debugSearches(f debugFlags, opened []os.FileInfo) (tui.PredictFunc, tui.CriticalFunc) {
	// The searches load the trace files again: from the files the
	// debugger opened, not whatever is at their paths now (a run copied
	// over one gave predictions of another run).
	load := func(traces []string) (*replay.Trace, error) {
		if err := unchangedTraces(traces, opened); err != nil {
			return nil, err
		}
		return replay.Load(traces...)
	}
	quiet := *a
	quiet.Stderr, quiet.Terminal = io.Discard, false
	// A search's replay that does not return is not given up on under the
	// screen: Run would end the command with the terminal raw (q still
	// ends the session).
	quiet.watch = nil
	budgets := scriptBudgetFlags{maxSteps: predicates.DefaultMaxSteps, memory: humanize.IBytes(predicates.DefaultMemoryBudget),
		timeBudget: predicates.DefaultTimeBudget}
	predict := func(ctx context.Context, traces []string, script string, step int, progress func(string)) (*tui.Predicted, error) {
		tr, err := load(traces)
		if err != nil {
			return nil, err
		}
		defer tr.Close() // a spilled trace's file, as large as the trace
		if err := checkForkStep(tr, step, traces); err != nil {
			return nil, err
		}
		found, err := quiet.predict(ctx, tr, script, f.predictFlags(step, budgets), progress)
		if err != nil {
			return nil, err
		}
		// Named by the step too: predictions from another step of the
		// same trace do not overwrite these.
		prefix := fmt.Sprintf("%s-at%d-predict", strings.TrimSuffix(traces[0], ".lz4"), step)
		if err := writePredictions(found.preds, prefix, true); err != nil {
			return nil, err
		}
		out := &tui.Predicted{From: step, Futures: found.sum.Runs, Stopped: found.sum.Stopped}
		for _, n := range found.notes {
			out.Notes = append(out.Notes, "note: "+n) // as predict prints it, and the critical popup
		}
		if len(found.liveness) > 0 {
			out.Notes = append(out.Notes, "note: "+livenessNotJudged(found.liveness, a.prog()))
		}
		for _, p := range found.preds {
			v := p.violation
			out.Predictions = append(out.Predictions, tui.Prediction{Predicate: v.Predicate, Witness: v.Witness, Step: v.Step, Trace: p.file})
		}
		for _, v := range found.earlier {
			out.Earlier = append(out.Earlier, fmt.Sprintf("%s (#%d)", v.Predicate, v.Step))
		}
		slices.Sort(out.Earlier)
		for _, fd := range found.sum.Found {
			if fd.Panic != nil || fd.Stall != nil {
				out.Notes = append(out.Notes, fmt.Sprintf("future %d: %s", fd.Run, fd.Headline()))
			}
		}
		return out, nil
	}
	critical := func(ctx context.Context, traces []string, script, predicate string, alarm int, progress func(string)) (*tui.Transition, error) {
		tr, err := load(traces)
		if err != nil {
			return nil, err
		}
		defer tr.Close()
		cf := criticalFlags{predicate: predicate, alarm: alarm, walks: f.walks, walkSteps: f.walkSteps, keepDown: f.keepDown, stable: defaultStable, jobs: 1, warmup: defaultForkWarmup, seed: 1,
			budgets: budgets, changed: func(string) bool { return false }}
		found, err := quiet.critical(ctx, tr, script, cf, progress)
		if err != nil {
			return nil, err
		}
		res := found.res
		out := &tui.Transition{Predicate: predicate, Critical: res.Critical, LastLive: res.LastLive, Probes: res.Probes,
			Walks: f.walks, Stopped: res.Stopped, Notes: found.notes}
		for _, m := range found.becameLost {
			out.BecameLost = append(out.BecameLost, tui.Lost{Type: m.Type, From: string(m.ID.From), To: string(m.To), SendStep: m.SendStep, ReceiverDown: m.receiverDown && m.crashStep >= 0, CrashStep: m.crashStep})
		}
		if res.LastLive >= 0 && res.Critical >= 0 && found.recovering != nil {
			file, err := writeFresh(strings.TrimSuffix(traces[0], ".lz4")+"-recovering.lz4", found.recovering)
			if err != nil {
				return nil, err
			}
			out.Recovering = file
		}
		return out, nil
	}
	return predict, critical
}

// statTraces is what the trace files are when the debugger opens them
// (nil where one cannot be read: the open says why).
func statTraces(traces []string) []os.FileInfo {
	out := make([]os.FileInfo, len(traces))
	for i, t := range traces {
		out[i], _ = os.Stat(t)
	}
	return out
}

// unchangedTraces refuses trace files that are no longer those opened
// (another file at the path, or the file written since).
func unchangedTraces(traces []string, opened []os.FileInfo) error {
	for i, t := range traces {
		if i >= len(opened) || opened[i] == nil {
			continue
		}
		now, err := os.Stat(t)
		if err != nil {
			return fmt.Errorf("%s: %w (the debugger opened it; reopen the debugger on the trace as it is now)", t, err)
		}
		was := opened[i]
		if !os.SameFile(was, now) || was.Size() != now.Size() || !was.ModTime().Equal(now.ModTime()) {
			return fmt.Errorf("%s changed on disk since the debugger opened it: a search would run on another trace than the one shown; reopen the debugger on it", t)
		}
	}
	return nil
}
