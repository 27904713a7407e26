package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIndex(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "demo", "--dir", "."))
	r := replay(t, dir, "index", "replay-demo.lz4", "--preds", "replay-demo.star")
	mustOK(t, r)
	for _, want := range []string{"replay-demo.lz4.db: built in", "1926 steps, 7 nodes", "predicates replay-demo.star (checked): 1 violation(s)", "next: replay debug replay-demo.lz4 --preds replay-demo.star"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("index output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = replay(t, dir, "index", "replay-demo.lz4", "--preds", "replay-demo.star")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "up to date") || !strings.Contains(r.stdout, "(stored): 1 violation(s)") {
		t.Fatalf("second index did not reuse the database:\n%s", r.stdout)
	}
	// Nothing half-built is left around.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "partial") {
			t.Fatalf("left behind: %s", e.Name())
		}
	}
	badInput(t, replay(t, dir, "index", "missing.lz4"), "missing.lz4")
	os.WriteFile(filepath.Join(dir, "broken.star"), []byte("safety(\"x\", lambda: undefined_name)\n"), 0o644)
	badInput(t, replay(t, dir, "index", "replay-demo.lz4", "--preds", "broken.star"), "broken.star:1:")
	// The debugger needs a terminal; tests have none.
	badInput(t, replay(t, dir, "debug", "replay-demo.lz4"), "needs a terminal")
	// A missing trace is what is wrong first, terminal or not.
	badInput(t, replay(t, dir, "debug", "nosuch.lz4"), "nosuch.lz4: no such file")
}
