package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Regenerating docs/case-studies.md erased its hand-written sections (the
// chain replication and lock service studies): what follows the marker
// is kept.
func TestTheHandWrittenPartIsKept(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "case-studies.md"))
	if err != nil {
		t.Fatal(err)
	}
	tail := keptTail(filepath.Join("..", "..", "docs", "case-studies.md"))
	if !strings.HasPrefix(tail, generatedEnd) || !strings.Contains(tail, "## Chain replication") || !strings.HasSuffix(string(doc), tail) {
		t.Fatalf("the kept part of docs/case-studies.md: %.200q", tail)
	}
	if got := keptTail(filepath.Join(t.TempDir(), "none.md")); got != generatedEnd+"\n" {
		t.Fatalf("no document: %q", got)
	}
}
