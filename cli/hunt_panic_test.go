package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/cli"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// Faulty panics on its third timer at n2.
type Faulty struct{ Ticks int }

func (f *Faulty) Init(env node.Env)                       { env.After(time.Millisecond, "tick") }
func (f *Faulty) Receive(node.Env, node.ID, node.Message) {}
func (f *Faulty) Timer(env node.Env, _ node.Timer) {
	f.Ticks++
	if env.Self() == "n2" && f.Ticks == 3 {
		var m map[string]int
		m["x"] = 1 // a nil map: panics
	}
	env.After(time.Millisecond, "tick")
}

// A handler that panics in a seed hunt is a finding, as in explore: its
// trace is written, the result file names it (kind panic), --all goes on
// to the next seed, and the stack says where. Before, the hunt printed
// one line and exited 1 with no trace and no result file.
func TestSeedHuntKeepsAHandlerPanic(t *testing.T) {
	sys := &system.System{Name: "faulty", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &Faulty{} },
		Sim: system.SimDefaults{Nodes: 2, Time: time.Second}}
	dir := t.TempDir()
	script := filepath.Join(dir, "f.star")
	os.WriteFile(script, []byte(`F = table("cli_test.Faulty")
safety("Ticks", lambda: forall(F, lambda f: f.Ticks >= 0))
`), 0o644)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		app := &cli.App{Registry: system.NewRegistry(sys), Stdout: &out, Stderr: &errb}
		return app.Run(args), out.String(), errb.String()
	}
	trace, results := filepath.Join(dir, "h.lz4"), filepath.Join(dir, "r.json")
	code, out, errs := run("sim", "faulty", "--seeds", "1-2", "--check", script, "--all", "--results", results, "-o", trace)
	if code != cli.ExitViolations || strings.Count(out, "handler panicked in timer event") != 2 {
		t.Fatalf("hunt: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if _, err := os.Stat(trace); err != nil {
		t.Fatalf("no trace of the first panic: %v", err)
	}
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatalf("no result file: %v", err)
	}
	var rf struct {
		Failures []struct {
			Kind string `json:"kind"`
		} `json:"failures"`
	}
	if err := json.Unmarshal(b, &rf); err != nil || len(rf.Failures) != 2 || rf.Failures[0].Kind != "panic" {
		t.Fatalf("result file (%v): %s", err, b)
	}
	// Without --all: the stack names the handler's line.
	code, out, errs = run("sim", "faulty", "--seeds", "1-2", "--check", script, "-o", trace)
	if code != cli.ExitViolations || !strings.Contains(out, "hunt_panic_test.go:") {
		t.Fatalf("hunt without --all: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	// One run prints the stack too, as the user guide says.
	code, out, errs = run("sim", "faulty", "--seed", "1", "-o", filepath.Join(dir, "one.lz4"))
	if code == cli.ExitOK || !strings.Contains(out, "goroutine ") || !strings.Contains(out, "hunt_panic_test.go:") {
		t.Fatalf("one run: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

// Stuck's n2 blocks in its third timer until release closes.
type Stuck struct {
	Ticks   int
	release chan struct{} `replay:"-"`
}

func (s *Stuck) Init(env node.Env)                       { env.After(time.Millisecond, "tick") }
func (s *Stuck) Receive(node.Env, node.ID, node.Message) {}
func (s *Stuck) Timer(env node.Env, _ node.Timer) {
	s.Ticks++
	if env.Self() == "n2" && s.Ticks == 3 {
		<-s.release
	}
	env.After(time.Millisecond, "tick")
}

// stuckApp runs command lines on the Stuck system (its blocked handlers
// let go when the test ends), with a folder and a script over it.
func stuckApp(t *testing.T) (run func(args ...string) (int, string, string), dir, script string) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	sys := &system.System{Name: "stuck", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &Stuck{release: release} },
		Sim: system.SimDefaults{Nodes: 2, Time: time.Second}}
	dir = t.TempDir()
	script = filepath.Join(dir, "s.star")
	os.WriteFile(script, []byte(`S = table("cli_test.Stuck")
safety("Ticks", lambda: forall(S, lambda s: s.Ticks >= 0))
`), 0o644)
	run = func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		app := &cli.App{Registry: system.NewRegistry(sys), Stdout: &out, Stderr: &errb}
		return app.Run(args), out.String(), errb.String()
	}
	return run, dir, script
}

// A handler that does not return in a seed hunt is a finding: its trace
// (up to the stuck event) is written, the result file names it (kind
// stall) and merges, and the hunt stops there even with --all, since the
// stuck goroutine cannot be ended. Before, the hunt printed one line and
// exited 1 with no trace and no result file.
func TestSeedHuntKeepsAStuckHandlersTrace(t *testing.T) {
	run, dir, script := stuckApp(t)
	trace, results := filepath.Join(dir, "h.lz4"), filepath.Join(dir, "r.json")
	code, out, errs := run("sim", "stuck", "--seeds", "1-3", "--check", script, "--all", "--results", results, "-o", trace, "--handler-bound", "500ms")
	if code != cli.ExitViolations || !strings.Contains(out, "seed 1 fails (1 of seeds 1-3 tried): node n2's handler did not return from its timer event within 500ms") ||
		!strings.Contains(out, "the hunt stops at seed 1 even with --all") || strings.Contains(out, "seed 2") {
		t.Fatalf("hunt: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, info, errs := run("info", trace)
	if code != cli.ExitOK || !strings.Contains(info, "did not return from its timer event") {
		t.Fatalf("info of the stuck seed's trace: exit %d\n%s%s", code, info, errs)
	}
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatalf("no result file: %v", err)
	}
	var rf struct {
		Complete bool `json:"complete"`
		Failures []struct {
			Kind string `json:"kind"`
		} `json:"failures"`
	}
	if err := json.Unmarshal(b, &rf); err != nil || len(rf.Failures) != 1 || rf.Failures[0].Kind != "stall" || rf.Complete {
		t.Fatalf("result file (%v): %s", err, b)
	}
	if code, out, errs := run("results", "merge", results); code != cli.ExitViolations || !strings.Contains(out, "did not return") {
		t.Fatalf("merge: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

// A handler that does not return in an exploration is a finding, as a
// panic is: its trace and schedule are written (the schedule holds the
// stuck event), the result file names it (kind stall) and merges, and
// the exploration stops there even with --all. Before, explore ended
// with one line, exit 1, and kept nothing.
func TestExploreKeepsAStuckHandlersRun(t *testing.T) {
	run, dir, script := stuckApp(t)
	trace, results := filepath.Join(dir, "e.lz4"), filepath.Join(dir, "r.json")
	code, out, errs := run("explore", "stuck", "--check", script, "--budget", "20", "--all", "--results", results, "-o", trace, "--handler-bound", "500ms")
	if code != cli.ExitViolations || !strings.Contains(out, "run 0 fails: node n2's handler did not return from its timer event within 500ms") ||
		!strings.Contains(out, "the exploration stops here") || !strings.Contains(out, "(with the event whose handler did not return)") {
		t.Fatalf("explore: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatalf("no result file: %v", err)
	}
	var rf struct {
		Stopped  string `json:"stopped"`
		Failures []struct {
			Kind string `json:"kind"`
		} `json:"failures"`
	}
	if err := json.Unmarshal(b, &rf); err != nil || len(rf.Failures) != 1 || rf.Failures[0].Kind != "stall" || rf.Stopped != "stall" {
		t.Fatalf("result file (%v): %s", err, b)
	}
	if code, out, errs := run("results", "merge", results); code != cli.ExitViolations || !strings.Contains(out, "did not return") {
		t.Fatalf("merge: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	// The schedule reproduces it: the run stalls at the same event.
	schedule := strings.TrimSuffix(trace, ".lz4") + ".schedule"
	if _, err := os.Stat(schedule); err != nil {
		t.Fatalf("no schedule: %v\n%s", err, out)
	}
	code, out, errs = run("sim", "stuck", "--schedule", schedule, "-o", filepath.Join(dir, "again.lz4"), "--handler-bound", "500ms")
	if code != cli.ExitViolations || !strings.Contains(errs, "node n2's handler did not return from its timer event within 500ms") {
		t.Fatalf("sim --schedule: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}
