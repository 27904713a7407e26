package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A capped list of problems does not pass for all of them.
func TestValidationErrorSaysWhenCapped(t *testing.T) {
	e := &ValidationError{Problems: make([]Problem, maxProblems)}
	if msg := e.Error(); !strings.HasPrefix(msg, "50 or more problems") {
		t.Fatalf("%q", msg)
	}
	e.Problems = e.Problems[:3]
	if msg := e.Error(); !strings.HasPrefix(msg, "3 problem(s)") || !strings.HasSuffix(msg, "(and 2 more)") {
		t.Fatalf("%q", msg)
	}
}

// The same file under two names is refused before it is read twice.
func TestGivenOnce(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.lz4")
	if err := os.WriteFile(a, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a, filepath.Join(dir, "b.lz4")); err != nil {
		t.Fatal(err)
	}
	err := givenOnce([]string{a, filepath.Join(dir, "missing.lz4"), filepath.Join(dir, "b.lz4")})
	if err == nil || !strings.Contains(err.Error(), "b.lz4 is given twice (also as "+a+")") {
		t.Fatalf("%v", err)
	}
	if err := givenOnce([]string{a, filepath.Join(dir, "missing.lz4")}); err != nil {
		t.Fatal(err)
	}
}
