package cli

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/internal/shellword"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/export"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/state"
)

// reportMaxWindow bounds the steps a report draws around one violation:
// 10,000 events make a 2.3 MB page that Chromium renders in seconds.
const reportMaxWindow = 20_000

type reportFlags struct {
	output        string
	before, after int
	damage        damageFlag
}

func (a *App) reportCmd() *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report FILE... PREDS.star -o report.html",
		Short: "Write a self-contained HTML bug report of the violations",
		Long: `Check the predicates over the traces and write one HTML file for a bug
report: each violation with its witness and stability measures (aux), a
space-time diagram of the steps around it (zoom, hide nodes, click a
message to highlight its send and receipt), the state diff of the
violating node at its step, and the commands that reproduce the run and
open the debugger there.

The page needs no network: its style, script and data are inline. At most
20 violations get a diagram; the rest are listed. See docs/export.md.

Exit codes: 0 the report was written (whatever it found); 2 bad input,
or a trace that lacks part of the run (damaged, a node's file missing, a
recording stopped early: the report is written and says so;
--allow-damaged exits 0); 3 replay diverged and 4 a predicate could not
be evaluated (the report is written, marked not fully checked).`,
		Example: `  replay report paxos.lz4 scripts/paxos.star -o report.html
  replay report paxos.lz4 scripts/paxos.star --before 100 --after 20 -o report.html`,
		Args: requireArgs(2, "FILE... PREDS.star (trace files, then the predicates script)"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runReport(args, f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.output, "output", "o", "", "HTML file to write, - for stdout (required)")
	fl.IntVar(&f.before, "before", 30, "steps shown before each violation")
	fl.IntVar(&f.after, "after", 10, "steps shown after each violation")
	f.damage.register(fl)
	return cmd
}

func (a *App) runReport(args []string, f reportFlags) error {
	traces, arg, err := splitScript(args)
	if err != nil {
		return err
	}
	if f.output == "" {
		return badInput("missing -o FILE (- for stdout)")
	}
	if f.before < 0 || f.after < 0 {
		return badInput("--before %d --after %d: want 0 or more steps", f.before, f.after)
	}
	if f.before+f.after >= reportMaxWindow {
		return badInput("--before %d --after %d: a violation's window is at most %d steps (the page draws every event; replay export --format perfetto shows long runs)", f.before, f.after, reportMaxWindow)
	}
	tr, err := a.loadTrace(traces)
	if err != nil {
		return err
	}
	ref, err := a.resolveScript(arg)
	if err != nil {
		return err
	}
	ec, err := a.checkForExport(tr, ref)
	if err != nil {
		return err
	}
	rep, notes := ec.rep, ec.notes
	script := ref.Name // what the report's commands name, from any directory
	codec := a.codec(tr)
	render := newRenderer(a, tr)
	r := &export.Report{
		Title: fmt.Sprintf("replaycheck report: %s", tr.Header.System), System: tr.Header.System, Traces: traces, Script: script,
		Steps: tr.Len(), Nodes: tr.Nodes, Checked: rep, Errors: notes, Made: time.Now(),
	}
	if tr.Header.Bug != "" && tr.Header.Bug != "none" {
		r.System += " (bug " + tr.Header.Bug + ")"
	}
	for _, v := range rep.Violations {
		if !v.Finding() || len(r.Items) >= export.ReportMaxDiagrams {
			r.Others = append(r.Others, v)
			continue
		}
		w, err := export.NewWindow(tr, codec, max(0, v.Step-f.before), v.Step+f.after, nil)
		if err != nil {
			return err // cannot happen: the window holds the violation's step
		}
		w.Violations = []*predicates.Violation{v}
		r.Items = append(r.Items, export.ReportItem{V: v, Event: render.StepLine(v.Step), Window: w,
			Commands: violationCommands(a.prog(), traces, script, v)})
	}
	if err := a.stateDiffs(tr, r.Items); err != nil {
		return err
	}
	r.Commands = runCommands(a.prog(), tr, traces, script)
	if err := writeOutput(a, f.output, append(slices.Clone(traces), ref.Path), func(out io.Writer) error { return export.WriteReport(out, r) }); err != nil {
		return err
	}
	return ec.verdict(f.damage.allow)
}

// stateDiffs fills in each item's state diff: the violating node's
// flattened state before and after its step, compared by state.Diff (what
// the debugger's d key shows). One replay serves every item.
func (a *App) stateDiffs(tr *replay.Trace, items []export.ReportItem) error {
	if len(items) == 0 {
		return nil
	}
	at := map[int][]int{}
	last := 0
	// A restart's diff is against the node's state before its crash, as
	// the debugger shows it: the node has no state just before the
	// restart (the page showed every field as new, and a row "." for the
	// absent handler).
	restarts := map[node.ID]bool{}
	for i, it := range items {
		at[it.V.Step] = append(at[it.V.Step], i)
		last = max(last, it.V.Step)
		if it.V.Step < tr.Len() && tr.Event(it.V.Step).Kind == node.KindRestart {
			restarts[it.V.Node] = true
		}
	}
	rp, err := replay.New(tr, a.Registry, replay.Options{SkipStateHashes: true, Watch: a.watch})
	if err != nil {
		return badInput("%v", err)
	}
	leaves := func(id node.ID) ([]state.Leaf, string) {
		in := rp.Instance(id)
		if in == nil {
			return nil, fmt.Sprintf("%s is not replayed", id)
		}
		if why, unknown := rp.Unknown(id); unknown {
			return nil, fmt.Sprintf("the state of %s is unknown here: %s", id, why)
		}
		if !in.Up() {
			return nil, fmt.Sprintf("%s is down", id)
		}
		return state.Flatten(in.Handler()), ""
	}
	type crashed struct {
		leaves []state.Leaf
		note   string
		step   int // the node's last step before the crash
	}
	beforeCrash := map[node.ID]crashed{}
	before := map[int][]state.Leaf{}
	for rp.Pos() < last {
		next := rp.Pos() + 1
		if ev := tr.Event(next); ev.Kind == node.KindCrash && restarts[ev.Node] {
			l, note := leaves(ev.Node)
			prev, _ := tr.LastStepOf(ev.Node, next-1)
			beforeCrash[ev.Node] = crashed{l, note, prev}
		}
		for _, i := range at[next] {
			id := items[i].V.Node
			switch tr.Event(next).Kind {
			case node.KindInit:
				// Not started: every field the init sets is new (the
				// node is not down).
				before[i] = nil
				continue
			case node.KindRestart:
			default:
				before[i], items[i].DiffNote = leaves(id)
				continue
			}
			if c, ok := beforeCrash[id]; ok {
				before[i], items[i].DiffNote = c.leaves, c.note
				items[i].DiffFrom = fmt.Sprintf("before the crash (after #%d)", c.step)
			} else {
				items[i].DiffNote = fmt.Sprintf("no state diff: %s restarts here after a crash the trace does not hold", id)
			}
		}
		if err := rp.Next(); err != nil {
			var d *replay.Divergence
			if !errors.As(err, &d) {
				return err
			}
			for i := range items {
				if items[i].V.Step >= next && items[i].DiffNote == "" {
					items[i].DiffNote = fmt.Sprintf("no state diff: replay diverged at step #%d", d.Step)
				}
			}
			return nil
		}
		for _, i := range at[next] {
			if items[i].DiffNote != "" {
				continue
			}
			after, note := leaves(items[i].V.Node)
			items[i].Diff, items[i].DiffNote = state.Diff(before[i], after), note
			if note == "" && len(items[i].Diff) == 0 {
				items[i].DiffNote = "the step changed nothing in the node's state (the predicate broke through another node's earlier change, or a message in flight)"
			}
		}
	}
	return nil
}

// violationCommands are the commands that look at one violation.
func violationCommands(prog string, traces []string, script string, v *predicates.Violation) []export.Command {
	ts := shellword.Paths(traces)
	from := max(0, v.Step-20)
	// An alarm opens where it was raised, as check's command does; the
	// diagram and the diff stay at the step that broke the predicate.
	debug := "open the debugger at the violation"
	if at := v.Decided(); at != v.Step {
		debug = fmt.Sprintf("open the debugger at the alarm (violated since #%d)", v.Step)
	}
	cmds := []export.Command{
		{What: debug, Line: fmt.Sprintf("%s debug %s --preds %s --at %d", prog, ts, shellword.Path(script), v.Decided())},
		{What: "the events around it", Line: fmt.Sprintf("%s events %s --from %d --limit 30", prog, ts, from)},
		{What: "the same window for Perfetto (ui.perfetto.dev)", Line: fmt.Sprintf("%s export %s --format perfetto --from %d --to %d --preds %s -o violation.json", prog, ts, from, v.Step+10, shellword.Path(script))},
	}
	if v.Kind == "liveness" {
		// The diagram shows where the interval began; the cause of a
		// liveness bug is often a transition inside it.
		cmds = append(cmds, export.Command{What: "where the liveness bug became unavoidable",
			Line: fmt.Sprintf("%s critical %s %s --predicate %s --alarm %d", prog, ts, shellword.Path(script), shellword.Quote(v.Predicate), v.Decided())})
	}
	return cmds
}

// runCommands reproduce the whole run: the simulation that recorded it
// (for a simulated trace whose settings the header names), then the
// check.
func runCommands(prog string, tr *replay.Trace, traces []string, script string) []export.Command {
	var cmds []export.Command
	h := tr.Header
	if line, ok := simCommand(prog, tr, traces[0]); ok {
		cmds = append(cmds, export.Command{What: "re-run the simulation that recorded the trace (byte-identical)", Line: line})
	} else if h.Driver == "sim" && len(tr.Files) == 1 && h.Run["fork_of"] == "" && h.Run["shrunk_from"] == "" {
		// Another chooser made it (an exploration): its seed does not
		// name the run, its schedule does, and the trace holds it. The
		// page gave only the header as a comment (a new user).
		cmds = append(cmds,
			export.Command{What: "recorded by sim: " + runLine(h.Run), Line: "# " + runLine(h.Run)},
			export.Command{What: "re-run the simulation event for event from the schedule the trace holds",
				Line: fmt.Sprintf("%s sim %s --schedule %s -o %s", prog, shellword.Quote(h.System), shellword.Path(traces[0]), shellword.Path(strings.TrimSuffix(traces[0], ".lz4")+"-rerun.lz4"))})
	} else if len(h.Run) > 0 {
		cmds = append(cmds, export.Command{What: "recorded by " + h.Driver, Line: "# " + runLine(h.Run)})
	}
	cmds = append(cmds, export.Command{What: "check the predicates", Line: fmt.Sprintf("%s check %s %s", prog, shellword.Paths(traces), shellword.Path(script))})
	return cmds
}

// simRunFlags are the Run settings of a simulated trace that are `replay
// sim` flags of the same name ('_' for '-').
var simRunFlags = []string{"seed", "nodes", "steps", "time", "drop", "dup", "churn", "latency", "down", "max_down", "clocks"}

// simCommand rebuilds the `replay sim` command line of a simulated trace
// from its header; false when the trace is not simulated or its settings
// hold one this cannot name (a schedule, a setting added later).
func simCommand(prog string, tr *replay.Trace, out string) (string, bool) {
	h := tr.Header
	if h.Driver != "sim" || len(tr.Files) != 1 {
		return "", false
	}
	parts := []string{prog, "sim", shellword.Quote(h.System)}
	if h.Bug != "" && h.Bug != "none" {
		parts = append(parts, "--bug", shellword.Quote(h.Bug))
	}
	for k := range h.Run {
		if !slices.Contains(simRunFlags, k) {
			return "", false
		}
	}
	for _, k := range simRunFlags {
		if v, ok := h.Run[k]; ok {
			parts = append(parts, "--"+strings.ReplaceAll(k, "_", "-"), shellword.Quote(v))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(h.Params)) {
		parts = append(parts, "--param", shellword.Quote(k+"="+h.Params[k]))
	}
	if !h.StateHashes {
		parts = append(parts, "--no-state-hashes")
	}
	parts = append(parts, "-o", shellword.Path(out))
	return strings.Join(parts, " "), true
}
