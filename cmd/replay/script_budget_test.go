package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScriptBudgets: a script that would take all memory fails cleanly:
// exit 4 while checking, exit 2 at load, one line naming the budget; a
// script that is a symlink to /dev/zero is refused before it is read.
func TestScriptBudgets(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "ok.lz4"))
	hog := writeScript(t, dir, "hog.star", `safety("Hog", lambda: len("x" * 1000000000) > 0)`+"\n")
	predicateError(t, replay(t, dir, "check", "--script-memory", "32MiB", "ok.lz4", hog), "Hog", "memory budget", "--script-memory")

	atLoad := writeScript(t, dir, "atload.star", "x = list(range(1000000000))\nsafety(\"P\", lambda: True)\n")
	badInput(t, replay(t, dir, "check", "ok.lz4", atLoad), "atload.star:1:", "memory budget")

	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.star")); err != nil {
		t.Fatal(err)
	}
	badInput(t, replay(t, dir, "check", "ok.lz4", "zero.star"), "zero.star", "not a regular file")

	badInput(t, replay(t, dir, "check", "--script-memory", "lots", "ok.lz4", hog), "--script-memory")
	badInput(t, replay(t, dir, "check", "--script-time", "0s", "ok.lz4", hog), "--script-time")
}

// One Starlark step can outrun --script-time, which the checker looks at
// only between steps: set() over integers alike in their low 32 bits
// (Starlark hashes those alone) is quadratic in one built-in call. It
// ran for over 15 minutes under --script-time 1s, deaf to the budget.
// The command is now given up on at predicates.StuckBound (11 s here):
// exit 4 for an evaluation, 2 for the load, as when the budget runs out
// between steps; a hunt reports the seed as not fully checked.
func TestOneStepPastTheTimeBudgetIsGivenUpOn(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "ok.lz4"))
	const collide = "len(set([i << 32 for i in range(200000)])) > 0"
	atStep := writeScript(t, dir, "atstep.star", "A = table(\"paxos.Agent\", columns = [\"AcceptedRound\"])\n"+
		"safety(\"Collide\", lambda: now() == 0 or "+collide+")\n")
	atLoad := writeScript(t, dir, "atload.star", "x = "+collide+"\nsafety(\"P\", lambda: True)\n")
	within := func(t *testing.T, args ...string) result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, replayBin, args...)
		cmd.Dir = dir
		r := runCmd(t, cmd)
		if ctx.Err() != nil {
			t.Fatalf("still running after 2 minutes: %v", args)
		}
		return r
	}
	t.Run("check", func(t *testing.T) {
		t.Parallel()
		r := within(t, "check", "--script-time", "1s", "ok.lz4", atStep)
		predicateError(t, r, "safety predicate Collide did not return at step #", "given up on after 11s", "--script-time")
		if strings.Count(r.stderr, "\n") != 1 {
			t.Fatalf("want one line on stderr:\n%s", r.stderr)
		}
	})
	t.Run("load", func(t *testing.T) {
		t.Parallel()
		badInput(t, within(t, "check", "--script-time", "1s", "ok.lz4", atLoad), "the load of", "atload.star did not return", "--script-time")
	})
	t.Run("events --match", func(t *testing.T) {
		t.Parallel()
		// No --script-time here: the default budget, given up on at 20 s.
		badInput(t, within(t, "events", "ok.lz4", "--limit", "1", "--match", collide), "the expression", "did not return at step #0")
	})
	t.Run("hunt", func(t *testing.T) {
		t.Parallel()
		r := within(t, "sim", "paxos", "--seeds", "1-3", "--check", atStep, "--script-time", "1s", "-o", "hunt.lz4")
		predicateError(t, r, "seed 1:", "not fully checked")
		if !strings.Contains(r.stdout, "safety predicate Collide did not return at step #") || !strings.Contains(r.stdout, "reproduce: ") {
			t.Fatalf("stdout does not say which evaluation, nor how to reproduce:\n%s", r.stdout)
		}
	})
}
