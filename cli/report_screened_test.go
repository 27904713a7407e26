package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
)

// A liveness interval screened by its alarm function is not a violation:
// a report of a run with one and no violation said "0 violation(s)
// shown, 1 more listed below", under a heading of other violations (an
// SRE's raftkv cluster, whose leaderless start LeaderExists screens).
func TestAReportDoesNotCallScreenedIntervalsViolations(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := filepath.Join(dir, "rk.lz4")
	if code := app.Run([]string{"sim", "raftkv", "--seed", "2", "-o", trace}); code != ExitOK {
		t.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	page := filepath.Join(dir, "r.html")
	if code := app.Run([]string{"report", trace, "builtin:raft", "-o", page}); code != ExitOK {
		t.Fatalf("report: exit %d: %s", code, errb.String())
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	if !strings.Contains(html, "LeaderExists") || !strings.Contains(html, "screened") {
		t.Fatal("the run has no screened interval to show: the test shows nothing")
	}
	for _, bad := range []string{"more listed below", "Other violations"} {
		if strings.Contains(html, bad) {
			t.Errorf("the page says %q of a run without a violation", bad)
		}
	}
	if !strings.Contains(html, "1 liveness interval(s) screened by their alarm function or left unjudged, which are not violations") {
		t.Error("the summary does not count the screened interval apart")
	}
}
