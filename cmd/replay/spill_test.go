package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// timing matches what differs between two runs: --json's seconds, and
// verify's "(N state hashes compared, 0.01s)".
var timing = regexp.MustCompile(`"seconds": [0-9.e-]+|[0-9]+\.[0-9]+s\)`)

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
	badInput(t, r, "spilling the trace to disk", "missing", "set TMPDIR", "REPLAY_IN_MEMORY")
}

// TestHugeMessageSeqIsNoPanic: a receive naming a send seq far past any
// the sender recorded (2^63+1, a damaged or hostile trace) is looked up
// like any other missing send, held in memory or spilled: it used to
// overflow the per-node seq index and panic.
func TestHugeMessageSeqIsNoPanic(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "2", "--time", "1s", "-o", "p.lz4"))
	f, err := record.ReadFile(filepath.Join(dir, "p.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	hit := false
	for _, ev := range f.Events {
		if ev.Kind == node.KindRecv {
			ev.MsgSeq, hit = 1<<63+1, true
			break
		}
	}
	if !hit {
		t.Fatal("no receive to damage")
	}
	rewriteTrace(t, f, filepath.Join(dir, "huge.lz4"))
	for _, args := range [][]string{{"verify", "huge.lz4"}, {"events", "huge.lz4", "--limit", "5"}} {
		mem := replayEnv(t, dir, []string{"REPLAY_IN_MEMORY=1000000"}, args...)
		spilled := replayEnv(t, dir, []string{"REPLAY_IN_MEMORY=-1", "TMPDIR=" + t.TempDir()}, args...)
		// A receive of a seq its sender's recording, ended cleanly,
		// cannot have sent: refused, in memory and spilled alike.
		for _, r := range []result{mem, spilled} {
			if strings.Contains(r.stderr, "panic") || r.code != 2 || !strings.Contains(r.stderr, "sent as seq 9223372036854775809, but ") {
				t.Fatalf("%v: exit %d:\n%.2000s", args, r.code, r.stderr)
			}
		}
		if untimed(mem.stdout) != untimed(spilled.stdout) || mem.stderr != spilled.stderr {
			t.Fatalf("%v: in memory\n%.2000s\nspilled\n%.2000s", args, mem.stdout, spilled.stdout)
		}
	}
}

// TestInMemoryEnvMustBeANumber: a REPLAY_IN_MEMORY that is not a whole
// number (a size, an exponent) is one line and exit 2, not silently the
// default.
func TestInMemoryEnvMustBeANumber(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "--time", "1s", "-o", "p.lz4"))
	for _, v := range []string{"2GB", "1e6", "lots"} {
		badInput(t, replayEnv(t, dir, []string{"REPLAY_IN_MEMORY=" + v}, "verify", "p.lz4"), "REPLAY_IN_MEMORY="+v, "whole number")
	}
	for _, v := range []string{"", "0", "-1", "5"} {
		mustOK(t, replayEnv(t, dir, []string{"REPLAY_IN_MEMORY=" + v, "TMPDIR=" + t.TempDir()}, "verify", "p.lz4"))
	}
}

// TestHelpTellsOfSpilling: --help names the variable that sets how much
// of a trace stays in memory, and where the rest goes.
func TestHelpTellsOfSpilling(t *testing.T) {
	r := replay(t, t.TempDir(), "--help")
	mustOK(t, r)
	for _, want := range []string{"REPLAY_IN_MEMORY=N", "$TMPDIR", "65536"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("--help does not mention %q:\n%s", want, r.stdout)
		}
	}
}
