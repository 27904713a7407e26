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
