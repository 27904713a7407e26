package cli

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
)

// check's debug command for a first finding that is a liveness alarm
// opens where the alarm was raised, as shrink's does, and names the
// interval's start before the command, which is pasted whole: it opened
// at the interval's first step, which for a predicate over a changing
// set was a harmless restart (a new user's SWIM run).
func TestCheckOpensAnAlarmWhereItWasRaised(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "fb.lz4")
	app, out, errb := simulated(t, "chord", "--bug", "finger-boundary", "--seed", "1", "-o", trace)
	app.Run([]string{"check", trace, "builtin:chord", "--json"})
	alarm := regexp.MustCompile(`"alarm_step":\s*(\d+)`).FindStringSubmatch(out.String())
	if alarm == nil {
		t.Fatalf("no alarm in the report:\n%s", out.String())
	}
	out.Reset()
	app.Run([]string{"check", trace, "builtin:chord"})
	var line string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "debug the first violation") {
			line = l
		}
	}
	m := regexp.MustCompile(`^debug the first violation \(at its alarm; violated since #\d+\): (replay debug \S+ --preds builtin:chord --at (\d+))$`).FindStringSubmatch(line)
	if m == nil || m[2] != alarm[1] {
		t.Fatalf("debug line %q, want one opening at the alarm, #%s, with the command last", line, alarm[1])
	}
	// A seed hunt's debug command too.
	out.Reset()
	hunt := filepath.Join(t.TempDir(), "h.lz4")
	app.Run([]string{"sim", "chord", "--bug", "finger-boundary", "--seeds", "1-1", "--check", "builtin:chord", "-o", hunt})
	if want := "--at " + alarm[1] + "\n"; !strings.Contains(out.String(), "debug:     replay debug "+hunt+" --preds builtin:chord "+want) {
		t.Fatalf("the hunt's debug command does not open at the alarm (#%s):\n%s", alarm[1], out.String())
	}
	// And explore's.
	out.Reset()
	explored := filepath.Join(t.TempDir(), "e.lz4")
	app.Run([]string{"explore", "chord", "--bug", "finger-boundary", "--check", "builtin:chord", "--budget", "10", "-o", explored})
	at := regexp.MustCompile(`alarm at step #(\d+) \(violated since #\d+\)`).FindStringSubmatch(out.String() + errb.String())
	if at == nil || !strings.Contains(out.String(), "--preds builtin:chord --at "+at[1]+"\n") {
		t.Fatalf("explore's debug command does not open at its alarm:\n%s\n%s", out.String(), errb.String())
	}
}

// simulated runs replay sim with args on an App of the bundled systems,
// failing t unless it succeeds, and returns the App and its outputs,
// emptied.
func simulated(t *testing.T, args ...string) (app *App, out, errb *bytes.Buffer) {
	t.Helper()
	out, errb = new(bytes.Buffer), new(bytes.Buffer)
	app = &App{Registry: examples.Registry(), Stdout: out, Stderr: errb}
	if code := app.Run(append([]string{"sim"}, args...)); code != ExitOK {
		t.Fatalf("sim %v: exit %d: %s", args, code, errb.String())
	}
	out.Reset()
	errb.Reset()
	return app, out, errb
}
