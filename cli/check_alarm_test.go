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
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	if code := app.Run([]string{"sim", "chord", "--bug", "finger-boundary", "--seed", "1", "-o", trace}); code != ExitOK {
		t.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	out.Reset()
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
}
