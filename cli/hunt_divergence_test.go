package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/replaycheck/replaycheck/cli"
	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// instances counts the pingers ever built in this process: a handler that
// reads it is nondeterministic (its replay sends other values than its
// simulation did), the kind of bug replay's divergence report is for.
var instances atomic.Int64

type Ping struct{ N int64 }

type Pinger struct{ Sent int64 }

func (p *Pinger) Init(env node.Env) {
	p.Sent = instances.Add(1)
	for _, q := range env.Peers() {
		env.Send(q, Ping{N: p.Sent})
	}
}

func (p *Pinger) Receive(node.Env, node.ID, node.Message) {}
func (p *Pinger) Timer(node.Env, node.Timer)              {}

var nondet = &system.System{
	Name:  "nondet",
	Codec: node.NewCodec().MustRegister(Ping{}),
	New:   func(node.ID, system.Config) node.Handler { return &Pinger{} },
	Sim:   system.SimDefaults{Nodes: 2},
}

// TestSeedHuntMeetsADivergence: a seed whose replay diverges from its
// simulation is not clean and not a protocol bug (nor is such a run of
// an exploration). The hunt exits 3 (not
// 1), keeps the trace for replay verify, goes on with --all, and writes
// its result file; results merge exits 3 too. Before, the first such seed
// ended the hunt with exit 1 and nothing kept.
func TestSeedHuntMeetsADivergence(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "p.star")
	os.WriteFile(script, []byte(`P = table("cli_test.Pinger")
safety("Positive", lambda: forall(P, lambda p: p.Sent > 0))
`), 0o644)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		app := &cli.App{Registry: system.NewRegistry(nondet), Stdout: &out, Stderr: &errb}
		return app.Run(args), out.String(), errb.String()
	}
	trace, results := filepath.Join(dir, "h.lz4"), filepath.Join(dir, "r.json")
	code, out, errs := run("sim", "nondet", "--seeds", "1-3", "--check", script, "--all", "--results", results, "-o", trace)
	if code != cli.ExitDivergence || strings.Count(out, "replay diverged at step #") != 3 || !strings.Contains(out, "replay verify ") {
		t.Fatalf("hunt: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if code, out, _ := run("verify", trace); code != cli.ExitDivergence || !strings.Contains(out, "differs") {
		t.Fatalf("verify of the kept trace: exit %d\n%s", code, out)
	}
	// Without --all the hunt stops at the first seed, and its last line
	// names the trace it wrote (-o), not the seed's default name.
	code, out, errs = run("sim", "nondet", "--seeds", "1-3", "--check", script, "-o", trace)
	// and, since verify of the one trace may pass, what it cannot see.
	if code != cli.ExitDivergence || !strings.Contains(errs, "replay verify "+trace+" explains it") || !strings.Contains(errs, "replay vet names writes to them") {
		t.Fatalf("hunt without --all: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatalf("no result file: %v", err)
	}
	var rf struct {
		Exit     int `json:"exit"`
		Failures []struct {
			Kind string `json:"kind"`
		} `json:"failures"`
	}
	if err := json.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	if rf.Exit != cli.ExitDivergence || len(rf.Failures) != 3 || rf.Failures[0].Kind != "divergence" {
		t.Fatalf("result file: %s", b)
	}
	if code, out, errs := run("results", "merge", results); code != cli.ExitDivergence {
		t.Fatalf("merge: exit %d\n%s%s", code, out, errs)
	}
	// An exploration cannot go on past such a run: it stops with exit 3
	// and keeps that run's trace.
	explored := filepath.Join(dir, "e.lz4")
	code, out, errs = run("explore", "nondet", "--check", script, "--budget", "3", "-o", explored)
	// The diverged run counts in the summary, as a failed one: it was made.
	if code != cli.ExitDivergence || !strings.Contains(errs, "nondeterministic handler") || !strings.Contains(errs, "replay verify ") || !strings.Contains(out, "1 run (1 failed), 4 events") {
		t.Fatalf("explore: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if code, _, _ := run("verify", explored); code != cli.ExitDivergence {
		t.Fatalf("verify of the explored run: exit %d", code)
	}
}

// lateAfter is the instance count after which a LatePinger turns
// nondeterministic: runs built before it replay as simulated.
var lateAfter atomic.Int64

type LatePinger struct{ Sent int64 }

func (p *LatePinger) Init(env node.Env) {
	p.Sent = 1
	if n := instances.Add(1); n > lateAfter.Load() {
		p.Sent = n
	}
	for _, q := range env.Peers() {
		env.Send(q, Ping{N: p.Sent})
	}
}

func (p *LatePinger) Receive(node.Env, node.ID, node.Message) {}
func (p *LatePinger) Timer(node.Env, node.Timer)              {}

// TestAnExplorationThatDivergesKeepsWhatItFound: with --all, a run that
// diverges after a finding ends the exploration (exit 3), but the
// finding's trace, the summary and the result file stay, and the diverged
// run is written after the finding's trace. Before, the finding was
// dropped, the diverged run overwrote its file and no result file was
// written.
func TestAnExplorationThatDivergesKeepsWhatItFound(t *testing.T) {
	late := &system.System{
		Name:  "late",
		Codec: node.NewCodec().MustRegister(Ping{}),
		New:   func(node.ID, system.Config) node.Handler { return &LatePinger{} },
		Sim:   system.SimDefaults{Nodes: 2},
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "p.star")
	os.WriteFile(script, []byte(`P = table("cli_test.LatePinger")
safety("NotOne", lambda: forall(P, lambda p: p.Sent != 1))
`), 0o644)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		app := &cli.App{Registry: system.NewRegistry(late), Stdout: &out, Stderr: &errb}
		return app.Run(args), out.String(), errb.String()
	}
	// A run builds at most 4 handlers (simulation 2, check up to 2): the
	// first run is deterministic and the second is not.
	lateAfter.Store(instances.Load() + 4)
	explored, results := filepath.Join(dir, "e.lz4"), filepath.Join(dir, "r.json")
	code, out, errs := run("explore", "late", "--check", script, "--budget", "5", "--all", "--jobs", "1", "-o", explored, "--results", results)
	if code != cli.ExitDivergence || !strings.Contains(out, "run 0 fails: ") || !strings.Contains(out, "run 1 diverged on replay") ||
		!strings.Contains(errs, "nondeterministic handler") {
		t.Fatalf("explore: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	lateAfter.Store(1 << 62) // deterministic again: the finding replays
	if code, out, _ := run("check", explored, script); code != cli.ExitViolations || !strings.Contains(out, "NotOne") {
		t.Fatalf("the finding's trace %s does not show it: exit %d\n%s", explored, code, out)
	}
	if code, _, _ := run("verify", filepath.Join(dir, "e-2.lz4")); code != cli.ExitDivergence {
		t.Fatalf("verify of the diverged run: exit %d", code)
	}
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatalf("no result file: %v", err)
	}
	var rf struct {
		Exit     int    `json:"exit"`
		Stopped  string `json:"stopped"`
		Failures []struct {
			Run   int    `json:"run"`
			Kind  string `json:"kind"`
			Debug string `json:"debug"`
		} `json:"failures"`
	}
	if err := json.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	// Re-made, the run's trace comes after the finding's, as here.
	if rf.Exit != cli.ExitDivergence || rf.Stopped != "divergence" || len(rf.Failures) != 2 ||
		rf.Failures[0].Kind != "violation" || rf.Failures[1].Kind != "divergence" || rf.Failures[1].Run != 1 ||
		rf.Failures[1].Debug != "replay verify late-none-run-1-2.lz4" {
		t.Fatalf("result file: %s", b)
	}
	if code, out, errs := run("results", "merge", results); code != cli.ExitDivergence || !strings.Contains(out, "NotOne") {
		t.Fatalf("merge: exit %d\n%s%s", code, out, errs)
	}
	// --json lists the diverged run last, after the finding.
	lateAfter.Store(instances.Load() + 4)
	code, out, errs = run("explore", "late", "--check", script, "--budget", "5", "--all", "--jobs", "1", "-o", filepath.Join(dir, "j.lz4"), "--json")
	var js struct {
		Stopped string `json:"stopped"`
		Found   []struct {
			Run   int    `json:"run"`
			Kind  string `json:"kind"`
			Trace string `json:"trace"`
			Debug string `json:"debug"`
		} `json:"found"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || code != cli.ExitDivergence || js.Stopped != "divergence" || len(js.Found) != 2 ||
		js.Found[0].Kind != "violation" || js.Found[1].Kind != "divergence" || !strings.HasSuffix(js.Found[1].Trace, "j-2.lz4") ||
		!strings.HasPrefix(js.Found[1].Debug, "replay verify ") {
		t.Fatalf("explore --json: exit %d (%v)\n%s%s", code, err, out, errs)
	}
}

// A team's own binary (cli.Main, App.Program) names itself in a
// divergence report's advice, as in every other command it prints.
// Before, the report said "replay vet" and "rebuild the replay binary".
func TestADivergenceReportNamesTheTeamsBinary(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "n.lz4")
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		app := &cli.App{Registry: system.NewRegistry(nondet), Program: "kvcheck", Stdout: &out, Stderr: &errb}
		return app.Run(args), out.String(), errb.String()
	}
	if code, out, errs := run("sim", "nondet", "--seed", "1", "-o", trace); code != cli.ExitOK {
		t.Fatalf("sim: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := run("verify", trace)
	if code != cli.ExitDivergence || !strings.Contains(out, "kvcheck vet PACKAGES") || strings.Contains(out, "replay vet") || strings.Contains(out, "replay binary") {
		t.Fatalf("verify: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
}

// The root help of a team's binary names it, not "replay".
func TestRootHelpNamesTheTeamsBinary(t *testing.T) {
	var out, errb bytes.Buffer
	app := &cli.App{Registry: system.NewRegistry(nondet), Program: "kvcheck", Stdout: &out, Stderr: &errb}
	if code := app.Run([]string{"--help"}); code != cli.ExitOK || !strings.HasPrefix(out.String(), "kvcheck re-executes") || !strings.Contains(out.String(), "(kvcheck sim)") {
		t.Fatalf("--help: exit %d\n%s%s", code, out.String(), errb.String())
	}
}

// A shrunk trace given to a team's binary's sim --schedule says which
// verbs reproduce it by the binary's name: it said "replay check or
// replay debug it" to a new user of their own tpccheck.
func TestAShrunkTraceAsAScheduleNamesTheTeamsBinary(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		app := &cli.App{Registry: examples.Registry(), Program: "kvcheck", Stdout: &out, Stderr: &errb}
		return app.Run(args), out.String(), errb.String()
	}
	d, small := filepath.Join(dir, "d.lz4"), filepath.Join(dir, "small.lz4")
	if code, out, errs := run("sim", "paxos", "--bug", "latest-response", "--seed", "21", "-o", d); code != cli.ExitOK {
		t.Fatalf("sim: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run("shrink", d, "builtin:paxos", "-o", small); code != cli.ExitOK {
		t.Fatalf("shrink: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs := run("sim", "paxos", "--schedule", small, "-o", filepath.Join(dir, "rerun.lz4"))
	if code != cli.ExitDivergence || !strings.Contains(errs, "kvcheck check or kvcheck debug it") || strings.Contains(errs, "replay ") {
		t.Fatalf("sim --schedule of a shrunk trace: exit %d\n%s", code, errs)
	}
}
