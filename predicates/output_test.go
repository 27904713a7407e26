package predicates

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/predicates/internal/dd"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// loadOnDD loads src over a short dd run of a few hundred steps.
func loadOnDD(t *testing.T, src string) *Checker {
	t.Helper()
	return ddChecker(t, func(ctl system.Controller) {
		for i := range 200 {
			ctl.At(time.Duration(i+1)*time.Millisecond, func() { ctl.Input("n1", dd.Cmd{Op: "set", Args: []string{"V", "1"}}) })
		}
	}, sim.Config{Seed: 1, Nodes: 2, Time: 300 * time.Millisecond}, src)
}

// ddChecker loads the script src over a dd run of scenario and cfg.
func ddChecker(t *testing.T, scenario func(system.Controller), cfg sim.Config, src string) *Checker {
	t.Helper()
	sys := *dd.System
	sys.Scenario = scenario
	var buf bytes.Buffer
	if _, err := sim.Run(&sys, cfg.WithDefaults(&sys), &buf); err != nil {
		t.Fatal(err)
	}
	tr, err := replay.FromBytes(buf.Bytes(), "dd.lz4")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "s.star")
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(tr, system.NewRegistry(dd.System), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(script, r, Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// What a script writes is bounded: fail("y" * 10**8) put a 100 MB line
// on stderr, and a print at every step of a long trace gigabytes (a
// hostile pass).
func TestScriptOutputIsBounded(t *testing.T) {
	c := loadOnDD(t, `safety("Big", lambda: fail("y" * 1000000))`)
	rep, err := c.Run(RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Errors) != 1 || len(rep.Errors[0].Message) > maxMessageBytes+100 || !strings.Contains(rep.Errors[0].Message, "more bytes)") {
		t.Fatalf("the error: %d errors, message of %d bytes", len(rep.Errors), len(rep.Errors[0].Message))
	}
	c = loadOnDD(t, `def chatty():
    print("x" * 10000)
    return event.step >= 0

safety("Chatty", chatty)`)
	var out bytes.Buffer
	c.printTo = &out
	if rep, err = c.Run(RunOptions{}); err != nil || rep.Err() != nil {
		t.Fatal(err, rep.Err())
	}
	if rep.Steps*10001 <= maxPrintBytes {
		t.Fatalf("only %d steps: too few to reach the bound", rep.Steps)
	}
	if out.Len() > maxPrintBytes+200 || !strings.Contains(out.String(), "what it prints from step #") {
		t.Fatalf("printed %d bytes, ending %q", out.Len(), out.String()[max(0, out.Len()-200):])
	}
}

// A line that fills the bound exactly, or one byte short of it, is cut
// where it may be: the cut read one byte past the line and panicked.
func TestPrintAtTheBound(t *testing.T) {
	for _, n := range []int{maxPrintBytes, maxPrintBytes - 1, maxPrintBytes + 5} {
		c := &Checker{printTo: &bytes.Buffer{}}
		c.print(nil, strings.Repeat("x", n))
		c.print(nil, "more")
		if out := c.printTo.(*bytes.Buffer); out.Len() > maxPrintBytes+200 || !strings.Contains(out.String(), "is dropped") {
			t.Fatalf("a line of %d bytes: printed %d bytes", n, out.Len())
		}
	}
	// Short lines reaching the bound exactly (2^20 + 1 = 17 * 61681).
	c := &Checker{printTo: &bytes.Buffer{}}
	for range 61681 {
		c.print(nil, strings.Repeat("y", 16))
	}
	c.print(nil, "more")
	// Whole lines, then the notice: no line is cut in two.
	lines := strings.Split(strings.TrimSuffix(c.printTo.(*bytes.Buffer).String(), "\n"), "\n")
	for _, l := range lines[:len(lines)-1] {
		if l != strings.Repeat("y", 16) {
			t.Fatalf("a line %q among the printed ones", l)
		}
	}
	if !strings.HasPrefix(lines[len(lines)-1], "print: ") {
		t.Fatalf("the last line: %q", lines[len(lines)-1])
	}
}
