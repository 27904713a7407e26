package simtest_test

import (
	"fmt"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/lockserver"
	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
)

const script = "../scripts/paxos.star"

func TestCheckPassesCorrectPaxos(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		cfg := sim.DefaultConfig()
		cfg.Seed = seed
		res := simtest.Check(t, paxos.System, cfg, script)
		if res.Report.Steps == 0 {
			t.Fatal("nothing was checked")
		}
	}
}

func TestFailureNamesReproduction(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug, cfg.Time = 8, "spec", 6*time.Second
	res, err := simtest.Run(paxos.System, cfg, script, simtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failing) == 0 {
		t.Fatal("spec bug at seed 8 not found")
	}
	msg := simtest.Failure(paxos.System, res, script, "/tmp/x.lz4", "kept")
	v := res.Failing[0]
	// The script's path relative to the test's package would not be
	// found from where the command is run.
	abs, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"paxos seed 8", v.Predicate,
		"reproduce: replay sim paxos --seed 8 --bug spec --time 6s -o /tmp/x.lz4",
		"debug:     replay debug /tmp/x.lz4 --preds " + abs + " --at ",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure message lacks %q:\n%s", want, msg)
		}
	}
	// The check was not timed: the report does not say it took no time.
	if strings.Contains(msg, " in 0s") {
		t.Errorf("failure message claims an unmeasured time:\n%s", msg)
	}
	if strings.Contains(msg, "the bundled replay does not know it") {
		t.Errorf("a bundled system's failure says replay does not know it:\n%s", msg)
	}
	// A system of the user's own: the stock replay answered the printed
	// reproduce command with "unknown system" (a new user's G-counter).
	own := *paxos.System
	own.Name = "mine"
	own.New = func(id node.ID, c system.Config) node.Handler { return paxos.System.New(id, c) }
	if msg := simtest.Failure(&own, res, script, "/tmp/x.lz4", "kept"); !strings.Contains(msg, "registers mine: yours, built with cli.Main") {
		t.Errorf("a system of one's own: the failure does not say which binary runs its commands:\n%s", msg)
	}
}

// A run with a violation and, later, a predicate that could not be
// evaluated opens the debugger at the violation, not at the error (a new
// user's store: --at 1605 for a violation at #420).
func TestFailureDebugsTheViolationBeforeAnError(t *testing.T) {
	late := filepath.Join(t.TempDir(), "late.star")
	os.WriteFile(late, []byte(`safety("Early", lambda: event.step < 100)
safety("Late", lambda: 1 // (300 - event.step) != 7)
`), 0o644)
	cfg := sim.DefaultConfig()
	cfg.Seed = 1
	res, err := simtest.Run(paxos.System, cfg, late, simtest.Options{})
	if res == nil {
		t.Fatal(err) // an evaluation error comes with the result
	}
	if len(res.Failing) == 0 || len(res.Report.Errors) == 0 {
		t.Fatalf("want a violation and an error: %d, %d", len(res.Failing), len(res.Report.Errors))
	}
	msg := simtest.Failure(paxos.System, res, late, "/tmp/x.lz4", "kept")
	if !strings.Contains(msg, " --at 100") {
		t.Errorf("the debug command does not open at the violation (#100):\n%s", msg)
	}
}

// keepTB records what Check fails with instead of ending the test.
type keepTB struct {
	testing.TB
	msg string
}

func (k *keepTB) Helper()                   {}
func (k *keepTB) Fatal(args ...any)         { k.msg = fmt.Sprint(args...) }
func (k *keepTB) Fatalf(f string, a ...any) { k.msg = fmt.Sprintf(f, a...) }

// Two failing runs of one seed under other settings keep two traces: a
// name from system, bug and seed alone made the second overwrite the
// first, whose debug command then opened the other run (a new user's
// two subtests that differed in the drop rate).
func TestKeptTracesOfOneSeedDoNotClash(t *testing.T) {
	kept := map[string]string{}
	for _, drop := range []float64{0.1, 0.2} {
		cfg := sim.DefaultConfig()
		cfg.Seed, cfg.Bug, cfg.Time, cfg.Drop = 1, "spec", 6*time.Second, drop
		tb := &keepTB{TB: t}
		simtest.Check(tb, paxos.System, cfg, script)
		_, after, ok := strings.Cut(tb.msg, "the trace was kept at ")
		if !ok {
			t.Fatalf("drop %v: no kept trace in the failure:\n%s", drop, tb.msg)
		}
		path, _, _ := strings.Cut(after, "\n")
		t.Cleanup(func() { os.Remove(path) })
		if other, ok := kept[path]; ok {
			t.Fatalf("drop %v and %v both keep their trace at %s", other, drop, path)
		}
		kept[path] = fmt.Sprint(drop)
		if !strings.Contains(tb.msg, "replay debug "+path+" ") {
			t.Errorf("the debug command does not open the kept trace %s:\n%s", path, tb.msg)
		}
	}
}

// A liveness alarm opens the debugger where the alarm was raised, as the
// CLI's commands do, not where the interval began (a new user's store:
// --at 263 for an alarm at #381).
func TestFailureDebugsAnAlarmWhereItWasRaised(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug = 1, "deadlock"
	res, err := simtest.Run(lockserver.System, cfg, "../scripts/lockserver.star", simtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var alarm *predicates.Violation
	for _, v := range res.Failing {
		if v.Kind == "liveness" && v.Alarm && v.AlarmStep != v.Step {
			alarm = v
			break
		}
	}
	if alarm == nil || res.Failing[0] != alarm {
		t.Fatalf("want an alarm raised after its interval began, first: %v", res.Failing)
	}
	msg := simtest.Failure(lockserver.System, res, "../scripts/lockserver.star", "/tmp/x.lz4", "kept")
	if want := fmt.Sprintf(" --at %d\n", alarm.AlarmStep); !strings.Contains(msg+"\n", want) {
		t.Errorf("the debug command does not open at the alarm (#%d):\n%s", alarm.AlarmStep, msg)
	}
}

// A failure message shows a few findings of each predicate and counts
// the rest: a new user's test failed with 197 violations, 195 of one
// predicate, in 600 lines.
func TestFailureShowsAFewFindingsOfEachPredicate(t *testing.T) {
	dir := t.TempDir()
	many := filepath.Join(dir, "many.star")
	if err := os.WriteFile(many, []byte(`Agent = table("paxos.Agent", columns = ["Promised"])
safety("NoPromise", lambda: forall(Agent, lambda a: a.Promised == 0))
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Seed = 1
	res, err := simtest.Run(paxos.System, cfg, many, simtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failing) <= 3 {
		t.Fatalf("%d finding(s): the test shows nothing", len(res.Failing))
	}
	msg := simtest.Failure(paxos.System, res, many, "/tmp/x.lz4", "kept")
	if n := strings.Count(msg, "NoPromise (safety) violated at step"); n != 3 {
		t.Errorf("%d findings shown, want 3:\n%s", n, msg)
	}
	if want := fmt.Sprintf("... and %d more finding(s) of NoPromise", len(res.Failing)-3); !strings.Contains(msg, want) {
		t.Errorf("the message does not say %q:\n%s", want, msg)
	}
}
