package statedb

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCreatePartialHonoursTheUmask: an output renamed into place has the
// permissions of any file the user creates (os.CreateTemp's 0600 made
// traces and reports unreadable to anyone else).
func TestCreatePartialHonoursTheUmask(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref")
	if err := os.WriteFile(ref, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	want, _ := os.Stat(ref)
	f, err := CreatePartial(filepath.Join(dir, "out.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, _ := f.Stat()
	if got.Mode().Perm() != want.Mode().Perm() {
		t.Errorf("partial output mode %v, a file created with 0666 gets %v", got.Mode().Perm(), want.Mode().Perm())
	}
}
