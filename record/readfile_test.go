package record

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFileRefusesAPipe: opening a named pipe blocks until a writer
// comes, so ReadFile on one hung every verb; it is refused at once.
func TestReadFileRefusesAPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "trace.lz4")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadFile(fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "a named pipe, not a trace file") {
			t.Fatalf("ReadFile of a FIFO: %v", err)
		}
	case <-time.After(30 * time.Second): // it blocks opening the FIFO
		t.Fatal("ReadFile of a FIFO did not return")
	}
}
