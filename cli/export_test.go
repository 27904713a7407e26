package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
)

// TestExportBadInput: each refusal is exit 2 with one line, and leaves no
// output file behind.
func TestExportBadInput(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := filepath.Join(dir, "demo.lz4")
	if code := app.Run([]string{"demo", "-o", trace}); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errb.String())
	}
	o := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "svg"}, `--format "svg": want one of shiviz, perfetto, mermaid, dot, jsonl`},
		{[]string{}, "missing --format"},
		{[]string{"--format", "dot", "--from", "30", "--to", "20"}, "want 0 <= FROM <= TO"},
		{[]string{"--format", "dot", "--from", "99999"}, "the window would be empty"},
		// Step 3 is n4's init: no event of n1 in #3..#3.
		{[]string{"--format", "dot", "--from", "3", "--to", "3", "--nodes", "n1"}, "holds no event"},
		{[]string{"--format", "dot", "--nodes", "n9"}, "--nodes n9: no such node"},
		{[]string{"--format", "mermaid"}, "a Mermaid diagram shows at most 400"},
		{[]string{"--format", "dot", "--preds", "nope.txt"}, `"nope.txt" is not a predicates script`},
	} {
		out.Reset()
		errb.Reset()
		args := append([]string{"export", trace, "-o", o}, tc.args...)
		code := app.Run(args)
		msg := errb.String()
		if code != ExitBadInput || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, msg, tc.want)
		}
		if _, err := os.Stat(o); err == nil {
			t.Fatalf("%v left %s behind", tc.args, o)
		}
	}
}
