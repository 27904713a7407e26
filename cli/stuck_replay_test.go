package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/cli"
	"github.com/replaycheck/replaycheck/internal/syncbuf"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/statedb"
	"github.com/replaycheck/replaycheck/system"
)

// ReplayLoop's n2 blocks in its third timer when replayed (a Go channel:
// what the code changed since the recording, or a nondeterministic
// handler, might do), though the simulated run returned.
type ReplayLoop struct {
	Ticks   int
	loop    *atomic.Bool  `replay:"-"`
	release chan struct{} `replay:"-"`
	hold    *atomic.Int64 `replay:"-"` // > 0: blocks that long, then returns; < 0: runtime.Goexit
}

func (r *ReplayLoop) Init(env node.Env)                       { env.After(time.Millisecond, "tick") }
func (r *ReplayLoop) Receive(node.Env, node.ID, node.Message) {}
func (r *ReplayLoop) Timer(env node.Env, _ node.Timer) {
	r.Ticks++
	if env.Self() == "n1" {
		env.Send("n2", Ping{N: int64(r.Ticks)}) // some are lost: events replays for their fields
	}
	if env.Self() == "n2" && r.Ticks == 3 && r.loop.Load() {
		if h := time.Duration(r.hold.Load()); h < 0 {
			runtime.Goexit()
		} else if h > 0 {
			select {
			case <-r.release:
			case <-time.After(h):
			}
		} else {
			<-r.release
		}
	}
	env.After(time.Millisecond, "tick")
}

// replayLoopTrace simulates the system with its handlers returning and
// then makes them block when replayed. run runs a command line (within
// 60 s) with stderr to errs.
func replayLoopTrace(t *testing.T) (run func(errs *syncbuf.Buffer, args ...string) (int, string), trace, script string) {
	run, trace, script, _ = replayLoopSystem(t, nil)
	return run, trace, script
}

// replayLoopSystem is replayLoopTrace whose handler blocks for hold (0:
// until the test ends), with the App it runs commands on (app, if not
// nil, is given the system's registry).
func replayLoopSystem(t *testing.T, app *cli.App) (run func(errs *syncbuf.Buffer, args ...string) (int, string), trace, script string, hold *atomic.Int64) {
	t.Helper()
	hold = new(atomic.Int64)
	loop := new(atomic.Bool)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // lets the left-behind handlers go
	sys := &system.System{Name: "replayloop", Codec: node.NewCodec().MustRegister(Ping{}),
		New: func(node.ID, system.Config) node.Handler {
			return &ReplayLoop{loop: loop, release: release, hold: hold}
		},
		Sim: system.SimDefaults{Nodes: 2, Time: 50 * time.Millisecond}}
	dir := t.TempDir()
	script = filepath.Join(dir, "r.star")
	os.WriteFile(script, []byte(`R = table("cli_test.ReplayLoop")
safety("Ticks", lambda: forall(R, lambda r: r.Ticks >= 0))
`), 0o644)
	if app != nil {
		app.Registry = system.NewRegistry(sys)
	}
	run = func(errs *syncbuf.Buffer, args ...string) (int, string) {
		var out bytes.Buffer
		app := &cli.App{Registry: system.NewRegistry(sys), Stdout: &out, Stderr: errs}
		done := make(chan int, 1)
		go func() { done <- app.Run(args) }()
		select {
		case code := <-done:
			return code, out.String()
		case <-time.After(60 * time.Second):
			t.Errorf("%v still runs after 60 s; stderr: %s", args, errs.String())
			return -1, ""
		}
	}
	trace = filepath.Join(dir, "t.lz4")
	if code, _ := run(&syncbuf.Buffer{}, "sim", "replayloop", "--seed", "1", "--drop", "0.3", "-o", trace); code != cli.ExitOK {
		t.Fatalf("sim: exit %d", code)
	}
	loop.Store(true)
	return run, trace, script, hold
}

// A handler that does not return when replayed, though the recorded one
// did, hung verify, check and index for good. Past --handler-bound they
// now end with exit 3, one line naming the step, node and event, and no
// output that looks complete (no report, no database).
func TestAReplayedHandlerThatNeverReturnsEndsTheCommand(t *testing.T) {
	run, trace, script := replayLoopTrace(t)
	for _, args := range [][]string{
		{"verify", trace},
		{"check", trace, script, "--json"},
		{"check", trace, script, "--jobs", "2"},
		{"index", trace},
	} {
		start := time.Now()
		var stderr syncbuf.Buffer
		code, out := run(&stderr, append(args, "--handler-bound", "1s")...)
		took, errs := time.Since(start), stderr.String()
		want := "replay " + args[0] + ": replay diverged at step #"
		if code != cli.ExitDivergence || !strings.HasPrefix(errs, want) || !strings.Contains(errs, "node n2's handler, in its timer event, did not return within 1s (--handler-bound)") ||
			strings.Count(errs, "\n") != 1 {
			t.Fatalf("%v: exit %d after %v\nstdout: %s\nstderr: %s", args, code, took, out, errs)
		}
		if out != "" {
			t.Fatalf("%v: stdout holds output that looks complete:\n%s", args, out)
		}
	}
	if db, err := statedb.Open(statedb.PathFor([]string{trace})); err == nil {
		db.Close()
		t.Fatal("index left a database")
	}
}

// A replay that runs long says which handler, and Ctrl-C then ends it
// (exit 130), with no bound.
func TestCtrlCEndsAReplayStuckInAHandler(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the 10 s warning")
	}
	run, trace, _ := replayLoopTrace(t)
	var stderr syncbuf.Buffer
	done := make(chan int, 1)
	go func() {
		code, _ := run(&stderr, "verify", trace, "--handler-bound", "0")
		done <- code
	}()
	// Ctrl-C is caught once the warning is out (before, it is the
	// command's own, and here would end the test's process).
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "has not returned for") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning after 30 s: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	code := <-done
	errs := stderr.String()
	if code != cli.ExitInterrupted || !strings.Contains(errs, "replay verify: step #7: ") || !strings.Contains(errs, "node n2's handler, in its timer event, has not returned for 10s") ||
		!strings.Contains(errs, "there is no --handler-bound: Ctrl-C ends the command\n") || !strings.Contains(errs, "replay verify: interrupted (step #") {
		t.Fatalf("exit %d\nstderr: %s", code, errs)
	}
}

// A command given up on goes on in the background when its handler
// returns at last: nothing it writes then reaches the App's writers.
// Before, the rest of the command (check's report, events' lines)
// landed in the App's Stdout after Run returned, or in the next Run's
// output (a data race with Run's restoring of the writers: a hostile
// pass).
func TestAGivenUpCommandWritesNothingAfterwards(t *testing.T) {
	var out syncbuf.Buffer
	errs := &syncbuf.Buffer{}
	app := &cli.App{Stdout: &out, Stderr: errs}
	_, trace, _, hold := replayLoopSystem(t, app)
	hold.Store(int64(2500 * time.Millisecond))
	if code := app.Run([]string{"events", trace, "--handler-bound", "1s"}); code != cli.ExitDivergence {
		t.Fatalf("events: exit %d\n%s", code, errs.String())
	}
	said, wrote := errs.String(), out.String()
	time.Sleep(3 * time.Second) // the handler has returned; the command went on
	if errs.String() != said || out.String() != wrote {
		t.Fatalf("the given-up command wrote after Run returned:\nstdout: %q\nthen: %q\nstderr: %q\nthen: %q", wrote, out.String(), said, errs.String())
	}
}

// Flaky's n2 blocks in its third timer every second time the process
// runs it: in a seed hunt, when the check replays what was simulated.
type Flaky struct {
	Ticks int
	runs  *atomic.Int64 `replay:"-"`
	quit  chan struct{} `replay:"-"`
}

func (f *Flaky) Init(env node.Env)                       { env.After(time.Millisecond, "tick") }
func (f *Flaky) Receive(node.Env, node.ID, node.Message) {}
func (f *Flaky) Timer(env node.Env, _ node.Timer) {
	f.Ticks++
	if env.Self() == "n2" && f.Ticks == 3 && f.runs.Add(1)%2 == 0 {
		<-f.quit
	}
	env.After(time.Millisecond, "tick")
}

// A seed whose check's replay is stuck in a handler that returned when
// simulated is the hunt's finding (a divergence: the handler is not
// deterministic), with its trace and result file, and the hunt stops
// there. Before, the whole command was given up (exit 3) with no result
// file and no seed named, losing the earlier findings.
func TestSeedHuntKeepsASeedWhoseReplayIsStuck(t *testing.T) {
	quit := make(chan struct{})
	t.Cleanup(func() { close(quit) })
	runs := new(atomic.Int64)
	sys := &system.System{Name: "flaky", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &Flaky{runs: runs, quit: quit} },
		Sim: system.SimDefaults{Nodes: 2, Time: 50 * time.Millisecond}}
	dir := t.TempDir()
	script := filepath.Join(dir, "f.star")
	os.WriteFile(script, []byte(`F = table("cli_test.Flaky")
safety("Ticks", lambda: forall(F, lambda f: f.Ticks >= 0))
`), 0o644)
	var out bytes.Buffer
	errs := &syncbuf.Buffer{}
	app := &cli.App{Registry: system.NewRegistry(sys), Stdout: &out, Stderr: errs}
	trace, results := filepath.Join(dir, "h.lz4"), filepath.Join(dir, "r.json")
	code := app.Run([]string{"sim", "flaky", "--seeds", "1-3", "--check", script, "--all", "--results", results, "-o", trace, "--handler-bound", "500ms"})
	if code != cli.ExitDivergence || !strings.Contains(out.String(), "seed 1 fails (1 of seeds 1-3 tried): replay diverged at step #") ||
		!strings.Contains(out.String(), "did not return within 500ms when replayed") || !strings.Contains(out.String(), "the hunt stops at seed 1 even with --all") {
		t.Fatalf("hunt: exit %d\nstdout: %s\nstderr: %s", code, out.String(), errs.String())
	}
	if _, err := os.Stat(trace); err != nil {
		t.Fatalf("the stuck seed's trace was not written: %v", err)
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
	if err := json.Unmarshal(b, &rf); err != nil || len(rf.Failures) != 1 || rf.Failures[0].Kind != "divergence" {
		t.Fatalf("result file (%v): %s", err, b)
	}
}

// A Ctrl-C (or SIGTERM) while a replayed handler is stuck ends the
// command as interrupted, before the 10 s warning too: it was swallowed,
// and the command ended at --handler-bound as a divergence (a preempted
// pod's SIGTERM outlived its grace period).
func TestAnEarlyCtrlCEndsAStuckReplay(t *testing.T) {
	run, trace, script := replayLoopTrace(t)
	var stderr syncbuf.Buffer
	done := make(chan int, 1)
	start := time.Now()
	go func() {
		code, _ := run(&stderr, "check", trace, script, "--handler-bound", "50s")
		done <- code
	}()
	time.Sleep(2 * time.Second)
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	code := <-done
	if took := time.Since(start); code != cli.ExitInterrupted || took > 10*time.Second || !strings.Contains(stderr.String(), "replay check: interrupted (step #") {
		t.Fatalf("exit %d after %v\nstderr: %s", code, took, stderr.String())
	}
}

// A handler that calls runtime.Goexit when replayed ends the command at
// once, named: it waited for --handler-bound and was then called an
// endless loop (or, with no bound, waited for good).
func TestGoexitInAReplayedHandlerEndsTheCommand(t *testing.T) {
	run, trace, _, hold := replayLoopSystem(t, nil)
	hold.Store(-1)
	var stderr syncbuf.Buffer
	start := time.Now()
	code, out := run(&stderr, "verify", trace, "--handler-bound", "0")
	if took := time.Since(start); code != cli.ExitDivergence || took > 10*time.Second || out != "" ||
		!strings.Contains(stderr.String(), "node n2's handler, in its timer event, called runtime.Goexit when replayed") {
		t.Fatalf("exit %d after %v\nstdout: %s\nstderr: %s", code, took, out, stderr.String())
	}
}
