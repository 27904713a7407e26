package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/export"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
)

type exportFlags struct {
	format   string
	from, to int
	nodes    []string
	preds    string
	output   string
	damage   damageFlag
}

// exportFormats maps --format to its writer, in the order --help lists them.
var exportFormats = []struct {
	name  string
	write func(io.Writer, *export.Window) error
	what  string
}{
	{"shiviz", export.ShiViz, "ShiViz log with vector clocks"},
	{"perfetto", export.Perfetto, "Chrome trace event JSON for ui.perfetto.dev"},
	{"mermaid", export.Mermaid, "Mermaid sequence diagram"},
	{"dot", export.DOT, "Graphviz DOT space-time diagram"},
	{"jsonl", export.JSONL, "one JSON object per event, messages decoded"},
}

func (a *App) exportCmd() *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export FILE... --format FORMAT -o OUT",
		Short: "Write a window of a trace for ShiViz, Perfetto, Mermaid, Graphviz or jq",
		Long: `Write the events of steps --from..--to (of the nodes in --nodes) in the
format of another tool:

  shiviz    ShiViz log: each event with its host and vector clock; the file
            starts with the parser regex, so ShiViz loads it as it is
  perfetto  Chrome trace event JSON: a track per node, events as slices,
            messages as flow arrows, violations as instant events
            (open in https://ui.perfetto.dev or chrome://tracing)
  mermaid   Mermaid sequence diagram: messages as arrows, lost ones with a
            cross, the violation as a note (at most 20 nodes and 400
            arrows and notes: narrow the window past that)
  dot       Graphviz DOT space-time diagram (dot -Tsvg OUT > out.svg)
  jsonl     one JSON object per event, messages decoded into their fields
            (jq, pandas.read_json(lines=True))

With --preds PREDS.star the predicates are checked first and the
violations and liveness alarms that fall in the window are marked
(perfetto, mermaid, dot, shiviz, jsonl); screened intervals are not. See docs/export.md.

Exit codes: 0 written; 2 bad input (unknown format, empty window, a window
too big for the format), or, with --preds, a trace that lacks part of the
run (the file is written; --allow-damaged exits 0); with --preds, 3
replay diverged and 4 a predicate could not be evaluated (the file is
written with the violations known).`,
		Example: `  replay export paxos.lz4 --format shiviz -o paxos.shiviz
  replay export paxos.lz4 --format perfetto --preds scripts/paxos.star -o paxos.json
  replay export paxos.lz4 --format mermaid --from 250 --to 280 --nodes n3,n5,n6 -o bug.mmd
  replay export paxos.lz4 --format jsonl -o - | jq 'select(.msg_type=="paxos.Accept")'`,
		Args: requireArgs(1, "FILE (a trace file)"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runExport(args, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.format, "format", "", "shiviz, perfetto, mermaid, dot or jsonl (required)")
	fl.IntVar(&f.from, "from", 0, "first step of the window")
	fl.IntVar(&f.to, "to", -1, "last step of the window (-1: the end)")
	fl.StringSliceVar(&f.nodes, "nodes", nil, "only these nodes (comma-separated or repeated)")
	fl.StringVar(&f.preds, "preds", "", "predicates script whose violations are marked")
	fl.StringVarP(&f.output, "output", "o", "", "file to write, - for stdout (required)")
	f.damage.register(fl)
	return cmd
}

func (a *App) runExport(traces []string, f exportFlags) error {
	var write func(io.Writer, *export.Window) error
	var names []string
	for _, x := range exportFormats {
		names = append(names, x.name)
		if x.name == f.format {
			write = x.write
		}
	}
	if write == nil {
		if f.format == "" {
			return badInput("missing --format (%s)", strings.Join(names, ", "))
		}
		return badInput("--format %q: want one of %s", f.format, strings.Join(names, ", "))
	}
	if f.output == "" {
		return badInput("missing -o FILE (- for stdout)")
	}
	if f.from < 0 || f.to < -1 || (f.to >= 0 && f.to < f.from) {
		return badInput("--from %d --to %d: want 0 <= FROM <= TO (the window would be empty)", f.from, f.to)
	}
	tr, err := a.loadTrace(traces)
	if err != nil {
		return err
	}
	if f.from >= tr.Len() {
		return badInput("--from %d: the trace has %d steps (#0..#%d), so the window would be empty", f.from, tr.Len(), tr.Len()-1)
	}
	nodes := parseIDs(f.nodes)
	for _, id := range nodes {
		if !containsID(tr.Nodes, id) {
			return badInput("--nodes %s: no such node in the trace (nodes: %s)", id, joinIDs(tr.Nodes))
		}
	}
	w, err := export.NewWindow(tr, a.codec(tr), f.from, f.to, nodes)
	if err != nil {
		return badInput("%v", err)
	}
	inputs := slices.Clone(traces)
	var incomplete error
	if f.preds != "" {
		script, err := a.scriptArg(f.preds)
		if err != nil {
			return err
		}
		inputs = append(inputs, script.Path)
		ec, err := a.checkForExport(tr, script)
		if err != nil {
			return err
		}
		w.Violations = ec.rep.Violations
		incomplete = ec.verdict(f.damage.allow)
	}
	if err := writeOutput(a, f.output, inputs, func(out io.Writer) error { return write(out, w) }); err != nil {
		return err
	}
	return incomplete
}

// verdict is the exit a report or an export with --preds ends with
// after writing its file when the check behind it was not complete: a
// checker never exits 0 when a predicate could not be evaluated, a
// diverging trace exits 3, and a trace that lacks part of the run exits
// 2 as check does (unless allow: --allow-damaged). The file says the
// same inside.
func (ec *exportCheck) verdict(allow bool) error {
	var failed []string
	for _, e := range ec.rep.Errors {
		failed = append(failed, e.Name)
	}
	switch {
	case len(failed) > 0:
		return &exitError{ExitPredicateError, fmt.Errorf("%d predicate(s) could not be evaluated (%s): the file was written, marked not fully checked", len(failed), strings.Join(failed, ", "))}
	case ec.div != nil:
		return &exitError{ExitDivergence, fmt.Errorf("replay diverged at step #%d: the file was written with the violations known up to there", ec.div.Step)}
	case !ec.loss.none() && !allow:
		return badInput("%s: only what was recorded and recovered was checked (the file was written); --allow-damaged takes that as the whole run", ec.loss.what())
	case !ec.rep.Complete && !ec.rep.TraceIncomplete:
		return badInput("checking stopped after step #%d: the file was written with the violations known up to there", ec.rep.LastStep)
	}
	return nil
}

// writeOutput writes to path through an atomic file (so a refused or
// interrupted export leaves no file that looks whole), or to stdout for
// "-". A TooBigError (the format cannot show the window) is bad input.
//
// An output that is one of inputs (a trace or the script) is refused:
// writing it would destroy what it was made from. Ctrl-C (or SIGTERM)
// while writing removes the partial file and exits 130.
func writeOutput(a *App, path string, inputs []string, write func(io.Writer) error) error {
	if path == "-" {
		return exportErr(write(a.Stdout))
	}
	if err := refuseInput(path, inputs, "the output"); err != nil {
		return err
	}
	if err := notOverInput(path, "the output"); err != nil {
		return err
	}
	out, err := createAtomic(path)
	if err != nil {
		return err
	}
	ctx, stop := interruptContext(syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	// A spilled trace that cannot be read back fails the write (and the
	// partial file goes) instead of the process.
	go func() { done <- replay.CatchReadBack(func() error { return write(out) }) }()
	select {
	case err := <-done:
		if err != nil {
			out.Abort()
			return exportErr(err)
		}
		if err := out.Commit(); err != nil {
			return err
		}
		// Not said of a device (-o /dev/stdout): the line would land in
		// the output.
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			fmt.Fprintf(a.Stdout, "wrote %s (%s)\n", path, humanize.IBytes(uint64(st.Size())))
		}
		return nil
	case <-ctx.Done():
		out.Abort()
		return &exitError{ExitInterrupted, fmt.Errorf("interrupted: %s not written", path)}
	}
}

func exportErr(err error) error {
	var big *export.TooBigError
	var empty *export.EmptyError
	if errors.As(err, &big) || errors.As(err, &empty) {
		return badInput("%v", err)
	}
	return err
}

// checkForExport checks the predicates over the whole trace, for the
// violations an export marks or a report shows. A trace whose system
// this binary does not know cannot be replayed, hence not checked. The
// notes say what was not fully checked (a divergence, failed predicates);
// they also go to stderr.
func (a *App) checkForExport(tr *replay.Trace, script scriptRef) (*exportCheck, error) {
	r, err := replay.New(tr, a.Registry, replay.Options{Watch: a.watch})
	if err != nil {
		return nil, badInput("%v", err)
	}
	// Judged as replay check judges by default (an incomplete trace's
	// open liveness intervals are not judged).
	c, err := predicates.Load(script.Path, r, predicates.Options{To: -1, CutShort: tr.Incomplete(tr.Nodes)})
	if err != nil {
		return nil, badInput("%v", err)
	}
	prog := a.progress()
	rep, runErr := c.Run(predicates.RunOptions{Progress: func(step, total int) {
		prog.update("checking: step %d of %d (%.0f%%)", step, total, 100*float64(step)/float64(total))
	}})
	prog.done()
	ec := &exportCheck{rep: rep}
	if runErr != nil && !errors.As(runErr, &ec.div) {
		return nil, withCode(ExitBadInput, runErr)
	}
	if ec.div != nil {
		ec.notes = append(ec.notes, fmt.Sprintf("replay diverged, so violations are known up to step #%d only: %s", ec.div.Step, oneLine(ec.div.Error())))
	}
	if ec.loss = lossOf(tr, tr.Nodes, rep.LastStep); !ec.loss.none() {
		ec.notes = append(ec.notes, fmt.Sprintf("%s: only what was recorded and recovered was checked; a violation after step #%d may be the loss's doing, and liveness intervals open at the end were not judged", ec.loss.what(), max(ec.loss.after, 0)))
	}
	for _, e := range rep.Errors {
		ec.notes = append(ec.notes, e.String())
	}
	for _, n := range ec.notes {
		fmt.Fprintf(a.Stderr, "warning: %s\n", n)
	}
	return ec, nil
}

// exportCheck is the check behind a report or an export with --preds.
type exportCheck struct {
	rep   *predicates.Report
	notes []string // what was not fully checked, for the file and stderr
	div   *replay.Divergence
	loss  loss // what of the run the check lacked
}
