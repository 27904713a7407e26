package record

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
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

// ScanFileReusing hands over the same events as ScanFile, decoded into
// one event instead of a new one each: nothing of an event survives into
// the next (a field the next one lacks is not left over).
func TestScanFileReusingReadsWhatScanFileReads(t *testing.T) {
	evs := genEvents(3000, 7)
	path := filepath.Join(t.TempDir(), "t.lz4")
	if err := os.WriteFile(path, writeTrace(t, evs, WriterOptions{}), 0o644); err != nil {
		t.Fatal(err)
	}
	scan := func(scanFile func(string, func(*node.Event) error) (*File, error)) ([]node.Event, map[*node.Event]bool) {
		var got []node.Event
		seen := map[*node.Event]bool{}
		if _, err := scanFile(path, func(ev *node.Event) error {
			got = append(got, *ev)
			seen[ev] = true
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got, seen
	}
	fresh, freshPtrs := scan(ScanFile)
	reused, reusedPtrs := scan(ScanFileReusing)
	if len(freshPtrs) != len(evs) || len(reusedPtrs) != 1 {
		t.Fatalf("ScanFile decoded into %d events, ScanFileReusing into %d; want %d and 1", len(freshPtrs), len(reusedPtrs), len(evs))
	}
	if len(fresh) != len(evs) || len(reused) != len(evs) {
		t.Fatalf("read %d and %d events, wrote %d", len(fresh), len(reused), len(evs))
	}
	for i := range evs {
		if !reflect.DeepEqual(fresh[i], reused[i]) {
			t.Fatalf("event %d differs:\nScanFile        %+v\nScanFileReusing %+v", i, fresh[i], reused[i])
		}
	}
	if _, err := ScanFileReusing(path, nil); err == nil {
		t.Fatal("ScanFileReusing without a function: no error")
	}
}
