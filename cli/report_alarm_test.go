package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The report's debugger command for a liveness alarm opens where the
// alarm was raised, as check's does (it opened at the interval's first
// step while check's opened at the alarm), and says where the interval
// began.
func TestReportOpensAnAlarmWhereItWasRaised(t *testing.T) {
	dir := t.TempDir()
	trace, page := filepath.Join(dir, "fb.lz4"), filepath.Join(dir, "fb.html")
	app, out, errb := simulated(t, "chord", "--bug", "finger-boundary", "--seed", "1", "-o", trace)
	app.Run([]string{"check", trace, "builtin:chord", "--json"})
	m := regexp.MustCompile(`(?s)"step":\s*(\d+),.*?"alarm_step":\s*(\d+)`).FindStringSubmatch(out.String())
	if m == nil || m[1] == m[2] {
		t.Fatalf("no alarm raised after its interval began in the report:\n%s", out.String())
	}
	if code := app.Run([]string{"report", trace, "builtin:chord", "-o", page}); code != ExitOK {
		t.Fatalf("report: exit %d: %s", code, errb.String())
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	want := "--preds builtin:chord --at " + m[2]
	if !strings.Contains(string(html), want) || !strings.Contains(string(html), "open the debugger at the alarm (violated since #"+m[1]+")") {
		t.Fatalf("the report's debugger command does not open at the alarm (%s, since #%s)", want, m[1])
	}
	// A liveness alarm's page offers the command that finds where the
	// bug became unavoidable (a new user's page had nothing near it).
	if crit := "critical " + trace + " builtin:chord --predicate FingersCorrect --alarm " + m[2]; !strings.Contains(string(html), crit) {
		t.Fatalf("the report offers no %q", crit)
	}
}
