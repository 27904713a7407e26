package parcheck_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/examples/chainrep"
	"github.com/replaycheck/replaycheck/examples/chord"
	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/parcheck"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// simulate runs sys as cfg says (defaults filled in) and returns the trace.
func simulate(tb testing.TB, sys *system.System, cfg sim.Config) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if _, err := sim.Run(sys, cfg.WithDefaults(sys), &buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// loader binds a bundled script to a replay, as parcheck.Options.Load.
func loader(tb testing.TB, script string) func(*replay.Replayer, int) (*predicates.Checker, error) {
	tb.Helper()
	path, err := filepath.Abs("../scripts/" + script)
	if err != nil {
		tb.Fatal(err)
	}
	return func(r *replay.Replayer, from int) (*predicates.Checker, error) {
		return predicates.Load(path, r, predicates.Options{From: from, To: -1})
	}
}

// sequential is Run over tr: what --jobs 1 reports.
func sequential(tb testing.TB, tr *replay.Trace, load func(*replay.Replayer, int) (*predicates.Checker, error)) (*predicates.Report, error) {
	tb.Helper()
	r, err := replay.New(tr, examples.Registry(), replay.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := load(r, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return c.Run(predicates.RunOptions{})
}

func report(t *testing.T, rep *predicates.Report) string {
	t.Helper()
	var b bytes.Buffer
	rep.WriteText(&b, time.Second)
	j, err := json.Marshal(rep.JSON())
	if err != nil {
		t.Fatal(err)
	}
	return b.String() + string(j)
}

// TestCheckIsRun runs the parallel driver in-process (go test -race sees
// its goroutines) with borders chosen as the work goes and fixed ones,
// and wants Run's report and error: paxos (kept versions, derived
// histories read by predicates) and chord (since_change read by
// stability measures after the seam, so segments wait for it).
func TestCheckIsRun(t *testing.T) {
	for _, tc := range []struct {
		sys    *system.System
		script string
		cfg    func(*sim.Config)
	}{
		{paxos.System, "paxos.star", func(c *sim.Config) { c.Seed, c.Drop = 21, 0.3 }},
		{chord.System, "chord.star", func(c *sim.Config) { c.Seed, c.Steps, c.Time = 2, 6000, time.Hour }},
		// Under churn the chain's liveness predicate is memoised on
		// other rows in the sequential run than in a warm-up: a seam
		// that took over anyway counted other evaluations.
		{chainrep.System, "chainrep.star", func(c *sim.Config) { c.Seed, c.Steps, c.Time, c.Churn = 3, 4000, time.Hour, 0.3 }},
	} {
		t.Run(tc.sys.Name, func(t *testing.T) {
			cfg := sim.DefaultConfig()
			tc.cfg(&cfg)
			tr, err := replay.FromBytes(simulate(t, tc.sys, cfg), tc.sys.Name+".lz4")
			if err != nil {
				t.Fatal(err)
			}
			load := loader(t, tc.script)
			seq, seqErr := sequential(t, tr, load)
			want := report(t, seq)
			n := tr.Len()
			for _, o := range []parcheck.Options{
				{Jobs: 3, Warmup: 100},
				{Marks: []int{n / 3, 2 * n / 3}, Warmup: 50},
				{Marks: []int{n / 5, 2 * n / 5, 3 * n / 5, 4 * n / 5}, Warmup: 400},
				// Every mark's segment ran at once, whatever --jobs.
				{Marks: []int{n / 6, 2 * n / 6, 3 * n / 6, 4 * n / 6, 5 * n / 6}, Warmup: 100, Jobs: 2},
			} {
				o.Load, o.To = load, -1
				rep, stats, err := parcheck.Check(tr, examples.Registry(), o)
				if fmt.Sprint(err) != fmt.Sprint(seqErr) {
					t.Fatalf("%+v: error %v, Run's %v", o, err, seqErr)
				}
				if got := report(t, rep); got != want {
					t.Fatalf("%s: the report differs from Run's\nRun:\n%s\nparallel:\n%s", stats, want, got)
				}
				if len(o.Marks) > 0 && stats.Seams != len(o.Marks) {
					t.Fatalf("%+v: %s; want a seam at every mark", o, stats)
				}
				if jobs := max(o.Jobs, 2); stats.MostAtOnce > jobs || stats.MostAtOnce < 1 {
					t.Fatalf("%+v: %d segments ran at once, want 1 to %d", o, stats.MostAtOnce, jobs)
				}
				t.Logf("%v: %s", o.Marks, stats)
			}
		})
	}
}

// TestFewerSegmentsSaysWhy: --jobs on a trace too short to split runs
// one segment, and the stats line says why rather than leaving a user to
// wonder whether --jobs was honoured.
func TestFewerSegmentsSaysWhy(t *testing.T) {
	tr, err := replay.FromBytes(simulate(t, paxos.System, sim.DefaultConfig()), "paxos.lz4")
	if err != nil {
		t.Fatal(err)
	}
	_, stats, err := parcheck.Check(tr, examples.Registry(), parcheck.Options{Jobs: 2, Warmup: tr.Len(), Load: loader(t, "paxos.star"), To: -1})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Segments != 1 || !strings.Contains(stats.String(), "too few to split") || !strings.Contains(stats.String(), fmt.Sprintf("--warmup %d", tr.Len())) {
		t.Fatalf("stats %q: want one segment and the reason", stats)
	}
}

// TestCrashBuiltinsTakeEverySeam: "which nodes ever crashed" written as
// an accumulator (a derived value reading its own last value) cannot be
// known a warm-up after a seam, so --jobs refused its seams and checked
// everything again; down_nodes() and crashes() read the trace's index,
// so a segment knows them at once, takes its seam, and reports what the
// sequential check reports.
func TestCrashBuiltinsTakeEverySeam(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps, cfg.Time, cfg.Churn = 5, 6000, time.Hour, 0.5
	tr, err := replay.FromBytes(simulate(t, paxos.System, cfg), "paxos.lz4")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	scriptOf := func(name, body string) func(*replay.Replayer, int) (*predicates.Checker, error) {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return func(r *replay.Replayer, from int) (*predicates.Checker, error) {
			return predicates.Load(path, r, predicates.Options{From: from, To: -1})
		}
	}
	const judge = `
safety("NoneDown", lambda: len(down_nodes()) == 0)
safety("FewCrashed", lambda: len(ever()) < 6, aux = lambda: {"ever": ever(), "down": down_nodes()})
`
	// A call while the script loads (at no step) must not leave its value
	// to a segment's first steps: it did, and the segments' reports
	// differed from the sequential one.
	builtin := scriptOf("builtin.star", `
START = down_nodes()
ever = derived("ever", lambda: [n for n in nodes() if crashes(n) > 0])
`+judge)
	accumulated := scriptOf("accumulated.star", `
def _ever():
    before = ever() or []
    if event.kind == "crash" and event.node not in before:
        return sorted(before + [event.node])
    return before
ever = derived("ever", _ever)
`+judge)
	// Seams where a node is down and nobody crashes or restarts for a
	// while around: a value left from the load would go unnoticed there.
	var marks []int
	for s := 100; s < tr.Len()-100 && len(marks) < 3; s++ {
		if len(marks) > 0 && s < marks[len(marks)-1]+tr.Len()/5 {
			continue
		}
		calm := true
		for i := s - 10; i <= s+30 && calm; i++ {
			k := tr.Event(i).Kind
			calm = k != node.KindCrash && k != node.KindRestart
		}
		down := false
		for _, id := range tr.Nodes {
			_, d := tr.DownAt(id, s)
			down = down || d
		}
		if calm && down {
			marks = append(marks, s)
		}
	}
	if len(marks) == 0 {
		t.Fatal("no step with a node down and no crash or restart around it")
	}
	for _, tc := range []struct {
		name    string
		load    func(*replay.Replayer, int) (*predicates.Checker, error)
		refuses bool
	}{{"accumulated", accumulated, true}, {"built-ins", builtin, false}} {
		seq, seqErr := sequential(t, tr, tc.load)
		if seqErr != nil {
			t.Fatal(seqErr)
		}
		if len(seq.Violations) == 0 {
			t.Fatalf("%s: no violation in the sequential check: the run has too few crashes to test anything", tc.name)
		}
		rep, stats, err := parcheck.Check(tr, examples.Registry(), parcheck.Options{Marks: marks, Warmup: 5, Load: tc.load, To: -1})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := report(t, rep), report(t, seq); got != want {
			t.Fatalf("%s: %s: the report differs from Run's\nRun:\n%s\nparallel:\n%s", tc.name, stats, want, got)
		}
		if refused := len(stats.Refused) > 0; refused != tc.refuses {
			t.Fatalf("%s: %s; refused seams: %v, want %v", tc.name, stats, refused, tc.refuses)
		}
	}
}
