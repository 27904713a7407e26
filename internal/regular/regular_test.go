package regular

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// A file bigger than the bound is refused without being read: reading
// it up to the bound first cost twice the bound in memory (a 300 MB
// result file took 600 MB to refuse).
func TestReadFileRefusesABigFileUnread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil { // sparse: nothing on disk
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = ReadFile(path, 32<<20)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooBig) {
		t.Fatalf("ReadFile of 64 MiB with a 32 MiB bound: %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("refusing the file allocated %d bytes", grew)
	}
	// Within the bound, it reads the whole file into a buffer of its
	// size (a bytes.Buffer grown to it doubled it: 96 MiB for 32).
	runtime.ReadMemStats(&before)
	b, err := ReadFile(path, 64<<20)
	runtime.ReadMemStats(&after)
	if err != nil || len(b) != 64<<20 {
		t.Fatalf("ReadFile within the bound: %d bytes, %v", len(b), err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20+1<<20 {
		t.Fatalf("reading 64 MiB allocated %d bytes", grew)
	}
}
