package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/internal/shellword"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/state"
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
	hashEvery     int
	hashBytes     int
	verbose       bool
	seeds         string
	check         string
	failOn        string
	budgets       scriptBudgetFlags
	down          string
	maxDown       int
	schedule      string
	clocks        string // "serial" or "causal" (sim only)
	codec         string // the message codec to record (sim only)
	// shard ("I/N") and results split a hunt across machines; all keeps
	// a seed hunt going after a failing seed.
	shard   string
	results string
	all     bool
	asJSON  bool // a hunt's result on stdout, as JSON
	// strictTables: a table that matched no object in any run is an
	// error (hunts, explore).
	strictTables bool
	// timeFlag names the flag of the virtual-time limit ("time" if
	// empty).
	timeFlag string
	// changed reports whether a flag was given: 0 and -1 are refused
	// when given, never taken to mean "the default".
	changed func(name string) bool
	// program is how printed commands invoke this program (App.prog).
	program string
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
this binary knows, with its seeded bugs. A flag that is given must hold a
usable value: 0 or -1 is an error, not "the default" (omit the flag for
that).

Limits: at most ` + fmt.Sprint(sim.MaxNodes) + ` nodes (the largest system a trace holds)
and --churn at most ` + fmt.Sprint(sim.MaxChurn) + ` crashes per node per virtual
second. A system may refuse a run it cannot do before it starts, with
its reason (its Validate: too many nodes for its design, a --param it
does not know); the bundled chord, for one, needs a ring position per
node (--param bits=N gives 2^N positions).

With --seeds FROM-TO --check PREDS.star, sim hunts across seeds: it checks
each run and stops at the first with a violation --fail-on counts, writes
that run's trace to -o and prints the seed, the report and the commands
that reproduce the run and open the debugger at the violation (exit 1);
if no seed fails it exits 0. --all checks every seed and reports each failing
one (the first one's trace goes to -o; every one has its reproduce command).
A seed whose replay diverges from its simulation (a nondeterministic
handler: replay verify on its trace says where and why) fails as "not
fully checked" with exit 3, as a predicate that cannot be evaluated does
with exit 4; both outrank a violation's 1. With --strict-tables, a table
of the script that matched no object in any run exits 4 when no seed
failed (a type held only behind an interface cannot be refused at load,
so a misspelt name would otherwise pass every seed vacuously).

--shard I/N runs only the seeds FROM+I, FROM+I+N, ... of the range, so that N
machines (a Kubernetes Indexed Job, deploy/kubernetes/) split one hunt, and
writes what the shard found to a result file (--results, default
SYSTEM-BUG-results-I-of-N.json); replay results merge combines the shards'
files into one report.`,
		Example: `  replay sim paxos --seed 1 -o paxos.lz4
  replay sim paxos --bug spec --seeds 1-200 --check scripts/paxos.star -o spec.lz4
  replay sim paxos --bug spec --seeds 1-1000000 --check builtin:paxos --all --shard 3/100
  replay sim paxos --bug latest-response --seed 21 --drop 0.3 -o bug.lz4
  replay sim paxos --churn 0 --time 2s -o nochurn.lz4`,
		Args:        oneSystem,
		Annotations: map[string]string{argumentIsASystem: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			f.changed = cmd.Flags().Changed
			return a.runSim(cmd, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.Uint64Var(&f.seed, "seed", 1, "seed for every random choice of the run")
	f.registerSettings(fl, "time")
	fl.StringVarP(&f.output, "output", "o", "", "trace file to write (default: SYSTEM-SEED.lz4)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "print the handlers' log lines to stderr")
	fl.StringVar(&f.seeds, "seeds", "", "hunt across seeds FROM-TO (with --check): stop at the first run with a violation, write its trace to -o")
	fl.StringVar(&f.codec, "codec", node.CodecName, "the message codec to record: this build's, or "+"cbor-core-deterministic/1 to re-make a run of an earlier release (times in whole seconds)")
	fl.StringVar(&f.clocks, "clocks", "serial", "Lamport clocks to record: serial (replay runs in the order simulated, time order) or causal (as separate processes record them, so an idle node's later events may replay early, as in a live recording)")
	fl.StringVar(&f.schedule, "schedule", "", "re-run exactly the run a schedule names: a schedule file (replay schedule) or a simulated trace")
	fl.StringVar(&f.check, "check", "", "predicates script to check each run against (with --seeds)")
	fl.StringVar(&f.failOn, "fail-on", "safety,alarm", "with --check: which findings count (safety, alarm, any, none)")
	fl.BoolVar(&f.all, "all", false, "with --seeds: check every seed and report each failing one, instead of stopping at the first")
	fl.BoolVar(&f.strictTables, "strict-tables", false, "with --check: "+strictTablesUsage)
	fl.StringVar(&f.shard, "shard", "", "with --seeds: run shard I of N (I/N, I from 0): the seeds FROM+I, FROM+I+N, ...")
	fl.StringVar(&f.results, "results", "", "with --seeds: write the hunt's result file here, for replay results merge (default with --shard: SYSTEM-BUG-results-I-of-N.json)")
	fl.BoolVar(&f.asJSON, "json", false, "with --seeds: print the hunt's result as JSON on stdout (what --results writes: runs, failures with their reproduce and debug commands), the report on stderr")
	f.budgets.register(fl)
	cmd.SetHelpTemplate(cmd.HelpTemplate() + a.systemsHelp())
	return cmd
}

// registerSettings registers the flags that set up a run (nodes, limits,
// network, churn, bug, parameters), which simConfig reads: sim and
// explore share them. timeFlag names the virtual-time limit (explore's
// --time is its wall-clock budget).
func (f *simFlags) registerSettings(fl *pflag.FlagSet, timeFlag string) {
	f.timeFlag = timeFlag
	fl.IntVar(&f.nodes, "nodes", 0, fmt.Sprintf("number of nodes, 1..%d (default: the system's)", sim.MaxNodes))
	fl.IntVar(&f.steps, "steps", 0, "stop after this many events, at least 1 (default: the system's)")
	fl.DurationVar(&f.time, timeFlag, 0, "stop at this virtual time, more than 0, e.g. 5s (default: the system's)")
	fl.Float64Var(&f.drop, "drop", 0, "probability that a message is lost, 0..1 (default: the system's)")
	fl.Float64Var(&f.dup, "dup", 0, "probability that a message is delivered twice, 0..1 (default: the system's)")
	fl.Float64Var(&f.churn, "churn", 0, fmt.Sprintf("random crashes per node per virtual second, 0..%g; 0 turns churn off (default: the system's)", sim.MaxChurn))
	fl.StringVar(&f.latency, "latency", "", "message latency range MIN-MAX, e.g. 1ms-10ms (default: the system's)")
	fl.StringVar(&f.down, "down", "", "how long a node crashed by churn stays down, MIN-MAX, e.g. 50ms-500ms (default: the system's)")
	fl.IntVar(&f.maxDown, "max-down", 0, "at most this many nodes down at once under churn, 1..nodes (default: a minority)")
	fl.StringVar(&f.bug, "bug", "none", "seeded bug to build the nodes with; 'none' is the correct program")
	fl.StringArrayVar(&f.params, "param", nil, "system-specific setting KEY=VALUE (repeatable)")
	f.registerHashing(fl, "")
}

// registerHashing adds the flags that say which events carry a state hash.
func (f *simFlags) registerHashing(fl *pflag.FlagSet, what string) {
	fl.BoolVar(&f.noStateHashes, "no-state-hashes", false, "do not record state hashes"+what+" (smaller trace; divergence found through effects only)")
	fl.IntVar(&f.hashEvery, "hash-every", 0, "hash each node's state after every K-th of its events"+what+" (1: every event, which names the exact event of a state-only divergence; default: spaced by --hash-bytes)")
	fl.IntVar(&f.hashBytes, "hash-bytes", 0, fmt.Sprintf("space state hashes"+what+" so that about B bytes of a node's state are hashed per event: small states are hashed after every event, large ones less often (default %d)", state.DefaultHashBytes))
}

// hashSpacing applies --hash-every and --hash-bytes to cfg.
func (f simFlags) hashSpacing(cfg *sim.Config) error {
	changed := f.changed
	if changed == nil {
		changed = func(string) bool { return false }
	}
	switch {
	case f.noStateHashes && (changed("hash-every") || changed("hash-bytes")):
		return badInput("--no-state-hashes and --hash-every/--hash-bytes: give one (the latter space hashes that the former leaves out)")
	case changed("hash-every") && changed("hash-bytes"):
		return badInput("--hash-every and --hash-bytes: give one (they are two ways to space state hashes)")
	case changed("hash-every"):
		if f.hashEvery < 1 {
			return badInput("--hash-every %d: want 1 or more", f.hashEvery)
		}
		cfg.HashEvery, cfg.HashBytes = f.hashEvery, 0
	case changed("hash-bytes"):
		if f.hashBytes < 1 {
			return badInput("--hash-bytes %d: want 1 or more", f.hashBytes)
		}
		cfg.HashEvery, cfg.HashBytes = 0, f.hashBytes
	}
	return nil
}

func (a *App) systemsHelp() string {
	var b strings.Builder
	b.WriteString("\nSystems in this binary:\n")
	for _, name := range a.Registry.Names() {
		s, _ := a.Registry.Lookup(name)
		d := sim.DefaultConfig().WithDefaults(s) // what a run without flags uses
		fmt.Fprintf(&b, "  %s: %s\n    defaults: %d nodes, latency %v-%v, drop %g, dup %g, churn %g/s, down %v-%v, %d steps, %v\n",
			s.Name, s.Summary, d.Nodes, d.LatencyMin, d.LatencyMax, d.Drop, d.Dup, d.Churn, d.DownMin, d.DownMax, d.Steps, d.Time)
		fmt.Fprintf(&b, "    bugs: %s\n", strings.Join(s.BugNames(), ", "))
		for _, bug := range s.Bugs {
			fmt.Fprintf(&b, "      %s: %s\n", bug.Name, bug.Summary)
		}
		if len(s.Params) > 0 {
			b.WriteString("    params (--param KEY=VALUE):\n")
		}
		for _, p := range s.Params {
			def := ""
			if p.Default != "" {
				def = " (default " + p.Default + ")"
			}
			fmt.Fprintf(&b, "      %s%s: %s\n", p.Name, def, p.Summary)
		}
	}
	return b.String()
}

// oneSystem takes exactly one SYSTEM.
var oneSystem = exactlyOne("SYSTEM", "one of the registered systems; ")

// simConfig turns flags into a sim.Config for sys. A numeric flag that
// is given must hold a usable value: a given 0 or -1 is refused, never
// read as "the system's default" (which is what leaving the flag out
// means), so a typo cannot silently run another experiment.
func simConfig(sys *system.System, f simFlags) (sim.Config, error) {
	changed := f.changed
	if changed == nil {
		changed = func(string) bool { return false }
	}
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug, cfg.NoStateHashes = f.seed, f.bug, f.noStateHashes
	if err := f.hashSpacing(&cfg); err != nil {
		return cfg, err
	}
	if changed("nodes") {
		if f.nodes < 1 { // above sim.MaxNodes: sim.CheckConfig says why
			return cfg, badInput("--nodes %d: want 1..%d (omit --nodes for the system's default)", f.nodes, sim.MaxNodes)
		}
		cfg.Nodes = f.nodes
	}
	if changed("steps") {
		if f.steps < 1 {
			return cfg, badInput("--steps %d: want at least 1 (omit --steps for the system's default)", f.steps)
		}
		cfg.Steps = f.steps
	}
	timeFlag := cmp.Or(f.timeFlag, "time")
	if changed(timeFlag) {
		if f.time <= 0 {
			return cfg, badInput("--%s %v: want a virtual time above 0, e.g. 5s (omit --%s for the system's default)", timeFlag, f.time, timeFlag)
		}
		cfg.Time = f.time
	}
	prob := func(name string, v float64, to *float64) error {
		if !changed(name) {
			return nil
		}
		if !(v >= 0 && v <= 1) { // NaN fails too
			return badInput("--%s %v: a probability is between 0 and 1 (omit --%s for the system's default)", name, v, name)
		}
		*to = v
		return nil
	}
	if err := prob("drop", f.drop, &cfg.Drop); err != nil {
		return cfg, err
	}
	if err := prob("dup", f.dup, &cfg.Dup); err != nil {
		return cfg, err
	}
	if changed("churn") {
		if !(f.churn >= 0) { // above sim.MaxChurn: sim.CheckConfig says why
			return cfg, badInput("--churn %v: a rate is between 0 (no churn) and %g crashes per node per virtual second (omit --churn for the system's default)", f.churn, sim.MaxChurn)
		}
		cfg.Churn = f.churn
	}
	var err error
	if changed("latency") {
		if cfg.LatencyMin, cfg.LatencyMax, err = durationRange("latency", f.latency); err != nil {
			return cfg, err
		}
	}
	if changed("down") {
		if cfg.DownMin, cfg.DownMax, err = durationRange("down", f.down); err != nil {
			return cfg, err
		}
	}
	if changed("clocks") {
		if cfg.CausalClocks, err = sim.ParseClocks(f.clocks); err != nil {
			return cfg, badInput("--%v", err)
		}
	}
	if changed("codec") {
		if err := node.SupportedCodec(f.codec); err != nil {
			return cfg, badInput("--codec: %v", err)
		}
		if f.codec != node.CodecName {
			cfg.Codec = f.codec
		}
	}
	if changed("max-down") {
		if f.maxDown < 1 {
			return cfg, badInput("--max-down %d: want at least 1 (omit --max-down for a minority of the nodes)", f.maxDown)
		}
		cfg.MaxDown = f.maxDown
	}
	if len(f.params) > 0 {
		cfg.Params = map[string]string{}
		for _, p := range f.params {
			k, v, ok := strings.Cut(p, "=")
			if !ok || k == "" {
				return cfg, badInput("--param %q: want KEY=VALUE", p)
			}
			if old, dup := cfg.Params[k]; dup {
				return cfg, badInput("--param %s given twice (%q and %q)", k, old, v)
			}
			cfg.Params[k] = v
		}
	}
	if err := sys.CheckBug(f.bug); err != nil { // before WithDefaults reads "" as "none"
		return cfg, badInput("%v", err)
	}
	cfg = cfg.WithDefaults(sys)
	if err := sim.CheckConfig(sys, cfg); err != nil {
		return cfg, badInput("%v", err)
	}
	return cfg, nil
}

// scheduleConfig is the configuration that re-runs the schedule named by
// --schedule. The schedule fixes every setting, so a flag that would
// change the run is refused rather than ignored.
func scheduleConfig(sys *system.System, f simFlags) (sim.Config, error) {
	for _, name := range []string{"seeds", "check", "all", "shard", "results", "json"} {
		if f.changed(name) {
			return sim.Config{}, badInput("--%s goes with a hunt across seeds, not with --schedule (check the rerun with %s check)", name, f.prog())
		}
	}
	for _, name := range []string{"seed", "nodes", "steps", "time", "drop", "dup", "churn", "latency", "down", "max-down", "bug", "param", "clocks", "codec"} {
		if f.changed(name) {
			return sim.Config{}, badInput("--%s cannot change a run --schedule names (edit the schedule instead)", name)
		}
	}
	sc, err := loadSchedule(f.schedule)
	if err != nil {
		return sim.Config{}, err
	}
	if err := sc.Check(sys); err != nil {
		return sim.Config{}, badInput("--schedule %s: %v", f.schedule, err)
	}
	if len(sc.Events) == 0 {
		// Its run would be a trace every verb refuses.
		return sim.Config{}, badInput("--schedule %s: no events: nothing to run", f.schedule)
	}
	cfg := sc.Config()
	cfg.NoStateHashes = cfg.NoStateHashes || f.noStateHashes // hashes are recorded, not run
	if err := f.hashSpacing(&cfg); err != nil {
		return cfg, err
	}
	cfg = cfg.WithDefaults(sys)
	if err := sim.CheckConfig(sys, cfg); err != nil {
		return cfg, badInput("--schedule %s: %v", f.schedule, err)
	}
	return cfg, nil
}

// durationRange parses a --latency or --down MIN-MAX. A zero MIN or MAX
// becomes 1ns: in a sim.Config zero means "the system's default".
func durationRange(flag, spec string) (lo, hi time.Duration, err error) {
	if lo, hi, err = sim.ParseDurationRange(spec); err != nil {
		return 0, 0, badInput("--%s %q: %v", flag, spec, err)
	}
	return max(lo, 1), max(hi, 1), nil
}

func (a *App) runSim(cmd *cobra.Command, name string, f simFlags) error {
	f.program = a.prog()
	sys, err := a.Registry.Lookup(name)
	if err != nil {
		// A test of a team's own system prints commands for replay
		// (simtest cannot name the test's binary): say where it runs.
		return badInput("%v: a system of your own simulates in a binary that registers it (one built with cli.Main, as in docs/user-guide.md)", err)
	}
	var cfg sim.Config
	if f.changed != nil && f.changed("schedule") {
		cfg, err = scheduleConfig(sys, f)
	} else {
		cfg, err = simConfig(sys, f)
	}
	if err != nil {
		return err
	}
	if f.changed != nil && f.changed("output") && f.output == "" {
		return badInput("-o: empty file name (omit -o for %s-%d.lz4)", sys.Name, cfg.Seed)
	}
	// A given but empty --seeds or --check is a hunt missing its half.
	if f.seeds != "" || f.check != "" || f.changed != nil && (f.changed("seeds") || f.changed("check")) {
		return a.huntSeeds(sys, cfg, f)
	}
	for _, name := range []string{"fail-on", "max-steps", "script-memory", "script-time", "all", "shard", "results", "strict-tables", "json"} {
		if f.changed != nil && f.changed(name) {
			return badInput("--%s goes with a hunt: --seeds FROM-TO --check PREDS.star", name)
		}
	}
	out := f.output
	if out == "" {
		out = fmt.Sprintf("%s-%d.lz4", sys.Name, cfg.Seed)
		if f.schedule != "" {
			out = fmt.Sprintf("%s-schedule.lz4", sys.Name)
		}
	}
	file, err := createTrace(out)
	if err != nil {
		return err
	}
	defer file.Abort()

	// Ctrl-C ends the run early but keeps a complete, valid trace of what
	// ran: nothing recorded is lost.
	interrupted, stopSignals := onInterrupt()
	defer stopSignals()
	prog := a.progress()
	cfg.Progress = func(steps int, now time.Duration) {
		prog.update("simulating %s: %d events, virtual time %v", sys.Name, steps, now.Truncate(time.Millisecond))
	}
	cfg.Observe = func(*node.Event, *node.Instance) error {
		if interrupted.Load() {
			return fmt.Errorf("interrupted: %w", sim.ErrStopped)
		}
		return nil
	}
	if f.verbose {
		cfg.Log = a.Stderr
	}
	a.sayStalls(&cfg, "sim")
	// Observe ends a run at Ctrl-C between events; Stop, polled from
	// another goroutine too, ends one stuck in a handler.
	cfg.Stop = interrupted.Load
	start := time.Now()
	res, runErr := sim.Run(sys, cfg, file)
	prog.done()
	if res == nil { // the run never started
		return badInput("%v", runErr)
	}
	if err := unwrittenTrace(out, runErr); err != nil {
		return err // the deferred Abort removes the partial file
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
	runErr, stuck := sortInterrupt(runErr)
	w := a.Stdout
	fmt.Fprintf(w, "simulated %s (bug %s, seed %d, %d nodes): %d events in %v of virtual time in %v\n",
		sys.Name, cfg.Bug, cfg.Seed, cfg.Nodes, res.Steps, res.Time.Truncate(time.Millisecond), elapsed.Round(time.Millisecond))
	if reason != "" {
		fmt.Fprintf(w, "  stopped: %s\n", reason)
	}
	s := res.Stats
	fmt.Fprintln(w, networkLine(s))
	fmt.Fprintf(w, "  faults: %d crashes, %d restarts\n", s.Crashes, s.Restarts)
	perEvent := 0.0
	if res.Steps > 0 {
		perEvent = float64(size) / float64(res.Steps)
	}
	fmt.Fprintf(w, "wrote %s: %s, %.1f bytes/event\n", out, humanize.IBytes(uint64(size)), perEvent)
	if stuck != nil {
		return withCode(ExitInterrupted, stuck) // a handler that never returned, left behind
	}
	if runErr != nil {
		fmt.Fprintf(w, "the run stopped on an error; the trace holds every event up to it\n")
		if pe := (*node.PanicError)(nil); errors.As(runErr, &pe) {
			writeStack(w, pe.Stack)
		}
		if f.schedule != "" {
			runErr = fmt.Errorf("%w%s", runErr, shrunkScheduleHint(runErr, f.schedule, f.prog()))
		}
		return scheduleExit(runErr)
	}
	q := shellword.Path(out)
	fmt.Fprintf(w, "next: %[1]s info %[2]s; %[1]s events %[2]s --limit 20\n", a.prog(), q)
	return nil
}

// networkLine is the summary's account of the simulated network.
func networkLine(s sim.Stats) string {
	return fmt.Sprintf("  network: %d sent, %d duplicated; %d delivered, %d lost, %d cut by partitions, %d to down nodes, %d in flight at the end",
		s.Sent, s.Duplicated, s.Delivered, s.Lost, s.Partitioned, s.ToDownNode, s.InFlight)
}

// sayStalls has cfg's runs say on stderr when a handler runs long: the
// run cannot stop it, only end before it (sim.Config.HandlerBound) or at
// a Ctrl-C.
func (a *App) sayStalls(cfg *sim.Config, verb string) {
	cfg.HandlerBound = simBound(a.handlerBound)
	limit := fmt.Sprintf("The run ends before that event after %v (--handler-bound), or now at Ctrl-C", a.handlerBound)
	if a.handlerBound <= 0 {
		limit = "There is no --handler-bound: the run ends before that event at Ctrl-C"
	}
	cfg.OnStall = func(id node.ID, kind node.Kind, running time.Duration) {
		if a.Terminal {
			fmt.Fprint(a.Stderr, "\r\033[K") // a hunt's progress line
		}
		fmt.Fprintf(a.Stderr, "%s %s: node %s's handler has not returned from its %s event for %v: an endless loop, or a call that blocks outside the runtime? %s\n",
			a.prog(), verb, id, kind, running, limit)
	}
}

// simBound is --handler-bound as sim.Config.HandlerBound: the flag's 0
// is no bound, the Config's the default.
func simBound(flag time.Duration) time.Duration {
	if flag <= 0 {
		return -1
	}
	return flag
}

// sortInterrupt sorts the error of a run that wrote its trace: a run
// ended at Ctrl-C while a handler did not return is stuck (exit 130, the
// trace kept); a plain Ctrl-C that the loop's own check of Stop caught
// is no error, as when Observe catches it; anything else stays runErr.
func sortInterrupt(err error) (runErr, stuck error) {
	var se *sim.StallError
	switch {
	case errors.As(err, &se) && se.Interrupted:
		return nil, err
	case errors.Is(err, sim.ErrInterrupted):
		return nil, nil
	}
	return err, nil
}

// writeStack writes a panicked handler's stack, indented under the line
// that reported it (nothing when none was kept).
func writeStack(w io.Writer, stack string) {
	if stack = strings.TrimSpace(stack); stack != "" {
		fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(stack, "\n", "\n  "))
	}
}
