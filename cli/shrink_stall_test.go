package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/cli"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// Hello is what Waiter's n1 sends n2 at start.
type Hello struct{}

// Waiter's n2 blocks in its third timer unless n1's ping came first: a
// shrink candidate that drops the ping stalls.
type Waiter struct {
	Self    string
	Ticks   int
	Pinged  bool
	release chan struct{} `replay:"-"`
}

func (w *Waiter) Init(env node.Env) {
	w.Self = string(env.Self())
	if env.Self() == "n1" {
		env.Send("n2", Hello{})
	}
	env.After(10*time.Millisecond, "tick")
}
func (w *Waiter) Receive(node.Env, node.ID, node.Message) { w.Pinged = true }
func (w *Waiter) Timer(env node.Env, _ node.Timer) {
	w.Ticks++
	if w.Self == "n2" && w.Ticks == 3 && !w.Pinged {
		<-w.release
	}
	env.After(10*time.Millisecond, "tick")
}

// shrink gives up on a candidate whose handler does not return after
// --handler-bound, and goes on: it ran each candidate under the
// simulator's default minute, whatever the flag said.
func TestShrinkGivesUpOnAStuckCandidate(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	codec := node.NewCodec()
	codec.Register("waiter.Hello", Hello{})
	sys := &system.System{Name: "waiter", Codec: codec,
		New: func(node.ID, system.Config) node.Handler { return &Waiter{release: release} },
		Sim: system.SimDefaults{Nodes: 3, Time: time.Second}}
	dir := t.TempDir()
	script := filepath.Join(dir, "w.star")
	os.WriteFile(script, []byte(`W = table("cli_test.Waiter")
safety("n2 stays young", lambda: forall(W, lambda w: w.Self != "n2" or w.Ticks < 6))
`), 0o644)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		app := &cli.App{Registry: system.NewRegistry(sys), Stdout: &out, Stderr: &errb}
		done := make(chan int, 1)
		go func() { done <- app.Run(args) }()
		select {
		case code := <-done:
			return code, out.String(), errb.String()
		case <-time.After(50 * time.Second):
			t.Fatalf("%v still runs after 50 s", args)
			return 0, "", ""
		}
	}
	trace := filepath.Join(dir, "w.lz4")
	if code, out, errs := run("sim", "waiter", "--seed", "1", "-o", trace); code != cli.ExitOK {
		t.Fatalf("sim: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run("check", trace, script); code != cli.ExitViolations {
		t.Fatalf("check: exit %d\n%s%s", code, out, errs)
	}
	shrunk := filepath.Join(dir, "small.lz4")
	code, out, errs := run("shrink", trace, script, "-o", shrunk, "--handler-bound", "200ms")
	if code != cli.ExitOK || !strings.Contains(out, shrunk) {
		t.Fatalf("shrink: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run("check", shrunk, script); code != cli.ExitViolations || !strings.Contains(out, "n2 stays young") {
		t.Fatalf("check of the shrunk trace: exit %d\n%s%s", code, out, errs)
	}
}
