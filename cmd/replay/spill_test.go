package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

var timing = regexp.MustCompile(`"seconds": [0-9.e-]+`)

// untimed drops how long a run took from its JSON report.
func untimed(s string) string { return timing.ReplaceAllString(s, "") }

// replayEnv runs the CLI with extra environment variables.
func replayEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(replayBin, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	return runCmd(t, cmd)
}

// TestSpilledTraceChecksTheSame: a trace spilled to disk (as every trace
// past REPLAY_IN_MEMORY events is) checks, verifies and lists exactly as
// one held in memory; a temporary directory that cannot be written is one
// line and exit 2.
func TestSpilledTraceChecksTheSame(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "chord", "--seed", "4", "--bug", "pred-order", "--steps", "6000", "-o", "c.lz4"))
	for _, args := range [][]string{
		{"check", "c.lz4", "builtin:chord", "--json"},
		{"check", "c.lz4", "builtin:chord", "--json", "--jobs", "3", "--marks", "1000,2000,3000"},
		{"verify", "c.lz4", "--json"},
		{"events", "c.lz4", "--from", "5000"},
	} {
		mem := replayEnv(t, dir, []string{"REPLAY_IN_MEMORY=1000000"}, args...)
		spilled := replayEnv(t, dir, []string{"REPLAY_IN_MEMORY=-1", "TMPDIR=" + t.TempDir()}, args...)
		if mem.code != spilled.code || untimed(mem.stdout) != untimed(spilled.stdout) {
			t.Fatalf("%v: in memory exit %d, spilled exit %d\nin memory: %.2000s\nspilled: %.2000s", args, mem.code, spilled.code, mem.stdout, spilled.stdout)
		}
		if args[0] == "check" && mem.code != 1 {
			t.Fatalf("check found nothing (exit %d): the comparison proves little\n%s%s", mem.code, mem.stdout, mem.stderr)
		}
	}
	r := replayEnv(t, dir, []string{"REPLAY_IN_MEMORY=-1", "TMPDIR=" + filepath.Join(dir, "missing")}, "verify", "c.lz4")
	badInput(t, r, "spilling the trace to disk", "missing")
}
