package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/cli"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// A client asks once and waits, with no timer to retry: when the network
// drops the question the run is doomed at the send. The scenario pings
// the server every 10ms, so the recorded run's time goes on and the
// wait grows past its limit; a walk gets no inputs and goes quiet at
// once. Judged where it went quiet, such a walk "recovered": the wait
// was still under its limit when time stopped.

type (
	Ask    struct{}
	Poke   struct{}
	Req    struct{}
	Answer struct{}
)

type Asker struct {
	Waiting bool
	AskedAt time.Time
	Pokes   int
}

func (a *Asker) Init(node.Env) {}

func (a *Asker) Input(env node.Env, m node.Message) {
	switch m.(type) {
	case Ask:
		a.Waiting, a.AskedAt = true, env.Now()
		env.Send("n2", Req{})
	case Poke:
		a.Pokes++
	}
}

func (a *Asker) Receive(env node.Env, from node.ID, m node.Message) {
	switch m.(type) {
	case Req:
		env.Send(from, Answer{})
	case Answer:
		a.Waiting = false
	}
}

func (a *Asker) Timer(node.Env, node.Timer) {}

var asker = &system.System{
	Name:  "asker",
	Codec: node.NewCodec().MustRegister(Ask{}, Poke{}, Req{}, Answer{}),
	New:   func(node.ID, system.Config) node.Handler { return &Asker{} },
	Sim:   system.SimDefaults{Nodes: 2, Time: 300 * time.Millisecond},
	Scenario: func(ctl system.Controller) {
		ctl.Input("n1", Ask{})
		for t := 10 * time.Millisecond; t <= 200*time.Millisecond; t += 10 * time.Millisecond {
			ctl.At(t, func() { ctl.Input("n2", Poke{}) })
		}
	},
}

// askedIntoTheVoid records a run of sys that drops the question (not the
// answer: the client gets no event after it, so its clock never shows
// the answer lost).
func askedIntoTheVoid(t *testing.T, run func(args ...string) (int, string, string), sys, trace string) {
	t.Helper()
	lossySeed(t, run, sys, trace, "the question", func() bool {
		_, events, _ := run("events", trace, "--json")
		return strings.Contains(events, `"dropped"`) && strings.Count(events, "cli_test.Answer") == 0
	})
}

// critical names the step at which the dropped question shows as lost,
// not the later one at which the wait passed its limit.
func TestCriticalJudgesAQuietWalkAsTimeGoesOn(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "asker.star")
	os.WriteFile(script, []byte(`N = table("cli_test.Asker")
liveness("Answered", lambda: forall(N, lambda n: not n.Waiting or now() - n.AskedAt < 50 * MILLISECOND))
`), 0o644)
	run := replayOf(asker)
	trace := filepath.Join(dir, "asked.lz4")
	askedIntoTheVoid(t, run, "asker", trace)
	if code, out, errb := run("check", trace, script); code != cli.ExitViolations {
		t.Fatalf("check: exit %d, want %d\n%s%s", code, cli.ExitViolations, out, errb)
	}
	code, out, errb := run("critical", trace, script, "--predicate", "Answered", "--walks", "2", "--stable", "100ms", "--json")
	if code != cli.ExitOK {
		t.Fatalf("critical: exit %d\n%s%s", code, out, errb)
	}
	var res struct {
		Critical struct {
			Time       time.Duration `json:"time_ns"`
			BecameLost []struct {
				Type string `json:"type"`
			} `json:"became_lost"`
		} `json:"critical"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("critical --json: %v\n%s", err, out)
	}
	lost := res.Critical.BecameLost
	if len(lost) == 0 || lost[0].Type != "cli_test.Req" || res.Critical.Time >= 50*time.Millisecond {
		t.Fatalf("critical names no lost question; a walk that went quiet before the wait's limit was taken to recover:\n%s", out)
	}
}

// The same run with the client crashing at 250ms: the wait ends with it,
// so the predicate holds at the end, and its alarm's interval closed
// before. critical searches that interval, not the end of the run
// (where walks recovered, and it said there was no transition).
func TestCriticalSearchesAnAlarmThatClosed(t *testing.T) {
	crashing := *asker
	crashing.Name = "asker-crash"
	crashing.Scenario = func(ctl system.Controller) {
		asker.Scenario(ctl)
		ctl.At(250*time.Millisecond, func() { ctl.Crash("n1") })
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "asker.star")
	os.WriteFile(script, []byte(`N = table("cli_test.Asker")
liveness("Answered", lambda: forall(N, lambda n: not n.Waiting or now() - n.AskedAt < 50 * MILLISECOND),
         alarm = lambda aux: True)
`), 0o644)
	run := replayOf(&crashing)
	trace := filepath.Join(dir, "asked.lz4")
	askedIntoTheVoid(t, run, "asker-crash", trace)
	code, out, errb := run("check", trace, script)
	if code != cli.ExitViolations || !strings.Contains(out, "alarm at #") || strings.Contains(out, "still open at the end") {
		t.Fatalf("check: exit %d, want an alarm whose interval closed\n%s%s", code, out, errb)
	}
	code, out, errb = run("critical", trace, script, "--predicate", "Answered", "--walks", "2", "--stable", "100ms")
	if code != cli.ExitOK || !strings.Contains(out, "critical step:") || !strings.Contains(out, "cli_test.Req from n1 to n2") {
		t.Fatalf("critical: exit %d, want the lost question\n%s%s", code, out, errb)
	}
}

// explore --from says, as predict does, that the forked runs get none
// of the recording's later inputs: a run that needs one finds nothing,
// and the user should not read that as "nothing can go wrong".
func TestExploreFromSaysForksGetNoInputs(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "asker.star")
	os.WriteFile(script, []byte(`N = table("cli_test.Asker")
safety("Counted", lambda: forall(N, lambda n: n.Pokes >= 0))
`), 0o644)
	run := replayOf(asker)
	trace := filepath.Join(dir, "asked.lz4")
	if code, out, errb := run("sim", "asker", "--seed", "1", "--churn", "0", "-o", trace); code != cli.ExitOK {
		t.Fatalf("sim: exit %d\n%s%s", code, out, errb)
	}
	code, out, errb := run("explore", "asker", "--from", trace, "--at", "3", "--check", script, "--budget", "1", "-o", filepath.Join(dir, "x.lz4"))
	if code != cli.ExitOK || !strings.Contains(errb, "external inputs after #3") || !strings.Contains(errb, "the runs explored here receive none of them") {
		t.Fatalf("explore --from: exit %d, want a note on the inputs it leaves out\n%s%s", code, out, errb)
	}
}
