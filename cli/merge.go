package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
)

func (a *App) mergeCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "merge FILE... -o FILE",
		Short: "Merge traces into one trace in causal order",
		Long: `Merge trace files (one per live node, or several runs' pieces) into one
trace whose events are in causal order: the order every verb numbers steps
by. The inputs are validated first (per-node seqs contiguous, Lamport clocks
increasing, every receive matching its send). Stretches where a node's
recording was missing (a killed process, a damaged file, a recorder that fell
behind) are kept as gap records, so the merged trace replays exactly like its
parts.`,
		Example: `  replay merge node1.lz4 node2.lz4 node3.lz4 -o cluster.lz4`,
		Args:    requireArgs(1, "FILE (a trace file)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output == "" {
				return badInput("missing -o FILE (the merged trace to write)")
			}
			return a.runMerge(args, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "merged trace file to write")
	return cmd
}

func (a *App) runMerge(paths []string, output string) error {
	tr, err := a.loadTrace(paths)
	if err != nil {
		return err
	}
	if len(tr.Codecs) > 1 {
		// One header names one codec: the merged file would say that
		// every message was encoded as the first file's were.
		return badInput("the traces were recorded with different message codecs (%s): a merged trace can name only one; replay them as they are, without merging", strings.Join(tr.Codecs, ", "))
	}
	h := *tr.Header
	h.Driver, h.Segment, h.Nodes, h.Recorded = "merge", 0, tr.Nodes, tr.Recorded
	h.Run = map[string]string{"merged_from": record.ListValue(paths)}
	types := map[string]bool{}
	drivers := map[bool]bool{}
	for _, f := range tr.Files {
		for _, s := range f.Segments {
			drivers[wallClock(s.Driver, s.Run)] = true
			h.StateHashes = h.StateHashes && s.StateHashes
			h.Start = min(h.Start, s.Start)
			for _, t := range s.Types {
				types[t] = true
			}
		}
	}
	if len(drivers) == 1 && drivers[true] {
		// Times are the processes' clocks, not a simulator's: info
		// says so for a live file, and of its merge by this key.
		h.Run["clock"] = "wall"
	}
	h.Types = nil
	for t := range types {
		h.Types = append(h.Types, t)
	}
	slices.Sort(h.Types)

	out, err := createTrace(output)
	if err != nil {
		return err
	}
	defer out.Abort()
	w, err := record.NewWriter(out, h, record.WriterOptions{})
	if err != nil {
		return withCode(ExitBadInput, err)
	}
	for _, g := range mergedGaps(tr) {
		if err := w.Gap(g); err != nil {
			return err
		}
	}
	prog := a.progress()
	for step := range tr.Len() {
		if err := w.Append(tr.Event(step)); err != nil {
			return fmt.Errorf("write %s: %w", output, err)
		}
		if step%4096 == 0 {
			prog.update("merging: step %d of %d", step, tr.Len())
		}
	}
	prog.done()
	end := record.End{Reason: fmt.Sprintf("merged from %d file(s)", len(paths))}
	if tr.Len() > 0 {
		end.Time = tr.Event(tr.Len() - 1).Time
	}
	if err := w.Close(end); err != nil {
		return fmt.Errorf("write %s: %w", output, err)
	}
	if err := out.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "merged %d file(s), %d steps on %d nodes into %s\n", len(paths), tr.Len(), len(tr.Recorded), output)
	return nil
}

// mergedGaps turns every stretch of missing recording into a gap record:
// from the node's first unrecorded seq to the one before its restart.
func mergedGaps(tr *replay.Trace) []record.Gap {
	var gaps []record.Gap
	for _, id := range tr.Nodes {
		for _, u := range tr.Unknown[id] {
			g := record.Gap{Node: id, From: 1, Reason: u.Reason, Killed: u.Killed}
			if u.After >= 0 {
				g.From = tr.Event(u.After).Seq + 1
			}
			if u.Until >= 0 {
				g.To = tr.Event(u.Until).Seq - 1
			}
			gaps = append(gaps, g)
		}
	}
	return gaps
}

// wallClock says whether a segment's times are its processes' clocks: a
// live recording's, or a merge of such recordings.
func wallClock(driver string, run map[string]string) bool {
	return driver == "live" || driver == "merge" && run["clock"] == "wall"
}
