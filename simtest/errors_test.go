package simtest_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
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
