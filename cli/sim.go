package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

type simFlags struct {
	seed          uint64
	nodes         int
	steps         int
	time          time.Duration
	drop          float64
	dup           float64
	churn         float64
	latency       string
	bug           string
	params        []string
	output        string
	noStateHashes bool
	verbose       bool
	seeds         string
	check         string
	failOn        string
}

func (a *App) simCmd() *cobra.Command {
	var f simFlags
	cmd := &cobra.Command{
		Use:   "sim SYSTEM [flags] -o FILE",
		Short: "Run a system in the simulator and record the trace",
		Long: `Run SYSTEM in the deterministic simulator and record every event to FILE.

The simulator runs all nodes in one process on virtual time. Every choice it
makes (message latency, loss, duplication, crashes, the handlers' random
draws) comes from --seed, so the same seed and flags produce a byte-identical
trace. The run stops at --steps events, at --time of virtual time, or when the
system's scenario says it is done.

Flags left unset take the system's defaults, listed below for every system
this binary knows, with its seeded bugs.

With --seeds FROM-TO --check PREDS.star, sim hunts across seeds: it checks
each run and stops at the first with a violation --fail-on counts, writes
that run's trace to -o and prints the seed, the report and the commands
that reproduce the run and open the debugger at the violation (exit 1);
if no seed fails it exits 0.`,
		Example: `  replay sim paxos --seed 1 -o paxos.lz4
  replay sim paxos --bug spec --seeds 1-200 --check scripts/paxos.star -o spec.lz4
  replay sim paxos --bug latest-response --seed 21 --drop 0.3 -o bug.lz4
  replay sim paxos --churn 0 --time 2s -o nochurn.lz4`,
		Args: requireArgs(1, "SYSTEM (one of the registered systems)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runSim(cmd, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.Uint64Var(&f.seed, "seed", 1, "seed for every random choice of the run")
	fl.IntVar(&f.nodes, "nodes", 0, "number of nodes (default: the system's)")
	fl.IntVar(&f.steps, "steps", 0, "stop after this many events (default: the system's)")
	fl.DurationVar(&f.time, "time", 0, "stop at this virtual time, e.g. 5s (default: the system's)")
	fl.Float64Var(&f.drop, "drop", sim.Unset, "probability that a message is lost, 0..1 (default: the system's)")
	fl.Float64Var(&f.dup, "dup", sim.Unset, "probability that a message is delivered twice, 0..1 (default: the system's)")
	fl.Float64Var(&f.churn, "churn", sim.Unset, "random crashes per node per virtual second; 0 turns churn off (default: the system's)")
	fl.StringVar(&f.latency, "latency", "", "message latency range MIN-MAX, e.g. 1ms-10ms (default: the system's)")
	fl.StringVar(&f.bug, "bug", "none", "seeded bug to build the nodes with; 'none' is the correct program")
	fl.StringArrayVar(&f.params, "param", nil, "system-specific setting KEY=VALUE (repeatable)")
	fl.StringVarP(&f.output, "output", "o", "", "trace file to write (default: SYSTEM-SEED.lz4)")
	fl.BoolVar(&f.noStateHashes, "no-state-hashes", false, "do not record a hash of each node's state after every event (smaller trace, weaker divergence detection)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "print the handlers' log lines to stderr")
	fl.StringVar(&f.seeds, "seeds", "", "hunt across seeds FROM-TO (with --check): stop at the first run with a violation, write its trace to -o")
	fl.StringVar(&f.check, "check", "", "predicates script to check each run against (with --seeds)")
	fl.StringVar(&f.failOn, "fail-on", "safety,alarm", "with --check: which findings count (safety, alarm, any, none)")
	cmd.SetHelpTemplate(cmd.HelpTemplate() + a.systemsHelp())
	return cmd
}

func (a *App) systemsHelp() string {
	var b strings.Builder
	b.WriteString("\nSystems in this binary:\n")
	for _, name := range a.Registry.Names() {
		s, _ := a.Registry.Lookup(name)
		d := sim.DefaultConfig().WithDefaults(s) // what a run without flags uses
		fmt.Fprintf(&b, "  %s: %s\n    defaults: %d nodes, latency %v-%v, drop %g, dup %g, churn %g/s, %d steps, %v\n",
			s.Name, s.Summary, d.Nodes, d.LatencyMin, d.LatencyMax, d.Drop, d.Dup, d.Churn, d.Steps, d.Time)
		fmt.Fprintf(&b, "    bugs: %s\n", strings.Join(s.BugNames(), ", "))
		for _, bug := range s.Bugs {
			fmt.Fprintf(&b, "      %s: %s\n", bug.Name, bug.Summary)
		}
	}
	return b.String()
}

// simConfig turns flags into a sim.Config for sys.
func simConfig(sys *system.System, f simFlags) (sim.Config, error) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Nodes, cfg.Steps, cfg.Time = f.seed, f.nodes, f.steps, f.time
	cfg.Drop, cfg.Dup, cfg.Churn, cfg.Bug = f.drop, f.dup, f.churn, f.bug
	cfg.NoStateHashes = f.noStateHashes
	if f.nodes < 0 || f.steps < 0 || f.time < 0 {
		return cfg, badInput("--nodes, --steps and --time must not be negative")
	}
	if f.drop != sim.Unset && (f.drop < 0 || f.drop > 1) {
		return cfg, badInput("--drop %v: a probability is between 0 and 1", f.drop)
	}
	if f.dup != sim.Unset && (f.dup < 0 || f.dup > 1) {
		return cfg, badInput("--dup %v: a probability is between 0 and 1", f.dup)
	}
	if f.churn != sim.Unset && f.churn < 0 {
		return cfg, badInput("--churn %v: a rate is 0 or more", f.churn)
	}
	if f.latency != "" {
		lo, hi, ok := strings.Cut(f.latency, "-")
		min, err1 := time.ParseDuration(lo)
		max, err2 := time.ParseDuration(hi)
		if !ok || err1 != nil || err2 != nil || min < 0 || max < min {
			return cfg, badInput("--latency %q: want MIN-MAX durations with MIN <= MAX, e.g. 1ms-10ms", f.latency)
		}
		cfg.LatencyMin, cfg.LatencyMax = min, max
		if min == 0 {
			cfg.LatencyMin = 1 // a zero would mean "the system's default"
		}
	}
	if len(f.params) > 0 {
		cfg.Params = map[string]string{}
		for _, p := range f.params {
			k, v, ok := strings.Cut(p, "=")
			if !ok || k == "" {
				return cfg, badInput("--param %q: want KEY=VALUE", p)
			}
			cfg.Params[k] = v
		}
	}
	if err := sys.CheckBug(f.bug); err != nil {
		return cfg, badInput("%v", err)
	}
	cfg = cfg.WithDefaults(sys)
	if err := cfg.Validate(); err != nil {
		return cfg, badInput("%v", err)
	}
	return cfg, nil
}

func (a *App) runSim(cmd *cobra.Command, name string, f simFlags) error {
	sys, err := a.Registry.Lookup(name)
	if err != nil {
		return badInput("%v", err)
	}
	cfg, err := simConfig(sys, f)
	if err != nil {
		return err
	}
	if f.seeds != "" || f.check != "" {
		return a.huntSeeds(sys, cfg, f)
	}
	out := f.output
	if out == "" {
		out = fmt.Sprintf("%s-%d.lz4", sys.Name, cfg.Seed)
	}
	file, err := createAtomic(out)
	if err != nil {
		return err
	}
	defer file.Abort()

	// Ctrl-C ends the run early but keeps a complete, valid trace of what
	// ran: nothing recorded is lost.
	var interrupted atomic.Bool
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; ok {
			interrupted.Store(true)
		}
	}()
	prog := a.progress()
	cfg.Progress = func(steps int, now time.Duration) {
		prog.update("simulating %s: %d events, virtual time %v", sys.Name, steps, now.Truncate(time.Millisecond))
	}
	cfg.Observe = func(*node.Event, *node.Instance) error {
		if interrupted.Load() {
			return sim.ErrStopped
		}
		return nil
	}
	if f.verbose {
		cfg.Log = a.Stderr
	}
	start := time.Now()
	res, runErr := sim.Run(sys, cfg, file)
	prog.done()
	if res == nil { // the run never started
		return badInput("%v", runErr)
	}
	if err := file.Commit(); err != nil {
		return withCode(ExitBadInput, err)
	}
	elapsed := time.Since(start)
	st, _ := os.Stat(out)
	size := int64(0)
	if st != nil {
		size = st.Size()
	}
	reason := res.Reason
	if interrupted.Load() {
		reason = "interrupted"
	}
	w := a.Stdout
	fmt.Fprintf(w, "simulated %s (bug %s, seed %d, %d nodes): %d events in %v of virtual time in %v\n",
		sys.Name, cfg.Bug, cfg.Seed, cfg.Nodes, res.Steps, res.Time.Truncate(time.Millisecond), elapsed.Round(time.Millisecond))
	if reason != "" {
		fmt.Fprintf(w, "  stopped: %s\n", reason)
	}
	s := res.Stats
	fmt.Fprintf(w, "  network: %d sent, %d delivered, %d lost, %d duplicated, %d cut by partitions, %d to down nodes\n",
		s.Sent, s.Delivered, s.Lost, s.Duplicated, s.Partitioned, s.ToDownNode)
	fmt.Fprintf(w, "  faults: %d crashes, %d restarts\n", s.Crashes, s.Restarts)
	perEvent := 0.0
	if res.Steps > 0 {
		perEvent = float64(size) / float64(res.Steps)
	}
	fmt.Fprintf(w, "wrote %s: %s, %.1f bytes/event\n", out, humanize.IBytes(uint64(size)), perEvent)
	if runErr != nil {
		fmt.Fprintf(w, "the run stopped on an error; the trace holds every event up to it\n")
		return withCode(ExitViolations, runErr)
	}
	fmt.Fprintf(w, "next: replay info %s; replay events %s --limit 20\n", out, out)
	return nil
}
