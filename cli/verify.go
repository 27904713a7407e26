package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
)

type verifyFlags struct {
	nodes           []string
	skipStateHashes bool
	asJSON          bool
	damage          damageFlag
}

func (a *App) verifyCmd() *cobra.Command {
	var f verifyFlags
	cmd := &cobra.Command{
		Use:   "verify FILE... [--nodes IDS]",
		Short: "Re-execute a trace and confirm the recording reproduces exactly",
		Long: `Re-execute every event of the traces in causal order on fresh nodes built by
the system's factory, feeding back the recorded nondeterminism, and compare
what each handler does now with what the recording says it did: messages
sent (to whom, of which type, with which content digest), timers set and
cancelled, disk writes, and, where the trace carries them, a hash of the
node's whole state after the event.

Prints "replayed N steps on K nodes: 0 divergences" and exits 0, or stops at
the first divergence, prints where (step, node, event), what the recording
says, what the handler did now and the usual causes, and exits 3.

--nodes replays a subset of the nodes (partial replay): messages from the
others come from the receivers' traces. A node whose recording ends early
(a killed process, a damaged file) is reported as state-unknown from its
last recorded step.

A damaged file (truncated or corrupt: a warning names it), or a recording
that stopped before the run ended (a gap to the end: a full disk, a merge
of a cut file) or lost events on the way (a gap in the middle: a live
recorder that fell behind), is replayed as far as it was recovered, and then verify
exits 2: what was lost was not verified. --allow-damaged exits 0 when what was recovered replays
exactly.`,
		Example: `  replay verify paxos.lz4
  replay verify node1.lz4 node2.lz4 node3.lz4 --nodes 1,3`,
		Args: requireArgs(1, "FILE (a trace file)"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runVerify(args, f) },
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.nodes, "nodes", nil, "replay only these nodes (comma-separated)")
	fl.BoolVar(&f.skipStateHashes, "no-state-hashes", false, "do not compare recorded state hashes (faster; divergence found through effects only)")
	fl.BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	f.damage.register(fl)
	return cmd
}

type verifyResult struct {
	Steps       int                `json:"steps"`
	Replayed    int                `json:"replayed_steps"`
	Nodes       []node.ID          `json:"nodes"`
	StateHashes int                `json:"state_hashes_compared"`
	Divergences int                `json:"divergences"`
	Divergence  *replay.Divergence `json:"divergence,omitempty"`
	// OtherBuilds: the builds other than this one
	// that recorded the trace (live recordings name theirs).
	OtherBuilds []string             `json:"recorded_by_other_builds,omitempty"`
	Unknown     map[node.ID][]string `json:"state_unknown,omitempty"`
	// Complete: the replay reached the trace's end without diverging,
	// and nothing of a replayed node was lost (a damaged file, a missing
	// one, a recording stopped early). Steps of nodes not replayed
	// (--nodes) or of unknown state are not replayed even then: see
	// Replayed.
	Complete bool      `json:"complete"`
	Damaged  []string  `json:"damaged,omitempty"`
	Missing  []node.ID `json:"missing_nodes,omitempty"`
	Stopped  []string  `json:"stopped_recordings,omitempty"`
	Seconds  float64   `json:"seconds"`
}

func parseIDs(list []string) []node.ID {
	var ids []node.ID
	for _, s := range list {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(ids, node.ID(s)) {
			ids = append(ids, node.ID(s))
		}
	}
	return ids
}

// wanted are the nodes a verb was asked about: --nodes, or every node the
// traces' header lists (also those no file records).
func wanted(tr *replay.Trace, nodes []string) []node.ID {
	if ids := parseIDs(nodes); len(ids) > 0 {
		return ids
	}
	return tr.Nodes
}

func (a *App) runVerify(paths []string, f verifyFlags) error {
	tr, err := a.loadTraceOf(paths, parseIDs(f.nodes))
	if err != nil {
		return err
	}
	r, err := replay.New(tr, a.Registry, replay.Options{Nodes: parseIDs(f.nodes), SkipStateHashes: f.skipStateHashes, Watch: a.watch})
	if err != nil {
		return badInput("%v", err)
	}
	// A replay runs to the end: it reaches every loss there is.
	l := lossOf(tr, wanted(tr, f.nodes), tr.Len()-1)
	res := verifyResult{Steps: tr.Len(), Nodes: r.Nodes(), Damaged: damageLines(l.files), Missing: l.missing, Stopped: stopLines(l.stops)}
	prog := a.progress()
	start := time.Now()
	runErr := r.RunTo(tr.Len()-1, func(step int) error {
		if r.Replayed() != nil {
			res.Replayed++
			if r.Recorded().HasStateHash && !f.skipStateHashes && r.Instance(r.Recorded().Node).Up() {
				res.StateHashes++
			}
		}
		if step%2048 == 0 {
			prog.update("verifying: step %d of %d (%.0f%%)", step, tr.Len(), 100*float64(step)/float64(tr.Len()))
		}
		return nil
	})
	prog.done()
	res.Seconds = time.Since(start).Seconds()
	res.Unknown = unknownStretches(tr, r.Nodes())
	var d *replay.Divergence
	if runErr != nil && !errors.As(runErr, &d) {
		return withCode(ExitBadInput, runErr)
	}
	res.OtherBuilds = otherBuildsOf(tr)
	if d != nil {
		res.Divergences, res.Divergence = 1, d
	} else {
		warnOtherBuilds(a.Stderr, a.name()+" verify", res.OtherBuilds)
	}
	res.Complete = d == nil && l.none()
	if f.asJSON {
		enc := json.NewEncoder(a.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		if d != nil {
			fmt.Fprint(a.Stdout, d.ReportAs(a.prog()))
			writeBuildNote(a.Stdout, res.OtherBuilds)
			fmt.Fprintf(a.Stdout, "replayed %d steps on %d nodes before the divergence\n", d.Step, len(res.Nodes))
		} else {
			fmt.Fprintf(a.Stdout, "replayed %d steps on %d nodes: 0 divergences (%d state hashes compared, %.2fs)\n",
				res.Replayed, len(res.Nodes), res.StateHashes, res.Seconds)
		}
		writeUnknown(a.Stdout, tr.Unknown, r.Nodes(), "")
	}
	if d != nil {
		return &exitError{ExitDivergence, fmt.Errorf("%s", oneLine(d.Error()))}
	}
	if !l.none() && !f.damage.allow {
		return f.damage.refuse(l, "replayed")
	}
	return nil
}
