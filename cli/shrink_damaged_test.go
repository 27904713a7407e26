package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// shrink of a damaged trace said only what the damage was (a new user's
// file cut in half, its violation long before the cut). It names the
// two commands that re-run the events recovered into a whole trace, and
// that trace shrinks.
func TestShrinkOfADamagedTraceSaysHowToRecoverIt(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "big.lz4")
	app, _, errb := simulated(t, "paxos", "--bug", "latest-response", "--seed", "21", "--steps", "30000", "--time", "1h", "-o", trace)
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(dir, "half.lz4")
	if err := os.WriteFile(half, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := app.Run([]string{"shrink", half, "builtin:paxos", "-o", filepath.Join(dir, "s.lz4")}); code != ExitBadInput {
		t.Fatalf("shrink of a damaged trace: exit %d, want %d", code, ExitBadInput)
	}
	m := regexp.MustCompile(`re-run them into one with replay (schedule \S+ -o \S+), then replay (sim paxos --schedule \S+ -o \S+)\n$`).FindStringSubmatch(errb.String())
	if m == nil || strings.Count(errb.String(), "\n") != 1 {
		t.Fatalf("stderr does not name the commands on one line:\n%s", errb.String())
	}
	app.Run(strings.Fields(m[1])) // exits 2 (the trace is damaged) but writes the schedule
	errb.Reset()
	if code := app.Run(strings.Fields(m[2])); code != ExitOK {
		t.Fatalf("%s: exit %d: %s", m[2], code, errb.String())
	}
	recovered := strings.Fields(m[2])[len(strings.Fields(m[2]))-1]
	if code := app.Run([]string{"shrink", recovered, "builtin:paxos", "-o", filepath.Join(dir, "s.lz4")}); code != ExitOK {
		t.Fatalf("shrink of the recovered run: exit %d: %s", code, errb.String())
	}
}
