// Package simtest runs simulations with predicates checked, for tests
// (Check, from go test) and for hunting bugs across seeds (Run, used by
// `replay sim --seeds --check`). A run is simulated into memory, replayed
// in causal order and checked, so steps are numbered exactly as every
// `replay` verb numbers them.
package simtest

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
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
}

// Run simulates sys under cfg (defaults applied), then replays the trace
// and checks the script at scriptPath. If a predicate, derived value or
// stability measure failed to evaluate, the run was not fully checked:
// Run returns the result together with an error wrapping a
// *predicates.EvalError, so a caller that only looks at Failing cannot
// take the seed for clean.
func Run(sys *system.System, cfg sim.Config, scriptPath string, opts Options) (*Result, error) {
	cfg = cfg.WithDefaults(sys)
	var buf bytes.Buffer
	res, err := sim.Run(sys, cfg, &buf)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s-seed%d.lz4", sys.Name, cfg.Seed)
	tr, err := replay.FromBytes(buf.Bytes(), name)
	if err != nil {
		return nil, err
	}
	reg := opts.Registry
	if reg == nil {
		reg = system.NewRegistry(sys)
	}
	r, err := replay.New(tr, reg, replay.Options{})
	if err != nil {
		return nil, err
	}
	c, err := predicates.Load(scriptPath, r, predicates.Options{To: -1})
	if err != nil {
		return nil, err
	}
	counts := opts.Counts
	if counts == nil {
		counts = func(v *predicates.Violation) bool { return v.Kind == "safety" || v.Alarm }
	}
	rep, err := c.Run(predicates.RunOptions{StopAtFirst: opts.StopAtFirst, Counts: counts})
	if err != nil {
		return nil, fmt.Errorf("seed %d: %w", cfg.Seed, err)
	}
	out := &Result{Config: cfg, Sim: res, Trace: buf.Bytes(), Report: rep}
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

// SimCommand is the `replay sim` command line that reproduces cfg: every
// setting that differs from the system's defaults, plus the seed and bug.
func SimCommand(sys *system.System, cfg sim.Config, output string) string {
	def := sim.DefaultConfig().WithDefaults(sys)
	args := []string{"replay", "sim", sys.Name, "--seed", strconv.FormatUint(cfg.Seed, 10)}
	if cfg.Bug != "none" {
		args = append(args, "--bug", cfg.Bug)
	}
	add := func(flag string, v, d any) {
		if fmt.Sprint(v) != fmt.Sprint(d) {
			args = append(args, flag, fmt.Sprint(v))
		}
	}
	add("--nodes", cfg.Nodes, def.Nodes)
	add("--steps", cfg.Steps, def.Steps)
	add("--time", cfg.Time, def.Time)
	add("--drop", cfg.Drop, def.Drop)
	add("--dup", cfg.Dup, def.Dup)
	add("--churn", cfg.Churn, def.Churn)
	if cfg.LatencyMin != def.LatencyMin || cfg.LatencyMax != def.LatencyMax {
		args = append(args, "--latency", cfg.LatencyMin.String()+"-"+cfg.LatencyMax.String())
	}
	keys := slices.Sorted(maps.Keys(cfg.Params))
	for _, k := range keys {
		args = append(args, "--param", k+"="+cfg.Params[k])
	}
	if cfg.NoStateHashes {
		args = append(args, "--no-state-hashes")
	}
	return strings.Join(append(args, "-o", output), " ")
}

// Check simulates and checks, and fails t on a counted violation, or on a
// predicate that failed to evaluate, with the report and the commands that
// reproduce the run and open the debugger at the first violation (or
// failure). The trace is kept in the system's temp directory so the
// debugger command works at once.
func Check(t testing.TB, sys *system.System, cfg sim.Config, scriptPath string) *Result {
	t.Helper()
	res, err := Run(sys, cfg, scriptPath, Options{})
	var evalErr *predicates.EvalError
	if err != nil && !(errors.As(err, &evalErr) && res != nil) {
		t.Fatalf("simtest: %v", err)
		return res
	}
	if len(res.Failing) == 0 && evalErr == nil {
		return res
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("replaycheck-%s-%s-seed%d.lz4", sys.Name, res.Config.Bug, res.Config.Seed))
	kept := "the trace was kept at " + path
	if err := os.WriteFile(path, res.Trace, 0o644); err != nil {
		kept = "the trace could not be kept: " + err.Error()
	}
	t.Fatal(Failure(sys, res, scriptPath, path, kept))
	return res
}

// Failure is the message Check fails a test with: the report, then the
// commands that reproduce the run and open the debugger at the first
// violation. Evaluation failures come first: the run was not fully
// checked.
func Failure(sys *system.System, res *Result, scriptPath, tracePath, kept string) string {
	var b strings.Builder
	res.Report.WriteText(&b, time.Duration(0))
	if err := res.Report.Err(); err != nil {
		var e strings.Builder
		res.Report.WriteErrors(&e)
		return fmt.Sprintf("%s seed %d: %v\n%s%s%s\nreproduce: %s\ndebug:     replay debug %s --preds %s --at %d",
			sys.Name, res.Config.Seed, err, e.String(), b.String(), kept,
			SimCommand(sys, res.Config, tracePath), tracePath, scriptPath, res.Report.Errors[0].Step)
	}
	v := res.Failing[0]
	return fmt.Sprintf("%s seed %d: %d violation(s); the first: %s\n%s%s\nreproduce: %s\ndebug:     replay debug %s --preds %s --at %d",
		sys.Name, res.Config.Seed, len(res.Failing), v.Headline(), b.String(), kept,
		SimCommand(sys, res.Config, tracePath), tracePath, scriptPath, v.Step)
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
