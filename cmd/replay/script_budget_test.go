package main

import (
	"os"
	"path/filepath"
	"testing"
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
