package tui

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
)

// A watch stuck in one Starlark step (a set of integers alike in their
// low 32 bits is quadratic inside set()) froze the debugger for good: q
// and Ctrl-C went unheard. It is switched off once it has run the watch
// bound, and the debugger goes on.
func TestAStuckWatchIsSwitchedOffAndTheDebuggerGoesOn(t *testing.T) {
	m, _ := openDemo(t, 10)
	m.watchBound = time.Second // the evaluation below takes seconds
	u := startUI(t, m)
	u.keys("wlen(set([i << 32 for i in range(20000)]))\n")
	u.waitWithin("switched off", 30*time.Second)
	u.press(tcell.KeyRight, 0, 0)
	if r := u.row("▶ #11 "); r == "" {
		t.Fatalf("the cursor did not move after the watch was switched off:\n%s", u.text())
	}
	if !strings.Contains(u.text(), "did not return within 1s") {
		t.Fatalf("the Watches panel does not say why the watch is off:\n%s", u.text())
	}
	// Other watches work on a session opened anew.
	u.keys("w1+1\n")
	u.waitWithin("= 2", 10*time.Second)
}

// The script the watches load, edited into one whose load is stuck in
// one Starlark step, froze the debugger for good at the next watch: its
// load is given up on after the watch bound, and watches run without it.
func TestAStuckLoadOfTheWatchesScriptIsGivenUpOn(t *testing.T) {
	m, script := openDemo(t, 10)
	m.watchBound = time.Second
	if err := os.WriteFile(script, []byte("S = len(set([i << 32 for i in range(20000)]))\nsafety(\"P\", lambda: True)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u := startUI(t, m)
	u.keys("w1+1\n")
	u.waitWithin("did not return within 1s", 30*time.Second)
	u.press(tcell.KeyRight, 0, 0)
	u.waitWithin("= 2", 10*time.Second)
}

// r (re-check) after the script was edited into one whose load is stuck
// in one Starlark step spun at "step 1 of N" for as long as the step ran
// (a quarter of an hour for a set of 200,000), and r answered "already
// re-checking". The load is given up on past the debugger's bound for
// stuck calls, the re-check fails and the previous results stay, and r
// works again once the script is mended.
func TestAStuckLoadOfARecheckIsGivenUpOn(t *testing.T) {
	m, script := openDemo(t, 10)
	m.watchBound = time.Second // the load below takes seconds
	before := m.violationCount()
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("S = len(set([i << 32 for i in range(20000)]))\nsafety(\"P\", lambda: True)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	u := startUI(t, m)
	u.keys("r")
	u.waitWithin("re-check failed", 90*time.Second)
	if !strings.Contains(u.text(), "given up on") || m.violationCount() != before {
		t.Fatalf("after a stuck re-check: %d violations shown, want the previous %d:\n%s", m.violationCount(), before, u.text())
	}
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	u.keys("r")
	u.waitWithin("re-checked", 60*time.Second)
}
