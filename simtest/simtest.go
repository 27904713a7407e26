// Package simtest runs simulations with predicates checked, for tests
// (Check, from go test) and for hunting bugs across seeds (Run, used by
// `replay sim --seeds --check`). A run is simulated into memory, replayed
// in causal order and checked, so steps are numbered exactly as every
// `replay` verb numbers them.
package simtest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/shellword"

	"github.com/replaycheck/replaycheck/internal/atomicfile"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/parcheck"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/stall"
	"github.com/replaycheck/replaycheck/system"
)

// Result is one checked run.
type Result struct {
	Config  sim.Config
	Sim     *sim.Result
	Trace   []byte // the recorded trace
	Report  *predicates.Report
	Failing []*predicates.Violation // the violations Counts counted
}

// Options tune a checked run.
type Options struct {
	// Registry resolves the trace's system on replay; default: a registry
	// with just the simulated system.
	Registry *system.Registry
	// Counts decides which violations fail the run; default: safety
	// violations and liveness alarms.
	Counts func(*predicates.Violation) bool
	// StopAtFirst ends checking at the first counted violation.
	StopAtFirst bool
	// MaxSteps, MemoryBudget and TimeBudget bound the script's load and
	// each evaluation (see predicates.Options; 0: the defaults).
	MaxSteps     uint64
	MemoryBudget int64
	TimeBudget   time.Duration
	// QuietFor, if positive: when the run ended with nothing left to
	// happen, the script is evaluated once more that much virtual time
	// later (predicates.RunOptions.Quiet). A quiet world stays as it is
	// forever, but a predicate on how long something has waited would
	// break as time passed, had the run gone on.
	QuietFor time.Duration
	// HandlerBound, if positive, bounds each handler call of the check's
	// replay in wall-clock time: a handler that does not return when
	// replayed, though it did when simulated, is given up on (its
	// goroutine left behind), and the check returns the result without
	// a report and an error wrapping a *replay.Divergence at its step. A
	// stuck call also ends when Stop says so (sim.ErrInterrupted).
	HandlerBound time.Duration
	// Stop, if set, is polled after every step of the check: when it
	// returns true the check ends there, its report incomplete (a caller
	// being interrupted discards it).
	Stop func() bool
	// Prefix, if set, is the check, done once, of the steps that every
	// checked trace shares with a recording (the futures of one of its
	// steps: parcheck.NewPrefix, with LoadOptions' predicates). A trace
	// is then checked from a warm-up before the prefix's end on, with
	// the report a check from #0 gives; where that cannot be done (see
	// parcheck.Prefix.Check) it is checked from #0.
	Prefix *parcheck.Prefix
}

// Run simulates sys under cfg (defaults applied: start from
// sim.DefaultConfig(), as a sim.Config literal's zero Drop, Dup and Churn
// mean none, not the system's), then replays the trace and checks the
// script at scriptPath. If a predicate, derived value or
// stability measure failed to evaluate, the run was not fully checked:
// Run returns the result together with an error wrapping a
// *predicates.EvalError, so a caller that only looks at Failing cannot
// take the seed for clean. A replay that diverged from the simulation (a
// nondeterministic handler) returns the result, its report covering the
// steps before the divergence, with an error wrapping the
// *replay.Divergence. A handler that panicked, or did not return within
// the handler bound, returns the result with the trace of what ran (its
// Report nil: nothing was checked) and an error wrapping the
// *node.PanicError or *sim.StallError.
func Run(sys *system.System, cfg sim.Config, scriptPath string, opts Options) (*Result, error) {
	cfg = cfg.WithDefaults(sys)
	var buf bytes.Buffer
	res, err := sim.Run(sys, cfg, &buf)
	if err != nil {
		var pe *node.PanicError
		var se *sim.StallError
		if (errors.As(err, &pe) || errors.As(err, &se) && !se.Interrupted) && res != nil && buf.Len() > 0 {
			return &Result{Config: cfg, Sim: res, Trace: buf.Bytes()}, err
		}
		return nil, err
	}
	return CheckTrace(sys, cfg, res, buf.Bytes(), scriptPath, opts)
}

// CheckTrace replays a simulated run's trace and checks the script at
// scriptPath, as Run does after simulating: the one checking path shared
// by seed hunts and exploration (which simulates under its own choosers).
// cfg and res describe the run that made trace; errors are as Run's.
func CheckTrace(sys *system.System, cfg sim.Config, res *sim.Result, trace []byte, scriptPath string, opts Options) (*Result, error) {
	name := fmt.Sprintf("%s-seed%d.lz4", sys.Name, cfg.Seed)
	tr, err := replay.FromBytes(trace, name)
	if err != nil {
		return nil, err
	}
	// The check runs on a goroutine of its own, watched from this one:
	// Go cannot end a goroutine stuck in a handler, or in one Starlark
	// built-in call that outruns the predicates' time budget (which has
	// a bound of its own: predicates.StuckBound).
	w := stall.NewWatch()
	var checked *Result
	st, gaveUp, goexit := w.Run(func() { checked, err = checkTrace(sys, cfg, res, tr, trace, scriptPath, opts, w) },
		func() time.Duration { return opts.HandlerBound }, opts.Stop, nil)
	switch {
	case goexit:
		where := "outside a handler"
		if in, ok := w.Running(time.Now()); ok {
			where = fmt.Sprintf("at step #%d: %s", in.Step, in.What)
		}
		return nil, fmt.Errorf("seed %d: runtime.Goexit was called while the check replayed the run, %s", cfg.Seed, where)
	case !gaveUp:
		return checked, err
	case st.Interrupted:
		return nil, fmt.Errorf("seed %d: the check's replay was stuck at step #%d: %w", cfg.Seed, st.Step, sim.ErrInterrupted)
	case st.Own && st.Step < 0: // the script's load: the script is broken, as when its load runs out of budget
		return nil, &predicates.ScriptError{Err: errors.New(predicates.StuckFailure(st).String())}
	case st.Own: // an evaluation, not a handler
		rep := predicates.StuckReport(st)
		return &Result{Config: cfg, Sim: res, Trace: trace, Report: rep}, fmt.Errorf("seed %d: %w", cfg.Seed, rep.Err())
	}
	ev := tr.Event(st.Step)
	d := &replay.Divergence{Step: st.Step, File: name, Node: ev.Node, Seq: ev.Seq, Event: ev.Kind.String(),
		What: fmt.Sprintf("%s, did not return within %v when replayed, where the simulated one returned (an endless loop or a blocking call in a handler that is not deterministic)", st.What, opts.HandlerBound)}
	return &Result{Config: cfg, Sim: res, Trace: trace}, fmt.Errorf("seed %d: %w", cfg.Seed, d)
}

func checkTrace(sys *system.System, cfg sim.Config, res *sim.Result, tr *replay.Trace, trace []byte, scriptPath string, opts Options, w *stall.Watch) (*Result, error) {
	reg := opts.Registry
	if reg == nil {
		reg = system.NewRegistry(sys)
	}
	counts := opts.Counts
	if counts == nil {
		counts = (*predicates.Violation).Finding
	}
	ropts := predicates.RunOptions{StopAtFirst: opts.StopAtFirst, Counts: counts, Stop: opts.Stop}
	if res != nil && res.Reason == sim.ReasonQuiet {
		ropts.Quiet = opts.QuietFor
	}
	rep, err := check(tr, reg, scriptPath, opts, ropts, w)
	if rep == nil && err != nil {
		return nil, err
	}
	out := &Result{Config: cfg, Sim: res, Trace: trace, Report: rep}
	if err != nil {
		// A divergence (a nondeterministic handler) comes with the run's
		// trace, for replay verify to explain.
		var d *replay.Divergence
		if errors.As(err, &d) && rep != nil {
			return out, fmt.Errorf("seed %d: %w", cfg.Seed, err)
		}
		return nil, fmt.Errorf("seed %d: %w", cfg.Seed, err)
	}
	for _, v := range rep.Violations {
		if counts(v) {
			out.Failing = append(out.Failing, v)
		}
	}
	// The first failure is the first decided (a liveness interval opens
	// early but becomes an alarm only later).
	sort.SliceStable(out.Failing, func(i, j int) bool { return out.Failing[i].Decided() < out.Failing[j].Decided() })
	if err := rep.Err(); err != nil {
		return out, fmt.Errorf("seed %d: %w", cfg.Seed, err)
	}
	return out, nil
}

// check checks tr from where opts.Prefix leaves off when it can, else
// from #0. A nil report comes with the error that prevented the check.
func check(tr *replay.Trace, reg *system.Registry, scriptPath string, opts Options, ropts predicates.RunOptions, w *stall.Watch) (*predicates.Report, error) {
	if opts.Prefix != nil {
		rep, ok, err := opts.Prefix.Check(tr, reg, replay.Options{Watch: w}, ropts)
		if err != nil {
			return nil, err
		}
		if ok {
			return rep, nil
		}
	}
	r, err := replay.New(tr, reg, replay.Options{Watch: w})
	if err != nil {
		return nil, err
	}
	defer r.Close() // a hunt runs many: their tasks' goroutines end with each
	c, err := predicates.Load(scriptPath, r, LoadOptions(opts, 0))
	if err != nil {
		return nil, err
	}
	return c.Run(ropts)
}

// LoadOptions are the predicates' options of a check under opts that
// evaluates from step from on: what parcheck.NewPrefix's loader gives
// the checkers of a prefix shared by checked runs.
func LoadOptions(opts Options, from int) predicates.Options {
	return predicates.Options{From: from, To: -1, MaxSteps: opts.MaxSteps, MemoryBudget: opts.MemoryBudget, TimeBudget: opts.TimeBudget}
}

// SimCommand is the `replay sim` command line that reproduces cfg: the
// seed, and every setting that differs from what the command line would
// take by default, quoted for a POSIX shell. Every sim.Config field that
// changes the trace has its flag here; a test walks the fields by
// reflection so a new one cannot be forgotten.
func SimCommand(sys *system.System, cfg sim.Config, output string) string {
	cfg = cfg.WithDefaults(sys)
	// The defaults the printed command gets: MaxDown's depends on the
	// number of nodes, which is printed first.
	def := sim.DefaultConfig()
	def.Nodes = cfg.Nodes
	def = def.WithDefaults(sys)
	if _, seeded := cfg.Chooser.(*sim.Seeded); cfg.Chooser != nil && !seeded {
		// A run another chooser made is reproduced by its schedule, which
		// its trace holds: the seed alone does not name it.
		rerun := strings.TrimSuffix(output, ".lz4") + "-rerun.lz4"
		args := []string{"replay", "sim", sys.Name, "--schedule", output, "-o", rerun}
		for i, a := range args {
			args[i] = shellword.Quote(a)
		}
		return strings.Join(args, " ")
	}
	args := []string{"replay", "sim", sys.Name, "--seed", strconv.FormatUint(cfg.Seed, 10)}
	add := func(differs bool, flag, value string) {
		if differs {
			args = append(args, flag, value)
		}
	}
	float := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	span := func(lo, hi time.Duration) string { return lo.String() + "-" + hi.String() }
	add(cfg.Bug != def.Bug, "--bug", cfg.Bug)
	add(cfg.Nodes != sim.DefaultConfig().WithDefaults(sys).Nodes, "--nodes", strconv.Itoa(cfg.Nodes))
	add(cfg.Steps != def.Steps, "--steps", strconv.Itoa(cfg.Steps))
	add(cfg.Time != def.Time, "--time", cfg.Time.String())
	add(cfg.Drop != def.Drop, "--drop", float(cfg.Drop))
	add(cfg.Dup != def.Dup, "--dup", float(cfg.Dup))
	add(cfg.Churn != def.Churn, "--churn", float(cfg.Churn))
	add(cfg.LatencyMin != def.LatencyMin || cfg.LatencyMax != def.LatencyMax, "--latency", span(cfg.LatencyMin, cfg.LatencyMax))
	add(cfg.DownMin != def.DownMin || cfg.DownMax != def.DownMax, "--down", span(cfg.DownMin, cfg.DownMax))
	add(cfg.MaxDown != def.MaxDown, "--max-down", strconv.Itoa(cfg.MaxDown))
	add(cfg.CausalClocks, "--clocks", "causal")
	add(cfg.Codec != "" && cfg.Codec != node.CodecName, "--codec", cfg.Codec)
	for _, k := range slices.Sorted(maps.Keys(cfg.Params)) {
		args = append(args, "--param", k+"="+cfg.Params[k])
	}
	switch {
	case cfg.NoStateHashes:
		args = append(args, "--no-state-hashes")
	case cfg.HashBytes > 0: // wins over HashEvery, as in the simulator
		args = append(args, "--hash-bytes", strconv.Itoa(cfg.HashBytes))
	case cfg.HashEvery > 0:
		args = append(args, "--hash-every", strconv.Itoa(cfg.HashEvery))
	}
	args = append(args, "-o", output)
	for i, a := range args {
		args[i] = shellword.Quote(a)
	}
	return strings.Join(args, " ")
}

// Check simulates and checks, and fails t on a counted violation, or on a
// predicate that failed to evaluate, with the report and the commands that
// reproduce the run and open the debugger at the first violation (or
// failure). It fails t as t.Fatal does, so a loop over seeds stops at the
// first failing one (run each seed as a subtest to see them all); the
// result it returns is that of a run that passed. The trace is kept in
// the system's temp directory so the debugger command works at once.
func Check(t testing.TB, sys *system.System, cfg sim.Config, scriptPath string) *Result {
	t.Helper()
	res, err := Run(sys, cfg, scriptPath, Options{})
	var evalErr *predicates.EvalError
	var panicked *node.PanicError
	if errors.As(err, &panicked) && res != nil {
		// The system's own code failed: where, and the run to look at.
		path, kept := keep(sys, res)
		t.Fatalf("simtest: %v\n%s\n%s\nreproduce: %s", err, strings.TrimSpace(panicked.Stack), kept, SimCommand(sys, res.Config, path))
		return res
	}
	if err != nil && !(errors.As(err, &evalErr) && res != nil) {
		t.Fatalf("simtest: %v", err)
		return res
	}
	if len(res.Failing) == 0 && evalErr == nil {
		return res
	}
	path, kept := keep(sys, res)
	t.Fatal(Failure(sys, res, scriptPath, path, kept))
	return res
}

// keep writes a failing run's trace to the temp directory and says where
// (or why it could not). Under a name fixed by its content (the same seed
// and code give the same bytes, and a fixed name does not pile up files),
// whole: tests failing at once in several processes never leave a torn
// file.
func keep(sys *system.System, res *Result) (path, said string) {
	path = filepath.Join(os.TempDir(), KeptName(sys, res.Config, res.Trace))
	if err := atomicfile.Write(path, res.Trace, 0o644); err != nil {
		return path, "the trace could not be kept: " + err.Error()
	}
	return path, "the trace was kept at " + path
}

// KeptName is the file name Check keeps a failing run's trace under:
// the system, bug and seed to read, and a digest of the trace, so two
// runs of one seed under other settings (another drop rate, another
// test) never share a file and one failure's debug command never opens
// another's trace.
func KeptName(sys *system.System, cfg sim.Config, trace []byte) string {
	sum := sha256.Sum256(trace)
	return fmt.Sprintf("replaycheck-%s-%s-seed%d-%x.lz4", sys.Name, cfg.Bug, cfg.Seed, sum[:4])
}

// failureFindings is how many findings of each predicate a failure
// message shows.
const failureFindings = 3

// Failure is the message Check fails a test with: the report, then the
// commands that reproduce the run and open the debugger at the first
// violation. Evaluation failures come first: the run was not fully
// checked. A liveness alarm opens where it was raised, as the CLI's
// commands do. The script's path is made absolute: a test runs in its
// package's directory, and the command is run from anywhere.
func Failure(sys *system.System, res *Result, scriptPath, tracePath, kept string) string {
	if abs, err := filepath.Abs(scriptPath); err == nil {
		scriptPath = abs
	}
	scriptPath, quotedTrace := shellword.Path(scriptPath), shellword.Path(tracePath)
	if !bundled(sys) {
		// The stock replay does not know a system of the user's: the
		// commands below are for their binary (a new user pasted them
		// into replay: "unknown system").
		kept += fmt.Sprintf("\n(replay below is a binary that registers %s: yours, built with cli.Main; the bundled replay does not know it)", sys.Name)
	}
	var b strings.Builder
	res.Report.WriteTextLimited(&b, time.Duration(0), failureFindings)
	if err := res.Report.Err(); err != nil {
		var e strings.Builder
		res.Report.WriteErrors(&e)
		// The debugger opens at the first violation when there is one
		// (the error may come long after it), else at the error.
		at := res.Report.Errors[0].Step
		if len(res.Failing) > 0 {
			at = res.Failing[0].Decided()
		}
		return fmt.Sprintf("%s seed %d: %v\n%s%s%s\nreproduce: %s\ndebug:     replay debug %s --preds %s --at %d",
			sys.Name, res.Config.Seed, err, e.String(), b.String(), kept,
			SimCommand(sys, res.Config, tracePath), quotedTrace, scriptPath, at)
	}
	v := res.Failing[0]
	return fmt.Sprintf("%s seed %d: %d violation(s); the first: %s\n%s%s\nreproduce: %s\ndebug:     replay debug %s --preds %s --at %d",
		sys.Name, res.Config.Seed, len(res.Failing), v.Headline(), b.String(), kept,
		SimCommand(sys, res.Config, tracePath), quotedTrace, scriptPath, v.Decided())
}

// Record simulates sys under cfg (defaults applied) into the trace file at
// path, failing t on any error, and returns path.
func Record(t testing.TB, sys *system.System, cfg sim.Config, path string) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(sys, cfg.WithDefaults(sys), f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// bundled says whether sys is one of replay's own systems, by where its
// constructor was compiled from.
func bundled(sys *system.System) bool {
	if sys.New == nil {
		return false
	}
	fn := runtime.FuncForPC(reflect.ValueOf(sys.New).Pointer())
	return fn != nil && strings.HasPrefix(fn.Name(), "github.com/replaycheck/replaycheck/examples/")
}
