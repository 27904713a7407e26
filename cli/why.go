package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/provenance"
	"github.com/replaycheck/replaycheck/replay"
)

type whyFlags struct {
	at    int
	node  string
	field string
	depth int
	db    string
	json  bool
}

func (a *App) whyCmd() *cobra.Command {
	var f whyFlags
	cmd := &cobra.Command{
		Use:   "why FILE... --at STEP --node ID --field PATH [--depth N] [--json]",
		Short: "Where a field's value came from: the chain of steps and messages that produced it",
		Long: `Explain why a node's field holds its value at a step: the step that last
wrote it, what triggered that step (a message with its sender, send step and
fields; a timer and where it was set; an input; the node's start), then,
for the message field that carries the value, the sender's field that held
it at the send step and the step that wrote that, and so on back to an
input, the initial state or --depth steps.

Handlers are not traced inside, so links from a written field to a message
field, and from a message field to a sender's field, are matched by equal
value: they are marked "inferred: equal value". PATH is a field as the
debugger's State panel shows it (Agent.AcceptedValue, Leader.Lasts[3].From).

With a current trace database beside the trace (replay index, replay
debug) states are read from it; without one the trace is replayed up to
--at, and an out-of-date or damaged one is said so in a note on stderr.

Exit codes: 0 explained, 2 bad input (unknown node or field, step out of
range: the nearest valid names are listed).`,
		Example: `  replay why replay-demo.lz4 --at 269 --node n7 --field Agent.AcceptedValue
  replay why replay-demo.lz4 --at 269 --node n7 --field Agent.AcceptedValue --json`,
		Args: requireArgs(1, "FILE (a trace file)"),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runWhy(args, f) },
	}
	fl := cmd.Flags()
	fl.IntVar(&f.at, "at", -1, "the step (the state once it has executed)")
	fl.StringVar(&f.node, "node", "", "the node")
	fl.StringVar(&f.field, "field", "", "the field path, as the debugger's State panel shows it")
	fl.IntVar(&f.depth, "depth", provenance.DefaultDepth, "follow at most this many steps back")
	fl.StringVar(&f.db, "db", "", "trace database directory (default: beside the first trace file)")
	fl.BoolVar(&f.json, "json", false, "print the chain as JSON")
	return cmd
}

func (a *App) runWhy(traces []string, f whyFlags) error {
	if f.node == "" || f.field == "" || f.at < 0 {
		return badInput("want --at STEP (from 0), --node ID and --field PATH")
	}
	if f.depth < 1 {
		return badInput("--depth %d: want at least 1", f.depth)
	}
	tr, err := a.loadTrace(traces)
	if err != nil {
		return err
	}
	if f.at >= tr.Len() {
		return badInput("--at %d: the trace has %d steps (#0..#%d)", f.at, tr.Len(), tr.Len()-1)
	}
	sys, err := a.Registry.LookupRecorded(tr.Header.System)
	if err != nil {
		return badInput("%v", err)
	}
	// The database when there is a current one (a few reads per hop),
	// else one replay up to --at: why builds no database as a side
	// effect, and a stale or foreign one only costs the replay, as in
	// state and history.
	var states provenance.States
	if db := a.currentDB(traces, f.db); db != nil {
		defer db.Close()
		states = provenance.FromDB(db)
	} else {
		rp, err := provenance.Replay(tr, a.Registry, f.at, a.watch)
		if err != nil {
			var d *replay.Divergence
			if errors.As(err, &d) {
				fmt.Fprint(a.Stdout, d.ReportAs(a.prog()))
				return &exitError{ExitDivergence, fmt.Errorf("the trace does not replay: %s", oneLine(d.Error()))}
			}
			return err
		}
		states = rp
	}
	chain, err := provenance.Why(provenance.Options{Trace: tr, Codec: sys.Codec, States: states, Depth: f.depth},
		node.ID(f.node), f.field, f.at)
	var pe *provenance.Error
	if errors.As(err, &pe) {
		return badInput("%v", pe)
	}
	if err != nil {
		return err
	}
	if f.json {
		enc := json.NewEncoder(a.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(chain)
	}
	return chain.Write(a.Stdout)
}
