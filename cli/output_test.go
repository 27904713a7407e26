package cli

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/statedb"
)

// A killed `replay sim -o` leaves its partial output: the next output to
// the same name removes the partials no live process writes (issue 10,
// item 13), and only those.
func TestStalePartialOutputsAreRemoved(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "run.lz4")
	old := time.Now().Add(-time.Hour)
	// Being written by a live process (it holds the file's lock).
	live, err := statedb.CreatePartial(target)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	os.Chtimes(live.Name(), old, old)
	stale := filepath.Join(dir, ".run.lz4.partial-123456")
	if err := os.WriteFile(stale, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(stale, old, old)
	// Killed half a minute ago, as a user who kills and reruns would.
	recent := filepath.Join(dir, ".run.lz4.partial-777")
	os.WriteFile(recent, nil, 0o644)
	os.Chtimes(recent, time.Now().Add(-30*time.Second), time.Now().Add(-30*time.Second))
	// Not ours: another name, and a name that only looks alike.
	other := filepath.Join(dir, ".other.lz4.partial-1")
	lookalike := filepath.Join(dir, ".run.lz4.partial-notes")
	for _, p := range []string{other, lookalike} {
		os.WriteFile(p, nil, 0o644)
		os.Chtimes(p, old, old)
	}

	f, err := createAtomic(target)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("x"))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{stale, recent} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("the stale partial output %s was not removed", filepath.Base(p))
		}
	}
	for _, p := range []string{live.Name(), other, lookalike, target} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
		}
	}
}

// An output through a symbolic link replaces the file the link names and
// keeps the link; an output to a device or FIFO is written to it, never
// renamed over it (-o /dev/null had become a regular file).
func TestAtomicOutputKeepsLinksAndDevices(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.txt")
	link := filepath.Join(dir, "link.txt")
	if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomic(link, func(w *atomicFile) error { _, err := w.WriteString("new"); return err }); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", st, err)
	}
	if b, _ := os.ReadFile(real); string(b) != "new" {
		t.Fatalf("the linked file holds %q", b)
	}
	// A FIFO stands for a device (/dev/null): a test must not risk the
	// machine's own.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	got := make(chan string)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- string(b)
	}()
	if err := writeAtomic(fifo, func(w *atomicFile) error { _, err := w.WriteString("through"); return err }); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got:
		if b != "through" {
			t.Fatalf("the FIFO's reader got %q", b)
		}
	case <-time.After(30 * time.Second): // a file renamed over the FIFO: its reader waits for ever
		t.Fatal("nothing was written to the FIFO")
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", st, err)
	}
}
