package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/cli"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// A sender that sends one message and never again, and a receiver that
// ticks: when the network drops the message the run is doomed at the
// send, but a fork sees it lost only once the receiver's clock passes its
// latency window, at one of the receiver's ticks.

type Once struct{}

type OneShot struct{ Got bool }

func (s *OneShot) Init(env node.Env) {
	if env.Self() == "n1" {
		env.Send("n2", Once{})
	}
	env.After(time.Millisecond, "tick")
}

func (s *OneShot) Receive(_ node.Env, _ node.ID, m node.Message) {
	if _, ok := m.(Once); ok {
		s.Got = true
	}
}

func (s *OneShot) Timer(env node.Env, _ node.Timer) { env.After(time.Millisecond, "tick") }

var oneShot = &system.System{
	Name:  "oneshot",
	Codec: node.NewCodec().MustRegister(Once{}),
	New:   func(node.ID, system.Config) node.Handler { return &OneShot{} },
	Sim:   system.SimDefaults{Nodes: 2, Time: 200 * time.Millisecond},
}

// replayOf runs replay command lines against a registry of sys alone.
func replayOf(sys *system.System) func(args ...string) (int, string, string) {
	return func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		app := &cli.App{Registry: system.NewRegistry(sys), Stdout: &out, Stderr: &errb}
		return app.Run(args), out.String(), errb.String()
	}
}

// lossySeed simulates sys into trace at half the messages lost, seed
// after seed, until lost says the run lost what the test needs (what, for
// the failure message); it fails t after 50 seeds.
func lossySeed(t *testing.T, run func(args ...string) (int, string, string), sys, trace, what string, lost func() bool) {
	t.Helper()
	for seed := 1; seed <= 50; seed++ {
		if code, out, errb := run("sim", sys, "--seed", fmt.Sprint(seed), "--drop", "0.5", "--churn", "0", "-o", trace); code != cli.ExitOK {
			t.Fatalf("sim: exit %d\n%s%s", code, out, errb)
		}
		if lost() {
			return
		}
	}
	t.Fatalf("no seed of 50 dropped %s", what)
}

// critical names the step at which the dropped message shows as lost,
// and says that it was lost when sent.
func TestCriticalSaysWhenAMessageBecameLost(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "once.star")
	os.WriteFile(script, []byte(`N = table("cli_test.OneShot")
liveness("Delivered", lambda: forall(N, lambda n: n.node != "n2" or n.Got))
`), 0o644)
	run := replayOf(oneShot)
	// A seed whose run drops the message: its check raises the interval.
	trace := filepath.Join(dir, "lost.lz4")
	lossySeed(t, run, "oneshot", trace, "the message", func() bool {
		code, _, _ := run("check", trace, script)
		return code == cli.ExitViolations
	})
	code, out, errb := run("critical", trace, script, "--predicate", "Delivered", "--walks", "2", "--walk-steps", "200", "--stable", "20ms")
	if code != cli.ExitOK || !strings.Contains(out, "at this step cli_test.Once from n1 to n2, sent at #") || !strings.Contains(out, "became lost") {
		t.Fatalf("critical: exit %d\n%s%s", code, out, errb)
	}
	_, out, _ = run("critical", trace, script, "--predicate", "Delivered", "--walks", "2", "--walk-steps", "200", "--stable", "20ms", "--json")
	if !strings.Contains(out, `"became_lost": [`) || !strings.Contains(out, `"type": "cli_test.Once"`) {
		t.Fatalf("critical --json:\n%s", out)
	}
}
