package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/cli"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// A fail-stop failure detector: n2 beats to n1 every 10ms, and n1 should
// declare n2 dead after 50ms without a beat, but its check never runs
// again once a beat is missed (the bug). The scenario crashes n2 for good
// at 100ms.

type Beat struct{}

type Watcher struct {
	LastBeat time.Time
	Declared bool
}

func (w *Watcher) Init(env node.Env) {
	if env.Self() == "n2" {
		env.After(10*time.Millisecond, "beat")
	} else {
		w.LastBeat = env.Now()
		env.After(20*time.Millisecond, "check")
	}
}

func (w *Watcher) Receive(env node.Env, _ node.ID, _ node.Message) { w.LastBeat = env.Now() }

func (w *Watcher) Timer(env node.Env, t node.Timer) {
	switch t.Name {
	case "beat":
		env.Send("n1", Beat{})
		env.After(10*time.Millisecond, "beat")
	case "check":
		if env.Now().Sub(w.LastBeat) > 50*time.Millisecond {
			w.Declared = true
		} else if env.Now().Sub(w.LastBeat) < 15*time.Millisecond {
			env.After(20*time.Millisecond, "check") // the bug: not re-armed after a missed beat
		}
	}
}

var watcher = &system.System{
	Name:  "watcher",
	Codec: node.NewCodec().MustRegister(Beat{}),
	New:   func(node.ID, system.Config) node.Handler { return &Watcher{} },
	Sim:   system.SimDefaults{Nodes: 2, LatencyMin: time.Millisecond, LatencyMax: time.Millisecond, Time: 400 * time.Millisecond},
	Scenario: func(ctl system.Controller) {
		ctl.At(100*time.Millisecond, func() { ctl.Crash("n2") })
	},
}

// Walks restart the nodes down where they start, so from the end of the
// run every walk revives n2 and "recovers": critical said the run was not
// doomed, naming no restart (a new user's SWIM detector). It now says
// which nodes the walks revived, and --keep-down leaves them down: the
// critical step is then the crash.
func TestCriticalKeepsAFailStopCrashDown(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "watch.star")
	os.WriteFile(script, []byte(`W = table("cli_test.Watcher")
def n2_up_or_declared():
    return W.get("n2") != None or exists(W, lambda w: w.node == "n1" and w.Declared)
liveness("CrashDetected", n2_up_or_declared)
`), 0o644)
	run := replayOf(watcher)
	trace := filepath.Join(dir, "w.lz4")
	if code, out, errb := run("sim", "watcher", "--seed", "1", "--drop", "0", "--churn", "0", "-o", trace); code != cli.ExitOK {
		t.Fatalf("sim: exit %d\n%s%s", code, out, errb)
	}
	if code, out, errb := run("check", trace, script); code != cli.ExitViolations {
		t.Fatalf("check: exit %d, want a violation\n%s%s", code, out, errb)
	}
	code, out, errb := run("critical", trace, script, "--predicate", "CrashDetected", "--walks", "2", "--stable", "50ms")
	if code != cli.ExitOK || !strings.Contains(out, "not doomed where it ends") || !strings.Contains(errb, "restarted n2, down there") || !strings.Contains(errb, "--keep-down") {
		t.Fatalf("critical: exit %d, want no transition and a note of the revived n2\n%s%s", code, out, errb)
	}
	code, out, errb = run("critical", trace, script, "--predicate", "CrashDetected", "--walks", "2", "--stable", "50ms", "--keep-down")
	if code != cli.ExitOK || !strings.Contains(out, "critical step:") || !strings.Contains(out, "n2 crash") || strings.Contains(errb, "restarted") {
		t.Fatalf("critical --keep-down: exit %d, want the crash as the critical step\n%s%s", code, out, errb)
	}
}
