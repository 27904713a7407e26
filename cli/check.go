package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/replaycheck/replaycheck/internal/shellword"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/parcheck"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
)

type checkFlags struct {
	asJSON      bool
	from, to    int
	stopAtFirst bool
	failOn      string
	nodes       []string
	budgets     scriptBudgetFlags
	jobs        int
	warmup      int
	marks       []int
	damage      damageFlag
	// strictTables: a table that matched no object is an error.
	strictTables bool
}

func (a *App) checkCmd() *cobra.Command {
	var f checkFlags
	cmd := &cobra.Command{
		Use:   "check FILE... PREDS.star",
		Short: "Replay traces and check Starlark predicates after every step",
		Long: `Replay the traces in causal order and, after every step, evaluate the
predicates declared in PREDS.star over the states of all nodes.

A safety violation is an exact point, reported once per distinct break:
each witness row (node and path) that starts failing, also while the
predicate is already false for other rows. A liveness predicate may be false for a while;
each stretch where it is false is an interval, and the script's stability
measures (aux) and alarm function decide which intervals are raised as
alarms (by default: an interval still open at the end of the trace).

The report gives, per violation, the predicate, the step, time, Lamport
clock, node and event, the witness (the row a failing forall found) and the
stability measures, then a summary, and ends with the command that opens the
debugger at the first violation. See docs/predicates.md for the language.

A predicate, derived value or stability measure that fails while
evaluating (raises, returns a non-bool, runs out of its step, memory or
time budget) is disabled and the others go on; the failure goes to stderr
and the run counts as not fully checked. The budgets hold for the
script's load and for each evaluation: --max-steps Starlark steps,
--script-memory of heap growth, --script-time of wall-clock time. The
script (and every module it loads) must be a regular file of at most
4 MiB in its own folder, symlinks resolved.

--jobs N checks on N cores: the trace is split into segments, each
started from a checkpoint of the world taken by a cheap pass without
predicates, warmed up over the --warmup steps before it, and taken over
at its border only if its checker state there is the sequential run's;
otherwise the previous segment checks on. The report is byte for byte
that of --jobs 1 (the default); a line on stderr says how the work was
split. Budgets hold per evaluation as before, but the heap and the
cores are shared: with N jobs an evaluation's heap growth may include
other segments' allocations, and it takes longer on busy cores, so give
--script-memory and --script-time room.

A damaged trace file (truncated or corrupt: a warning names it) is
checked as far as it was recovered, but its end is not the run's end:
intervals still open there are left unjudged, the report is not
complete, and a check that reached it without finding a violation exits
2 after the report. --allow-damaged checks what was recovered as the
whole run and exits as if nothing were lost. Files of nodes that --nodes
leaves out do not count.
When no file has an end record (every recording was killed or is still
running), the run went on past the trace's end: intervals open there are
likewise left unjudged (a warning says so), with the usual exit code;
--allow-damaged judges them as at the end of the run. A recording that
stopped before the run ended (a gap to the end: a full disk, a merge of
a cut file), or lost events on the way (a gap in the middle: a live
recorder that fell behind), is a loss: intervals open at the end are
unjudged and the check exits 2 after its report, unless --allow-damaged.

A node the traces' header lists but no file records (a file left
behind) is unknown throughout; the check warns and exits 2 likewise.

Exit codes: 0 nothing that --fail-on counts, 1 violations, 2 bad input
(unreadable trace, a damaged one checked past its loss, a node's file
missing, a node's recording stopped early, script error with file:line:col), 3 replay divergence, 4 a
predicate could not be evaluated, 130 interrupted (Ctrl-C or SIGTERM: the
report of the steps checked is printed first, open intervals unjudged; a
violation found before outranks it). 4 outranks the others but
130; a violation decided before a loss outranks 2, one after it does not.
With --strict-tables, a table that matched no object exits 4 when
nothing else decided the exit (a violation's 1 outranks it).`,
		Example: `  replay check paxos.lz4 scripts/paxos.star
  replay check --json --stop-at-first paxos.lz4 scripts/paxos.star
  replay check n1.lz4 n2.lz4 n3.lz4 scripts/raft.star --nodes 1,2
  replay check --jobs 2 long.lz4 scripts/paxos.star`,
		Args: requireArgs(2, "FILE... PREDS.star (trace files, then the predicates script)"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runCheck(args, f) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.asJSON, "json", false, "print the report as one JSON object")
	fl.IntVar(&f.from, "from", 0, "evaluate predicates from this step on (replay and derived values still start at #0, and a derived value failing before it is an error; a break found at this step may be older)")
	fl.IntVar(&f.to, "to", -1, "stop after this step (-1: the end); intervals still open there are left unjudged, not alarms")
	fl.BoolVar(&f.stopAtFirst, "stop-at-first", false, "stop at the first violation --fail-on counts")
	fl.StringVar(&f.failOn, "fail-on", "safety,alarm", "which findings make the exit code 1: safety, alarm, any (every violation, screened intervals too once judged), none; comma-separated")
	fl.StringSliceVar(&f.nodes, "nodes", nil, "replay only these nodes (partial replay; the others' rows are absent)")
	fl.IntVar(&f.jobs, "jobs", 1, "check on this many cores (0: all); the report is that of --jobs 1")
	fl.IntVar(&f.warmup, "warmup", parcheck.DefaultWarmup, "with --jobs: steps each segment evaluates before the first step it owns")
	fl.IntSliceVar(&f.marks, "marks", nil, "with --jobs: the steps segments start at (the seams an earlier check --jobs printed), instead of borders chosen as the work goes; at most --jobs segments (2 at least) run at once")
	fl.BoolVar(&f.strictTables, "strict-tables", false, strictTablesUsage)
	f.damage.register(fl)
	f.budgets.register(fl)
	return cmd
}

// saySlow notes on stderr, while the check goes on, a derived
// value slow to evaluate, or a derived value or predicate whose
// evaluations take much of the check: a new user's value grew by 4,000
// elements a step, and another's predicate scanned every row for every
// row; both checks crawled for minutes within every budget without a
// word of why.
func (a *App) saySlow(s predicates.SlowEvaluation) {
	holds := ""
	if s.Size >= 0 {
		holds = fmt.Sprintf(" (its value holds %s)", plural(s.Size, "element"))
	}
	const cheap = `docs/predicates.md "Predicates that stay cheap"`
	if s.Took > 0 {
		fmt.Fprintf(a.Stderr, "note: derived value %q took %v to evaluate at #%d%s: each evaluation that changes it rebuilds, copies and compares the whole value; keep derived values small (a count, a bounded window), %s\n",
			s.Name, s.Took.Round(time.Millisecond), s.Step, holds, cheap)
		return
	}
	what := fmt.Sprintf("%s predicate %q", s.Kind, s.Name)
	if s.Kind == "derived" {
		what = fmt.Sprintf("derived value %q%s", s.Name, holds)
	}
	share := fmt.Sprintf("about %v", s.Spent.Round(100*time.Millisecond))
	if s.Spent >= s.Elapsed*19/20 { // an estimate: it may come out above the whole
		share = "nearly all"
	}
	fmt.Fprintf(a.Stderr, "note: %s took %s of the %v this check has run (to #%d, %s): it is what makes the check slow; --starlark-profile FILE shows where its time goes, %s\n",
		what, share, s.Elapsed.Round(100*time.Millisecond), s.Step, plural(s.Evals, "evaluation"), cheap)
}

// onceEach passes on each derived value's or predicate's first note
// only: with --jobs every segment's checker notes it once, and segments
// run at once.
func onceEach(say func(predicates.SlowEvaluation)) func(predicates.SlowEvaluation) {
	var mu sync.Mutex
	said := map[string]bool{}
	return func(s predicates.SlowEvaluation) {
		mu.Lock()
		defer mu.Unlock()
		if k := s.Kind + " " + s.Name; !said[k] {
			said[k] = true
			say(s)
		}
	}
}

// strictTablesUsage is --strict-tables' help, the same for every verb that
// checks.
const strictTablesUsage = "a table that matched no object in the steps checked (every run, in a search) is an error, exit 4, not a warning: a misspelt type name behind an interface cannot be refused at load"

// strictTables is --strict-tables' verdict on the tables that matched no
// object (in what in names): exit 4, as for a predicate that could not
// be evaluated, since theirs held vacuously. Nil when there are none.
func strictTables(tables []predicates.UnmatchedTable, in string) error {
	if len(tables) == 0 {
		return nil
	}
	return &exitError{ExitPredicateError, fmt.Errorf("--strict-tables: %s matched no object %s; the first: %s", plural(len(tables), "table"), in, tables[0])}
}

// failPolicy parses --fail-on into a predicate over violations.
func failPolicy(spec string) (func(*predicates.Violation) bool, error) {
	var safety, alarm, any bool
	for _, p := range strings.Split(spec, ",") {
		switch strings.TrimSpace(p) {
		case "safety":
			safety = true
		case "alarm":
			alarm = true
		case "any":
			any = true
		case "none":
		default:
			return nil, fmt.Errorf("--fail-on %q: want safety, alarm, any or none (comma-separated)", spec)
		}
	}
	return func(v *predicates.Violation) bool {
		// any: every judged violation, screened intervals too; not an
		// interval still open or left unjudged where checking stopped.
		return any && v.Judged() || safety && v.Kind == "safety" || alarm && v.Kind == "liveness" && v.Alarm
	}, nil
}

// adviseAfter is how long a check runs before it says which tables would
// check the same for less with columns=: below it, the saving is not
// worth a line.
const adviseAfter = time.Second

func splitScript(args []string) ([]string, string, error) {
	script := args[len(args)-1]
	if !isScriptArg(script) {
		if i := slices.IndexFunc(args, isScriptArg); i >= 0 {
			return nil, "", badInput("the last argument %q is not a predicates script (*.star or builtin:NAME), but %q is: the script comes after the traces", script, args[i])
		}
		if exists(script + ".star") {
			return nil, "", badInput("the last argument %q is not a predicates script (*.star or builtin:NAME): did you mean %s?", script, shellword.Path(script+".star"))
		}
		return nil, "", badInput("the last argument %q is not a predicates script (*.star or builtin:NAME)", script)
	}
	return args[:len(args)-1], script, nil
}

func (a *App) runCheck(args []string, f checkFlags) error {
	traces, arg, err := splitScript(args)
	if err != nil {
		return err
	}
	script, err := a.resolveScript(arg)
	if err != nil {
		return err
	}
	counts, err := failPolicy(f.failOn)
	if err != nil {
		return badInput("%v", err)
	}
	maxSteps, memory, timeBudget, err := f.budgets.parse()
	if err != nil {
		return err
	}
	if f.to < -1 {
		return badInput("--to %d: want a step, or -1 for the end", f.to)
	}
	if f.from < 0 || (f.to >= 0 && f.to < f.from) {
		return badInput("--from %d --to %d: want 0 <= FROM <= TO", f.from, f.to)
	}
	if f.jobs < 0 {
		return badInput("--jobs %d: want a number of cores, or 0 for all of them", f.jobs)
	}
	if err := jobsBound(f.jobs); err != nil {
		return err
	}
	if f.warmup < 1 {
		return badInput("--warmup %d: want at least 1 step", f.warmup)
	}
	// Ctrl-C (or SIGTERM) ends the check where it is, with the report of
	// what was checked: with --jobs, of the steps the segment that owns
	// the run so far got through. One while the trace loads is answered
	// once it has (a second one ends the process at once).
	interrupted, stopSignals := onInterrupt(syscall.SIGTERM)
	defer stopSignals()
	tr, err := a.loadTraceOf(traces, parseIDs(f.nodes))
	if err != nil {
		return err
	}
	r, err := replay.New(tr, a.Registry, replay.Options{Nodes: parseIDs(f.nodes), Watch: a.watch})
	if err != nil {
		return badInput("%v", err)
	}
	if n := r.Len(); f.from > 0 && f.from >= n {
		return badInput("--from %d: the trace has %d steps (#0..#%d), so nothing would be checked", f.from, n, n-1)
	}
	replayed := wanted(tr, f.nodes)
	if n := len(r.Nodes()); len(parseIDs(f.nodes)) > 0 && n < len(tr.Nodes) {
		// "checked N steps" counts every step, the others' too (time
		// passes at them): said here, where a user of --nodes 2,3 read
		// it as the steps replayed.
		steps := 0
		for _, id := range r.Nodes() {
			steps += len(tr.NodeSteps(id))
		}
		fmt.Fprintf(a.Stderr, "note: --nodes replays %d of the %d nodes, %d of the trace's %d steps (predicates are evaluated at every step, the others' too): the others' rows are absent (unknown_nodes() lists them), so predicates over every node, liveness ones above all, judge without them unless they consult unknown_nodes() (docs/predicates.md, under table())\n", n, len(tr.Nodes), steps, tr.Len())
	}
	if tr.NoEndRecord() && len(tr.DamagedFiles(replayed)) == 0 && !f.damage.allow {
		// Said after the load's warning that there is no end record.
		fmt.Fprintln(a.Stderr, "note: liveness intervals open at the trace's end are not judged; --allow-damaged judges them as at the end of the run")
	}
	popts := predicates.Options{MaxSteps: maxSteps, MemoryBudget: memory, TimeBudget: timeBudget, From: f.from, To: f.to,
		CutShort: tr.Incomplete(replayed) && !f.damage.allow, Slow: onceEach(a.saySlow)}
	c, err := predicates.Load(script.Path, r, popts)
	if err != nil {
		return badInput("%v", err)
	}
	prog := a.progress()
	start := time.Now()
	ropts := predicates.RunOptions{StopAtFirst: f.stopAtFirst, Counts: counts,
		Progress: func(step, total int) {
			prog.update("checking: step %d of %d (%.0f%%)", step, total, 100*float64(step)/float64(total))
		}}
	var rep *predicates.Report
	var runErr error
	checkers := []*predicates.Checker{c}
	var checkersMu sync.Mutex
	if interrupted.Load() {
		prog.done()
		return &exitError{ExitInterrupted, errors.New("interrupted before the first step: nothing was checked")}
	}
	ropts.Stop = interrupted.Load
	if f.jobs == 1 && len(f.marks) == 0 {
		rep, runErr = c.Run(ropts)
		stopSignals()
		prog.done()
	} else {
		var stats parcheck.Stats
		rep, stats, runErr = parcheck.Check(tr, a.Registry, parcheck.Options{
			Jobs: f.jobs, Warmup: f.warmup, Replay: replay.Options{Nodes: parseIDs(f.nodes), Watch: a.watch},
			Load: func(r *replay.Replayer, from int) (*predicates.Checker, error) {
				o := popts
				o.From = max(o.From, from)
				sc, err := predicates.Load(script.Path, r, o)
				if err == nil {
					checkersMu.Lock()
					checkers = append(checkers, sc)
					checkersMu.Unlock()
				}
				return sc, err
			},
			From: f.from, To: f.to, Run: ropts, Marks: f.marks,
		})
		stopSignals()
		prog.done()
		if rep == nil {
			return withCode(ExitBadInput, runErr)
		}
		fmt.Fprintf(a.Stderr, "%s check: %s\n", a.name(), stats)
	}
	elapsed := time.Since(start)
	var d *replay.Divergence
	if runErr != nil && !errors.As(runErr, &d) {
		return withCode(ExitBadInput, runErr)
	}
	otherBuilds := otherBuildsOf(tr)
	if d == nil {
		warnOtherBuilds(a.Stderr, a.name()+" check", otherBuilds)
	}
	failing := 0
	var first *predicates.Violation
	for _, v := range rep.Violations {
		// Nothing was evaluated before --from: a break found there may
		// be older.
		v.FirstChecked = f.from > 0 && v.Step == f.from
		if counts(v) {
			failing++
			if first == nil || v.Decided() < first.Decided() {
				first = v
			}
		}
	}
	if f.asJSON {
		out := struct {
			*predicates.ReportJSON
			Damaged    []string             `json:"damaged,omitempty"`
			Missing    []node.ID            `json:"missing_nodes,omitempty"`
			Stopped    []string             `json:"stopped_recordings,omitempty"`
			NoEnd      bool                 `json:"no_end_record,omitempty"`
			Unknown    map[node.ID][]string `json:"state_unknown,omitempty"`
			Divergence *replay.Divergence   `json:"divergence,omitempty"`
			// The builds other than this one that recorded the trace.
			OtherBuilds []string `json:"recorded_by_other_builds,omitempty"`
			Seconds     float64  `json:"seconds"`
		}{rep.JSON(), damageLines(tr.DamagedFiles(replayed)), tr.MissingOf(replayed), stopLines(tr.RecordingStops(replayed)),
			tr.NoEndRecord(), unknownStretches(tr, r.Nodes()), d, otherBuilds, elapsed.Seconds()}
		enc := json.NewEncoder(a.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		if d != nil {
			rep.Stopped = fmt.Sprintf("the replay diverged at #%d (below), so nothing after it was checked", d.Step)
		}
		rep.WriteText(a.Stdout, elapsed)
		if f.jobs == 1 && len(f.marks) == 0 && elapsed >= adviseAfter {
			for _, adv := range c.ColumnAdvice() {
				copies, versions := "", ""
				if adv.Keep > 1 {
					copies = fmt.Sprintf(" and copies them (keep = %d)", adv.Keep)
					versions = "; prev() and history() would then see a version per change of those fields only"
				}
				lists := ""
				if len(adv.Lists) > 0 {
					// Often the larger saving (a new user's long log: 13x).
					lists = fmt.Sprintf("; and %s, read as lists each time, would be read in place if declared views= (and told changed by length and last element if chained=, for a list only ever appended to)", strings.Join(adv.Lists, ", "))
				}
				fmt.Fprintf(a.Stderr, "note: table(%q) has no columns=, so each change of a row hashes all %d of its fields%s, but the predicates read only %d of them in this run (%s): declaring %s would spare the rest%s%s (docs/predicates.md, \"Predicates that stay cheap\")\n",
					adv.Table, adv.Fields, copies, len(adv.Read), strings.Join(adv.Read, ", "), adv.Declaration(), versions, lists)
			}
		}
		// Predicates judged without these nodes' rows there.
		writeUnknown(a.Stdout, tr.Unknown, r.Nodes(), "")
		writeFrontierNote(a.Stderr, tr, checkers)
		rep.WriteErrors(a.Stderr)
		if d != nil {
			fmt.Fprint(a.Stdout, d.ReportAs(a.prog()))
			writeBuildNote(a.Stdout, otherBuilds)
		}
		if first != nil {
			// Notes go before the command, which is pasted whole.
			var notes []string
			if len(f.nodes) > 0 {
				notes = append(notes, "the debugger replays every node, not only --nodes")
			}
			// An alarm opens at the step it was raised, as shrink's
			// command does: the interval's first step can be a harmless
			// one (a restart) where a predicate over a changing set
			// first failed for a pair that recovered.
			at := first.Decided()
			if at != first.Step {
				notes = append([]string{fmt.Sprintf("at its alarm; violated since #%d", first.Step)}, notes...)
			}
			note := ""
			if len(notes) > 0 {
				note = " (" + strings.Join(notes, "; ") + ")"
			}
			fmt.Fprintf(a.Stdout, "debug the first violation%s: %s debug %s --preds %s --at %d\n",
				note, a.prog(), shellword.Paths(traces), shellword.Path(script.Name), at)
		}
	}
	stoppedByUser := interrupted.Load() && !rep.Complete
	switch {
	case d != nil:
		return &exitError{ExitDivergence, fmt.Errorf("%s", oneLine(d.Error()))}
	case stoppedByUser && failing == 0:
		return &exitError{ExitInterrupted, fmt.Errorf("interrupted after step #%d of %d: the steps after it were not checked", rep.LastStep, tr.Len())}
	case len(rep.Errors) > 0:
		if f.asJSON {
			rep.WriteErrors(a.Stderr)
		}
		return &exitError{ExitPredicateError, fmt.Errorf("%d evaluation error(s) (above): the run was not fully checked", len(rep.Errors))}
	}
	// Only a check that reached the damage is a check of less than it was
	// asked for (--to, --stop-at-first may stop before). A violation
	// decided before the loss stands whatever was lost; one after may be
	// the loss's doing (a leader whose file was cut looks gone).
	l := lossOf(tr, wanted(tr, f.nodes), rep.LastStep)
	switch {
	case failing > 0 && (l.none() || f.damage.allow || first.Decided() <= l.after):
		return &exitError{ExitViolations, fmt.Errorf("%d violation(s) (--fail-on %s); the first: %s", failing, f.failOn, first.Headline())}
	case !l.none() && !f.damage.allow:
		return f.damage.refuse(l, "checked")
	case f.strictTables:
		return strictTables(rep.Unmatched, "in the steps checked")
	}
	return nil
}

// writeFrontierNote warns that the safety predicates that compared with
// now() may have missed a real-time overlap, when the trace (a
// recording, a run simulated with --clocks causal) replays some of its
// steps in causal order rather than in the order they ran.
func writeFrontierNote(w io.Writer, tr *replay.Trace, checkers []*predicates.Checker) {
	if !causalSteps(tr) {
		return
	}
	var names []string
	for _, c := range checkers {
		for _, n := range c.SafetyReadingNow() {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return
	}
	what := "safety predicate " + names[0]
	if len(names) > 1 {
		what = "safety predicates " + strings.Join(names, ", ")
	}
	fmt.Fprintf(w, "note: %s compared with now(), the time frontier, on a trace replayed in causal order (a recording, or a run simulated with --clocks causal): a real-time overlap between nodes (two leases held at once) can fall between the cuts checked and go unseen; state it over intervals on each node's clock, now(node) (docs/predicates.md, \"A real-time overlap can fall between cuts\")\n",
		what)
}

// causalSteps tells whether some of tr's steps replay in causal order:
// any file (or segment) not simulated serially from its first event.
func causalSteps(tr *replay.Trace) bool {
	for _, f := range tr.Files {
		for _, seg := range f.Segments {
			if seg.SerialClocks != 1 {
				return true
			}
		}
	}
	return false
}
