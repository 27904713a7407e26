package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// A write replaces the file whole with the given permissions and leaves
// no temporary file; one into a missing directory fails and leaves none.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("old contents"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	st, _ := os.Stat(p)
	if err != nil || string(got) != "new" || st.Mode().Perm() != 0o644 {
		t.Fatalf("%q %v %v", got, err, st.Mode())
	}
	if err := Write(filepath.Join(dir, "no", "f"), []byte("x"), 0o644); err == nil {
		t.Fatal("a write into a missing directory succeeded")
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 {
		t.Fatalf("left behind: %v", names)
	}
}
