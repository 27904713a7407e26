package simtest_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/system"
)

// fatalRecorder is a testing.TB that records Fatal instead of stopping.
type fatalRecorder struct {
	testing.TB
	fatal []string
}

func (r *fatalRecorder) Helper()                   {}
func (r *fatalRecorder) Fatal(args ...any)         { r.fatal = append(r.fatal, fmt.Sprint(args...)) }
func (r *fatalRecorder) Fatalf(f string, a ...any) { r.fatal = append(r.fatal, fmt.Sprintf(f, a...)) }
func (r *fatalRecorder) Errorf(f string, a ...any) { r.fatal = append(r.fatal, fmt.Sprintf(f, a...)) }

// TestPredicateErrorFailsTheRun: a predicate that raised leaves the run
// unchecked; Run says so in its error (with the result of what was
// checked) and Check fails the test with the error and the command that
// reproduces the run.
func TestPredicateErrorFailsTheRun(t *testing.T) {
	script := filepath.Join(t.TempDir(), "raises.star")
	src := "safety(\"Raises\", lambda: event.step < 45 or fail(\"boom\"))\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Seed = 1
	res, err := simtest.Run(paxos.System, cfg, script, simtest.Options{})
	var ee *predicates.EvalError
	if !errors.As(err, &ee) || len(ee.Failures) != 1 || ee.Failures[0].Step != 45 {
		t.Fatalf("Run: err %v, want the predicate error at #45", err)
	}
	if res == nil || res.Report == nil || len(res.Report.Errors) != 1 {
		t.Fatalf("Run returned no result with the error: %+v", res)
	}

	rec := &fatalRecorder{TB: t}
	simtest.Check(rec, paxos.System, cfg, script)
	msg := strings.Join(rec.fatal, "\n")
	for _, want := range []string{"Raises", "#45", "boom", "reproduce: replay sim paxos --seed 1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Check's failure lacks %q:\n%s", want, msg)
		}
	}
}

// panicky panics on its second timer at n2.
type panicky struct{ Ticks int }

func (p *panicky) Init(env node.Env)                       { env.After(time.Millisecond, "tick") }
func (p *panicky) Receive(node.Env, node.ID, node.Message) {}
func (p *panicky) Timer(env node.Env, _ node.Timer) {
	p.Ticks++
	if env.Self() == "n2" && p.Ticks == 2 {
		panic("tick two")
	}
	env.After(time.Millisecond, "tick")
}

// A handler panic is a failure of the system's code: Run returns the
// trace of what ran with the *node.PanicError, and Check fails the test
// with the stack, the kept trace and the reproduce command (it gave one
// line and kept nothing).
func TestAHandlerPanicKeepsItsTrace(t *testing.T) {
	sys := &system.System{Name: "panicky", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &panicky{} },
		Sim: system.SimDefaults{Nodes: 2, Time: time.Second}}
	script := filepath.Join(t.TempDir(), "p.star")
	if err := os.WriteFile(script, []byte(`safety("True", lambda: True)`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	res, err := simtest.Run(sys, cfg, script, simtest.Options{})
	var pe *node.PanicError
	if !errors.As(err, &pe) || res == nil || len(res.Trace) == 0 {
		t.Fatalf("Run: err %v, result %v", err, res)
	}
	rec := &fatalRecorder{TB: t}
	simtest.Check(rec, sys, cfg, script)
	msg := strings.Join(rec.fatal, "\n")
	for _, want := range []string{"tick two", "errors_test.go:", "the trace was kept at ", "reproduce: replay sim panicky"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Check's failure lacks %q:\n%s", want, msg)
		}
	}
}
