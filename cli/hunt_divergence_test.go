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
	if code != cli.ExitDivergence || !strings.Contains(errs, "nondeterministic handler") || !strings.Contains(errs, "replay verify ") {
		t.Fatalf("explore: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if code, _, _ := run("verify", explored); code != cli.ExitDivergence {
		t.Fatalf("verify of the explored run: exit %d", code)
	}
}
