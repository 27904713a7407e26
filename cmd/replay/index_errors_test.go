package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIndexWithABrokenPredicateDoesNotPass: replay index stores the
// predicate results for the debugger; when a predicate could not be
// evaluated the results are incomplete, so the error goes to stderr and
// the exit code is 4, as for replay check.
func TestIndexWithABrokenPredicateDoesNotPass(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--steps", "200", "-o", "t.lz4"))
	script := "Agent = table(\"paxos.Agent\")\nsafety(\"Broken\", lambda: len(Agent) // 0 == 0)\n"
	if err := os.WriteFile(filepath.Join(dir, "p.star"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	r := replay(t, dir, "index", "t.lz4", "--preds", "p.star")
	if r.code != 4 {
		t.Fatalf("index with a failing predicate: exit %d, want 4\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "Broken") || strings.Contains(r.stdout, "Broken failed") {
		t.Fatalf("the predicate error belongs on stderr\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
	// The summary does not read as a clean check (a new user's trial).
	if !strings.Contains(r.stdout, "0 violation(s), 1 predicate error(s): not fully checked") {
		t.Fatalf("the summary hides the error\nstdout: %s", r.stdout)
	}
}

// TestIndexRefusesAScriptThatIsADevice: the database hashes the script
// before loading it; a --preds symlinked to /dev/zero must be refused
// there as the loader refuses it, not read forever.
func TestIndexRefusesAScriptThatIsADevice(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--steps", "50", "-o", "t.lz4"))
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.star")); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() { done <- replay(t, dir, "index", "t.lz4", "--preds", "zero.star") }()
	select {
	case r := <-done:
		badInput(t, r, "zero.star", "not a regular file")
	case <-time.After(30 * time.Second):
		t.Fatal("replay index --preds <symlink to /dev/zero> did not finish in 30s")
	}
}
