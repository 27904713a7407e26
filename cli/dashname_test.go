package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// A trace whose name begins with "-" is named "./-..." in the commands a
// check prints: pasted as it was, the name was read as a flag.
func TestCommandsNameADashTraceAsAFile(t *testing.T) {
	t.Chdir(t.TempDir())
	app, out, errb := simulated(t, "chord", "--bug", "finger-boundary", "--seed", "1", "-o", "./-run.lz4")
	if _, err := os.Stat("-run.lz4"); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	app.Run([]string{"check", "--", "-run.lz4", "builtin:chord"})
	debug := regexp.MustCompile(`(?m)replay debug (\S+) --preds builtin:chord --at \d+$`).FindStringSubmatch(out.String())
	if debug == nil || debug[1] != "./-run.lz4" {
		t.Fatalf("the debug command does not name ./-run.lz4:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "violation") {
		t.Fatalf("no violation reported:\n%s", out.String())
	}
	// The word as printed is the file; the bare name is read as flags.
	out.Reset()
	if code := app.Run([]string{"info", debug[1]}); code != ExitOK {
		t.Fatalf("info %s: exit %d: %s", debug[1], code, errb.String())
	}
	if code := app.Run([]string{"info", "-run.lz4"}); code != ExitBadInput {
		t.Fatalf("info -run.lz4: exit %d, want %d (read as flags)", code, ExitBadInput)
	}
}
