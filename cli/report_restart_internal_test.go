package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// Rearm stores Count on disk and reads it back at a restart; Armed is set
// by Init only on a first start, so a safety predicate on it breaks at
// the restart.
type Rearm struct {
	Count int
	Armed bool
}

type rearmTick struct{}

func (r *Rearm) Init(env node.Env) {
	if b, ok := env.Disk().Get("count"); ok {
		r.Count = int(b[0])
		return
	}
	r.Armed = true
}
func (r *Rearm) Receive(node.Env, node.ID, node.Message) {}
func (r *Rearm) Timer(node.Env, node.Timer)              {}
func (r *Rearm) Input(env node.Env, _ node.Message) {
	r.Count++
	env.Disk().Put("count", []byte{byte(r.Count)})
}

var rearm = &system.System{
	Name:  "rearm",
	Codec: node.NewCodec().MustRegister(rearmTick{}),
	New:   func(node.ID, system.Config) node.Handler { return &Rearm{} },
	Sim:   system.SimDefaults{Nodes: 1, Time: 50 * time.Millisecond},
	Scenario: func(ctl system.Controller) {
		ctl.At(5*time.Millisecond, func() { ctl.Input("n1", rearmTick{}) })
		ctl.At(10*time.Millisecond, func() { ctl.Crash("n1") })
		ctl.At(20*time.Millisecond, func() { ctl.Restart("n1") })
	},
}

// rearmReport simulates rearm, reports it against a script of the
// predicate pred, and returns the page and its state diff's table.
func rearmReport(t *testing.T, pred string) (html, table string) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		app := &App{Registry: system.NewRegistry(rearm), Stdout: &out, Stderr: &errb}
		return app.Run(args), out.String(), errb.String()
	}
	trace, script, page := filepath.Join(dir, "r.lz4"), filepath.Join(dir, "r.star"), filepath.Join(dir, "r.html")
	if err := os.WriteFile(script, []byte("R = table(\"cli.Rearm\")\n"+pred+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errb := run("sim", "rearm", "--seed", "1", "--drop", "0", "--churn", "0", "-o", trace); code != ExitOK {
		t.Fatalf("sim: exit %d\n%s%s", code, out, errb)
	}
	if code, out, errb := run("report", trace, script, "-o", page); code != ExitOK {
		t.Fatalf("report: exit %d\n%s%s", code, out, errb)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html = string(b)
	i := strings.Index(html, `<table class="diff mono">`)
	if i < 0 {
		t.Fatalf("the page has no state diff:\n%s", html)
	}
	return html, html[i : i+strings.Index(html[i:], "</table>")]
}

// The report's state diff of a violation at a restart compared with no
// state at all: every field "(none)" before, and a row "." for the absent
// handler. It compares with the state before the crash, as the debugger
// does, and says so in the column's header.
func TestReportDiffAtARestartIsAgainstTheCrash(t *testing.T) {
	_, table := rearmReport(t, "safety(\"Armed\", lambda: forall(R, lambda r: r.Armed))")
	if !strings.Contains(table, "before the crash (after #") {
		t.Errorf("the diff at the restart does not say it starts before the crash:\n%s", table)
	}
	if !strings.Contains(table, "<td>Armed</td><td>true</td><td>false</td>") {
		t.Errorf("the diff at the restart does not show Armed true -> false:\n%s", table)
	}
	if strings.Contains(table, "(none)") || strings.Contains(table, "<td>.</td>") || strings.Contains(table, "<td>Count</td>") {
		t.Errorf("the diff at the restart shows fields as new, the absent handler, or a restored field as changed:\n%s", table)
	}
}

// The report of an explored trace gave only its header as a comment: the
// seed does not name such a run, and the page had no command that re-runs
// it. It gives the schedule the trace holds, which re-runs it.
func TestReportOfAnExploredTraceReRunsItsSchedule(t *testing.T) {
	t.Chdir(t.TempDir())
	run, _, errb := guardedApp()
	if code := run("explore", "paxos", "--bug", "spec", "--check", "builtin:paxos", "--strategy", "pct", "--budget", "30", "-o", "ex.lz4"); code != ExitViolations {
		t.Fatalf("explore: exit %d %s", code, errb.String())
	}
	if code := run("report", "ex.lz4", "builtin:paxos", "-o", "ex.html"); code != ExitOK {
		t.Fatalf("report: exit %d %s", code, errb.String())
	}
	page, _ := os.ReadFile("ex.html")
	if !strings.Contains(string(page), "replay sim paxos --schedule ex.lz4 -o ex-rerun.lz4") {
		t.Fatalf("the report has no command that re-runs the explored run:\n%.2000s", page)
	}
	if code := run("sim", "paxos", "--schedule", "ex.lz4", "-o", "ex-rerun.lz4"); code != ExitOK {
		t.Fatalf("the report's command: exit %d %s", code, errb.String())
	}
}

// A predicate broken by a node's first step (its init) has a diff from
// nothing: the node had not started, which the report called "n1 is
// down" in place of the diff (a new user's liveness interval opened at
// #1, a node's init).
func TestReportDiffAtAnInitIsFromNothing(t *testing.T) {
	html, table := rearmReport(t, "safety(\"NotArmed\", lambda: forall(R, lambda r: not r.Armed))")
	if strings.Contains(html, "n1 is down") {
		t.Fatalf("the report says the starting node is down:\n%s", html)
	}
	if !strings.Contains(table, "<td>Armed</td><td>(none)</td><td>true</td>") {
		t.Errorf("the diff at the init does not show Armed new:\n%s", table)
	}
}
