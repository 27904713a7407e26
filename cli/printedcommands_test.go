package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
)

// Every command the tool prints for pasting quotes the trace's path: a
// file named with shell syntax in it ran that syntax when a user pasted
// the "next:" or "debug the first violation:" line (a hostile pass).
func TestPrintedCommandsQuoteTracePaths(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "a b;$(touch PWNED).lz4")
	run := func(args ...string) string {
		var out, errb bytes.Buffer
		app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
		app.Run(args)
		return out.String()
	}
	quoted := "'" + trace + "'"
	sim := run("sim", "paxos", "--bug", "spec", "--seed", "8", "-o", trace)
	check := run("check", trace, "builtin:paxos")
	index := run("index", trace, "--preds", "builtin:paxos")
	for name, out := range map[string]string{"sim": sim, "check": check, "index": index} {
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "replay ") && strings.Contains(line, "PWNED") && !strings.Contains(line, quoted) {
				t.Errorf("%s prints an unquoted path: %s", name, line)
			}
		}
	}
	if !strings.Contains(check, "replay debug "+quoted) {
		t.Fatalf("check prints no debug command for the trace:\n%s", check)
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Fatal("something ran the file name")
	}
}
