package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/scripts"
)

// replay index counts violations as replay check does: liveness
// intervals the stability measures screened are not violations (issue 10,
// item 5).
func TestIndexCountsViolationsAsCheckDoes(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := filepath.Join(dir, "rt.lz4")
	if code := app.Run([]string{"sim", "randtree", "--bug", "no-recovery-timer", "--seed", "1", "-o", trace}); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	src, _ := scripts.FS.ReadFile("randtree.star")
	script := filepath.Join(dir, "randtree.star")
	os.WriteFile(script, src, 0o644)

	out.Reset()
	app.Run([]string{"check", trace, script})
	m := regexp.MustCompile(`replay check: (\d+) violation\(s\)`).FindStringSubmatch(errb.String() + out.String())
	if m == nil {
		t.Fatalf("check's count:\n%s%s", out.String(), errb.String())
	}
	out.Reset()
	if code := app.Run([]string{"index", trace, "--preds", script}); code != 0 {
		t.Fatalf("index: exit %d: %s", code, errb.String())
	}
	if !regexp.MustCompile(`\): ` + m[1] + ` violation\(s\), \d+ liveness interval\(s\) not raised`).MatchString(out.String()) {
		t.Fatalf("check counts %s violation(s); index says:\n%s", m[1], out.String())
	}
}

// shortTrace is a short paxos trace in a folder of its own, simulated by
// run.
func shortTrace(t *testing.T, run func(args ...string) (string, string, int)) (dir, trace string) {
	t.Helper()
	dir = t.TempDir()
	trace = filepath.Join(dir, "p.lz4")
	if _, e, code := run("sim", "paxos", "--seed", "1", "--steps", "300", "-o", trace); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, e)
	}
	return dir, trace
}

// Results stored for a script that changed since are not shown as
// current: index (and the debugger) without --preds said "(stored): 1
// violation(s)" for a script that now finds none.
func TestStoredResultsOfAChangedScriptSaySo(t *testing.T) {
	run := inProcess()
	dir, trace := shortTrace(t, run)
	script := filepath.Join(dir, "p.star")
	os.WriteFile(script, []byte(`safety("Early", lambda: event.step < 100)`+"\n"), 0o644)
	if _, e, code := run("index", trace, "--preds", script); code != 0 {
		t.Fatalf("index --preds: exit %d: %s", code, e)
	}
	if out, _, _ := run("index", trace); !regexp.MustCompile(`\(stored\): 1 violation`).MatchString(out) {
		t.Fatalf("index of an unchanged script:\n%s", out)
	}
	os.WriteFile(script, []byte(`safety("Early", lambda: True)`+"\n"), 0o644)
	if out, _, _ := run("index", trace); !regexp.MustCompile(`\(stored, outdated: its script changed since they were checked; --preds \S+ checks it again\)`).MatchString(out) {
		t.Fatalf("index of a changed script:\n%s", out)
	}
}

// index --preds whose results cannot be stored exits 2: it printed them,
// warned they were kept "for this session only" (index has none), and
// exited 0 with nothing stored.
func TestIndexWhoseResultsCannotBeStoredFails(t *testing.T) {
	run := inProcess()
	dir, trace := shortTrace(t, run)
	if _, e, code := run("index", trace); code != 0 {
		t.Fatalf("index: exit %d: %s", code, e)
	}
	// A database folder nothing can be written into, root included (the
	// tests run as root, which a read-only mode does not stop).
	db := trace + ".db"
	if msg, err := exec.Command("chattr", "+i", db).CombinedOutput(); err != nil {
		t.Skipf("chattr +i (needed to make a folder root cannot write): %v %s", err, msg)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", db).Run() })
	script := filepath.Join(dir, "p.star")
	os.WriteFile(script, []byte(`safety("Early", lambda: event.step < 100)`+"\n"), 0o644)
	_, e, code := run("index", trace, "--preds", script)
	if code != ExitBadInput || !regexp.MustCompile(`checked but not stored`).MatchString(e) {
		t.Fatalf("index --preds with results that cannot be stored: exit %d\n%s", code, e)
	}
}
