package cli

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/internal/shellword"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
	"github.com/replaycheck/replaycheck/world"
)

type forkFlags struct {
	at  int
	sim simFlags
}

func (a *App) forkCmd() *cobra.Command {
	var f forkFlags
	cmd := &cobra.Command{
		Use:   "fork TRACE... --at STEP [--seed N] [sim flags] -o OUT",
		Short: "Continue a recorded run in the simulator from any step",
		Long: `Rebuild the whole world at step STEP of a trace by replay, and continue it in
the simulator: every node's state (handler, disk, seq, Lamport clock,
timers, up or down), every message in flight with its full content (replay
re-executes its sender), the pending timers. Works on simulated traces and
on live recordings (give every node's file): a production run can be
continued in simulation from any of its steps.

OUT holds steps #0..#STEP exactly as the parent (same numbering in every
verb), then the simulated continuation: an ordinary trace that replay
verify, check, debug, events and info read like any other. Its header names
the parent and the step (fork_of, fork_at). The same --seed gives the same
bytes; other seeds give other continuations of the same world.

The continuation: --steps and --time bound it (events and virtual time
after the fork; default: the system's). The network and fault flags
default to the parent's settings when the parent was simulated, else to
the system's. Messages in flight arrive within --latency of their send,
or as soon as the continuation starts if that is past, and may be lost or
duplicated under --drop and --dup (a message the parent never delivered is
in flight too); nodes down at the fork restart under --churn after a
--down draw, and stay down without churn; partitions are not recorded in
traces, so the fork starts healed; the system's scenario is not run again,
so no external inputs arrive.

Fork refuses (exit 2) a step outside the trace, a node whose state at the
step is unknown (no trace file for it, a killed process, a gap in its
recording), a trace of a system this binary does not know; a trace that
diverges on replay before the step exits 3, as replay verify. A handler
that fails in the continuation exits 1, as in replay sim; OUT keeps every
event up to it.`,
		Example: `  replay fork paxos.lz4 --at 120 --seed 7 -o fork.lz4
  replay fork paxos.lz4 --at 120 --seed 7 --drop 0.3 --churn 1 -o lossy.lz4
  replay fork node1.lz4 node2.lz4 node3.lz4 --at 5000 --time 10s -o whatif.lz4
  replay verify fork.lz4 && replay check fork.lz4 scripts/paxos.star`,
		Args: requireArgs(1, "TRACE (a trace file)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.sim.changed = cmd.Flags().Changed
			return a.runFork(args, f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.at, "at", 0, "the step to fork at: steps #0..#STEP are kept, the simulation continues after it (required)")
	fl.Uint64Var(&f.sim.seed, "seed", 1, "seed for every random choice of the continuation")
	fl.IntVar(&f.sim.steps, "steps", 0, "stop after this many events of the continuation, at least 1 (default: the system's)")
	fl.DurationVar(&f.sim.time, "time", 0, "stop after this much virtual time of the continuation, e.g. 5s (default: the system's)")
	fl.Float64Var(&f.sim.drop, "drop", 0, "probability that a message is lost, 0..1, in-flight ones included (default: a simulated parent's, else the system's)")
	fl.Float64Var(&f.sim.dup, "dup", 0, "probability that a message is delivered twice, 0..1 (default: a simulated parent's, else the system's)")
	fl.Float64Var(&f.sim.churn, "churn", 0, fmt.Sprintf("random crashes per node per virtual second, 0..%g; 0 turns churn off (default: a simulated parent's, else the system's)", sim.MaxChurn))
	fl.StringVar(&f.sim.latency, "latency", "", "message latency range MIN-MAX, e.g. 1ms-10ms (default: a simulated parent's, else the system's)")
	fl.StringVar(&f.sim.down, "down", "", "how long a crashed node stays down, MIN-MAX (default: a simulated parent's, else the system's)")
	fl.IntVar(&f.sim.maxDown, "max-down", 0, "at most this many nodes down at once under churn, 1..nodes (default: a simulated parent's, else a minority)")
	f.sim.registerHashing(fl, " in the continuation")
	fl.BoolVarP(&f.sim.verbose, "verbose", "v", false, "print the continuation's handler log lines to stderr")
	fl.StringVarP(&f.sim.output, "output", "o", "", "trace file to write (required)")
	return cmd
}

func (a *App) runFork(paths []string, f forkFlags) error {
	changed := f.sim.changed
	switch {
	case !changed("at"):
		return badInput("missing --at STEP (the step to fork at; %s events %s lists the steps)", a.prog(), shellword.Path(paths[0]))
	case f.at < 0:
		return badInput("--at %d: want a step, 0 or more", f.at)
	case f.sim.output == "":
		return badInput("missing -o OUT (the forked trace to write)")
	}
	tr, err := replay.Load(paths...)
	if err != nil {
		return badInput("%v", err)
	}
	// A fork rebuilds every node: one no file records is the error
	// itself, not a warning before it.
	if missing := tr.Missing(); len(missing) > 0 {
		return badInput("cannot fork without node %s: none of the given traces records it (give its trace file too)", joinIDs(missing))
	}
	a.warnLoaded(tr, nil)
	if err := checkForkStep(tr, f.at, paths); err != nil {
		return err
	}
	r, err := replay.New(tr, a.Registry, replay.Options{Watch: a.watch})
	if err != nil {
		return badInput("%v", err)
	}
	sys := r.System()
	cfg, err := forkConfig(sys, tr, f.sim)
	if err != nil {
		return err
	}

	// The output is checked first, so that a bad -o fails before a long
	// replay, but made after it: a Ctrl-C during the replay ends the
	// process at once, and left the empty partial file behind.
	if err := replacesOnlyATrace(f.sim.output); err != nil {
		return err
	}
	if err := checkWritable(f.sim.output); err != nil {
		return err
	}

	prog := a.progress()
	w, err := rebuildWorld(r, f.at, func(step int) {
		prog.update("rebuilding the world: step %d of %d (%.0f%%)", step, f.at+1, 100*float64(step)/float64(f.at+1))
	})
	prog.done()
	if err != nil {
		return err
	}
	file, err := createTrace(f.sim.output)
	if err != nil {
		return err
	}
	defer file.Abort()

	interrupted, stopSignals := onInterrupt()
	defer stopSignals()
	cfg.Progress = func(steps int, now time.Duration) {
		prog.update("simulating the continuation: %d events, virtual time %v", steps, now.Truncate(time.Millisecond))
	}
	cfg.Observe = func(*node.Event, *node.Instance) error {
		if interrupted.Load() {
			return fmt.Errorf("interrupted: %w", sim.ErrStopped)
		}
		return nil
	}
	if f.sim.verbose {
		cfg.Log = a.Stderr
	}
	a.sayStalls(&cfg, "fork")
	cfg.Stop = interrupted.Load // a run stuck in a handler: see sim
	start := time.Now()
	res, runErr := sim.RunFrom(sys, cfg, w, tr.Prefix(f.at+1), file)
	prog.done()
	if res == nil { // the continuation never started
		return badInput("%v", runErr)
	}
	if err := unwrittenTrace(f.sim.output, runErr); err != nil {
		return err // the deferred Abort removes the partial file
	}
	if err := file.Commit(); err != nil {
		return withCode(ExitBadInput, err)
	}

	out := a.Stdout
	printWorld(out, tr, w, cfg.LatencyMax)
	if note := timeCutNote(tr, f.at); note != "" {
		fmt.Fprintln(a.Stderr, a.name()+" fork: note: "+note)
	}
	if down := w.Down(); len(down) > 0 && cfg.Churn == 0 && res.Stats.Restarts == 0 {
		// critical's walks restart such nodes; a fork does only under
		// churn, which surprised a user who meant to watch recovery.
		fmt.Fprintf(a.Stderr, "%s fork: note: %s, down at the fork, stayed down: the continuation has no churn (--churn N restarts crashed nodes after a --down draw)\n", a.name(), idList(down))
	}
	reason := res.Reason
	if interrupted.Load() {
		reason = "interrupted"
	}
	runErr, stuck := sortInterrupt(runErr)
	fmt.Fprintf(out, "continued with seed %d (latency %v-%v, drop %g, dup %g, churn %g/s): %d events in %v of virtual time in %v\n",
		cfg.Seed, cfg.LatencyMin, cfg.LatencyMax, cfg.Drop, cfg.Dup, cfg.Churn, res.Steps,
		(res.Time - time.Duration(w.Now)).Truncate(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if reason != "" {
		fmt.Fprintf(out, "  stopped: %s\n", reason)
	}
	s := res.Stats
	// The counts are the header's (printWorld): in flight, and apart
	// from them the messages the parent had lost, which lost counts.
	parent := ""
	if s.LostByParent > 0 {
		parent = fmt.Sprintf(", and lost the %d the parent had lost (above): the continuation lost %d", s.LostByParent, s.Lost-s.LostByParent)
	}
	fmt.Fprintf(out, "%s (delivered and lost count the %d message(s) in flight at the fork too%s)\n", networkLine(s), int64(len(w.InFlight))-s.LostByParent, parent)
	fmt.Fprintf(out, "  faults: %d crashes, %d restarts\n", s.Crashes, s.Restarts)
	size := int64(0)
	if st, err := os.Stat(f.sim.output); err == nil {
		size = st.Size()
	}
	last := f.at + res.Steps
	cont := fmt.Sprintf("#%d..#%d the continuation", f.at+1, last)
	if res.Steps == 0 {
		cont = "no continuation"
	}
	fmt.Fprintf(out, "wrote %s (%s): steps #0..#%d are the parent's, %s\n", f.sim.output, humanize.IBytes(uint64(size)), f.at, cont)
	if stuck != nil {
		return withCode(ExitInterrupted, stuck) // a handler that never returned, left behind
	}
	if runErr != nil {
		fmt.Fprintf(out, "the continuation stopped on an error; the trace holds every event up to it\n")
		return withCode(ExitViolations, runErr)
	}
	o := shellword.Path(f.sim.output)
	fmt.Fprintf(out, "next: %[1]s verify %[2]s; %[1]s check %[2]s PREDS.star; %[1]s debug %[2]s --at %[3]d\n", a.prog(), o, min(f.at+1, last))
	return nil
}

// forkConfig turns the fork's flags into the continuation's sim.Config:
// the parent fixes the build (bug, params) and the nodes.
func forkConfig(sys *system.System, tr *replay.Trace, f simFlags) (sim.Config, error) {
	if len(tr.Nodes) > sim.MaxNodes {
		return sim.Config{}, badInput("the trace has %d nodes; the simulator runs at most %d", len(tr.Nodes), sim.MaxNodes)
	}
	user := f.changed
	inherited := map[string]bool{"nodes": true}
	f.changed = func(name string) bool { return inherited[name] || user(name) }
	f.nodes, f.bug, f.params = len(tr.Nodes), tr.Header.Bug, nil
	// A simulated parent's network and faults carry over unless a flag
	// says otherwise: a fork is another future of the same run.
	if d := tr.Header.Driver; d == "sim" || d == sim.ForkDriver {
		run := tr.Header.Run
		inherit := func(flag, key string, set func(string) error) {
			if v, ok := run[key]; ok && !user(flag) && set(v) == nil {
				inherited[flag] = true
			}
		}
		float := func(to *float64) func(string) error {
			return func(v string) (err error) { *to, err = strconv.ParseFloat(v, 64); return }
		}
		inherit("drop", "drop", float(&f.drop))
		inherit("dup", "dup", float(&f.dup))
		inherit("churn", "churn", float(&f.churn))
		inherit("latency", "latency", func(v string) error { f.latency = v; return nil })
		inherit("down", "down", func(v string) error { f.down = v; return nil })
		inherit("max-down", "max_down", func(v string) (err error) { f.maxDown, err = strconv.Atoi(v); return })
	}
	for _, k := range slices.Sorted(maps.Keys(tr.Header.Params)) {
		f.params = append(f.params, k+"="+tr.Header.Params[k])
	}
	cfg, err := simConfig(sys, f)
	if err != nil {
		return cfg, withCode(ExitBadInput, fmt.Errorf("%v (a fork builds the nodes as %s recorded them and takes the network and fault settings it does not give from a simulated parent)", err, tr.Files[0].Path))
	}
	return cfg, nil
}

// printWorld says what was forked: where, the nodes, what was in flight
// (apart from what the parent run lost: see sim.LostByParent, with the
// continuation's latencyMax).
func printWorld(out io.Writer, tr *replay.Trace, w *world.World, latencyMax time.Duration) {
	ev := tr.Event(w.Step)
	fmt.Fprintf(out, "forked %s at #%d (%s seq %d %s; time %v, Lamport %d)\n", strings.Join(w.Parent, " "), w.Step,
		ev.Node, ev.Seq, ev.Kind, time.Duration(w.Now), w.Lamport)
	var up []node.ID
	for _, id := range w.Nodes {
		if w.Node[id].Up {
			up = append(up, id)
		}
	}
	down := idList(w.Down())
	for _, st := range w.Stopped {
		down += fmt.Sprintf(" (%s stopped: %s)", st.Node, st.Reason)
	}
	fmt.Fprintf(out, "  nodes: %d; up: %s; down: %s; not started: %s\n", len(w.Nodes), idList(up), down, idList(w.NotStarted()))
	const show = 8
	flying, lost := sim.SplitInFlight(w, func(step int) int64 { return tr.Event(step).Time }, latencyMax)
	list := func(ms []world.Message) {
		for i, m := range ms {
			if i == show {
				fmt.Fprintf(out, "    ... and %d more\n", len(ms)-show)
				break
			}
			fmt.Fprintf(out, "    %s -> %s %s, sent at #%d (%v)\n", m.ID, m.To, m.Type, m.SendStep, time.Duration(m.SentAt-w.Start))
		}
	}
	fmt.Fprintf(out, "  in flight: %d message(s)\n", len(flying))
	list(flying)
	if len(lost) > 0 {
		fmt.Fprintf(out, "  lost by the parent run: %d message(s), never received though the receiver's clock passed the latest arrival (--latency), or the receiver was down when it passed\n", len(lost))
		// The latest, nearest the fork: a fork at #1740 listed losses
		// of #3 and #8 (a new user's).
		earlier := max(0, len(lost)-show)
		list(lost[earlier:])
		if earlier > 0 {
			fmt.Fprintf(out, "    ... and %d earlier\n", earlier)
		}
	}
	fmt.Fprintf(out, "  pending timers: %d", w.Timers())
	var per []string
	for _, id := range w.Nodes {
		if ts := w.Node[id].Timers; len(ts) > 0 {
			var names []string
			for _, t := range ts {
				names = append(names, fmt.Sprintf("%s@%v", t.Name, time.Duration(t.Due-w.Start)))
			}
			per = append(per, fmt.Sprintf("%s: %s", id, strings.Join(names, " ")))
		}
	}
	if len(per) > 0 && len(per) <= show {
		fmt.Fprintf(out, " (%s)", strings.Join(per, "; "))
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "  partitions: none (traces do not record partitions; the fork starts healed)")
}

func idList(ids []node.ID) string {
	if len(ids) == 0 {
		return "none"
	}
	return joinIDs(ids)
}

// sameFile reports whether two paths name one file (or one path that does
// not exist yet).
func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	ca, _ := filepath.Abs(a)
	cb, _ := filepath.Abs(b)
	return ca == cb
}

// timeCutNote warns when the steps #0..#at are not all the events up to
// one instant. Steps follow causal (Lamport) order, so a node may have run
// far ahead in time within them; the world then starts at its time and
// every other node's timers and messages are overdue there: a future
// the parent could not have had. It names the nearest steps where the
// causal cut is also a time cut, or returns "" when at is one.
func timeCutNote(tr *replay.Trace, at int) string {
	n := tr.Len()
	prefixMax := make([]int64, n)
	for i := range n {
		prefixMax[i] = tr.Event(i).Time
		if i > 0 {
			prefixMax[i] = max(prefixMax[i], prefixMax[i-1])
		}
	}
	suffixMin := make([]int64, n+1)
	suffixMin[n] = math.MaxInt64
	for i := n - 1; i >= 0; i-- {
		suffixMin[i] = min(tr.Event(i).Time, suffixMin[i+1])
	}
	clean := func(i int) bool { return prefixMax[i] <= suffixMin[i+1] }
	// How far the world's time is past the earliest step still to come:
	// measured against the steps after #at, not #at's own time, since #at
	// may be the event that ran ahead (an idle node's timer).
	if clean(at) || time.Duration(prefixMax[at]-suffixMin[at+1]) <= 10*time.Millisecond {
		return ""
	}
	var near []string
	for i := at - 1; i >= 0; i-- {
		if clean(i) {
			near = append(near, fmt.Sprintf("#%d", i))
			break
		}
	}
	for i := at + 1; i < n; i++ {
		if clean(i) {
			near = append(near, fmt.Sprintf("#%d", i))
			break
		}
	}
	hint := ""
	if len(near) > 0 {
		hint = "; steps with no later step earlier in time: " + strings.Join(near, ", ")
	}
	return fmt.Sprintf("steps up to #%d reach t=%v but a later step is at t=%v (causal order is not time order): the continuation starts at t=%v, so nodes whose last event is earlier find their timers and messages overdue%s",
		at, time.Duration(prefixMax[at]-tr.Header.Start), time.Duration(suffixMin[at+1]-tr.Header.Start), time.Duration(prefixMax[at]-tr.Header.Start), hint)
}

// checkForkStep refuses a step no world can be rebuilt at: fork and
// explore --from share it.
func checkForkStep(tr *replay.Trace, at int, paths []string) error {
	switch {
	case tr.Len() == 0:
		return badInput("--at %d: %s holds no events to fork from", at, strings.Join(paths, " "))
	case at >= tr.Len():
		return badInput("--at %d: beyond the trace, whose steps are #0..#%d", at, tr.Len()-1)
	}
	return nil
}

// rebuildWorld replays r to step at and returns the world there, as fork
// and explore --from continue it: a divergence before the step exits 3
// (as replay verify), a world that cannot be rebuilt (a node whose state
// is unknown there) is bad input.
func rebuildWorld(r *replay.Replayer, at int, progress func(int)) (*world.World, error) {
	w, err := replay.WorldAt(r, at, progress)
	if err != nil {
		return nil, worldError(at, err)
	}
	return w, nil
}

// worldError gives a failure to rebuild the world at step at its exit
// code.
func worldError(at int, err error) error {
	var d *replay.Divergence
	switch {
	case errors.As(err, &d):
		return &exitError{ExitDivergence, fmt.Errorf("cannot rebuild the world at #%d: the trace diverges on replay before it: %s (verify shows the details)", at, oneLine(d.Error()))}
	}
	return badInput("%v", err)
}
