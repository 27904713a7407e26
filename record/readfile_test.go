package record

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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

// ScanFileReusing hands over the same events as ScanFile, decoded into a
// few batches of events reused instead of a new one each: nothing of an
// event survives into the next use of its memory (a field the next one
// lacks is not left over).
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
	if len(freshPtrs) != len(evs) || len(reusedPtrs) > 3*scanBatch {
		t.Fatalf("ScanFile decoded into %d events, ScanFileReusing into %d; want %d and at most %d", len(freshPtrs), len(reusedPtrs), len(evs), 3*scanBatch)
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

// ScanFileReusing reads ahead of fn on another goroutine; what fn and
// the caller see is still ScanFile's: an error of fn ends the scan at
// that event with that error, and a file cut short reads as far, with
// the same damage, as ScanFile reads it.
func TestScanFileReusingStopsAndDamagesAsScanFile(t *testing.T) {
	evs := genEvents(3000, 11)
	data := writeTrace(t, evs, WriterOptions{})
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.lz4")
	if err := os.WriteFile(whole, data, 0o644); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("enough")
	calls := 0
	_, err := ScanFileReusing(whole, func(*node.Event) error {
		calls++
		if calls == 1000 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 1000 {
		t.Fatalf("fn failing at event 1000: %d calls, error %v", calls, err)
	}

	// Blocks end after events 700, 1400 and 2100; the cut falls in the
	// third block, so two blocks' events are recovered.
	blocks, ends := multiBlock(t, evs, []int{700, 1400, 2100}, -1)
	cut := filepath.Join(dir, "cut.lz4")
	if err := os.WriteFile(cut, blocks[:ends[1]+(ends[2]-ends[1])/2], 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(scanFile func(string, func(*node.Event) error) (*File, error)) (*File, []uint64) {
		var seqs []uint64
		f, err := scanFile(cut, func(ev *node.Event) error {
			seqs = append(seqs, ev.Seq)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return f, seqs
	}
	fresh, freshSeqs := read(ScanFile)
	reused, reusedSeqs := read(ScanFileReusing)
	if fresh.Damage == nil || reused.Damage == nil || fresh.Damage.Error() != reused.Damage.Error() {
		t.Fatalf("damage: ScanFile %v, ScanFileReusing %v", fresh.Damage, reused.Damage)
	}
	if fresh.Count != reused.Count || fresh.Ended != reused.Ended || !slices.Equal(freshSeqs, reusedSeqs) || len(freshSeqs) == 0 {
		t.Fatalf("a cut file: ScanFile read %d events (%d handed over), ScanFileReusing %d (%d)", fresh.Count, len(freshSeqs), reused.Count, len(reusedSeqs))
	}
}

// A file cut short while it is read is not taken for a recording that
// was killed before its end record: the reader says it changed. (One
// that grows is a recording still being written, and reads as far as
// it had got.)
func TestScanFileRefusesAFileCutWhileRead(t *testing.T) {
	evs := genEvents(3000, 13)
	blocks, ends := multiBlock(t, evs, []int{700, 1400, 2100}, -1)
	for _, scanFile := range []func(string, func(*node.Event) error) (*File, error){ScanFile, ScanFileReusing} {
		path := filepath.Join(t.TempDir(), "t.lz4")
		if err := os.WriteFile(path, blocks, 0o644); err != nil {
			t.Fatal(err)
		}
		n := 0
		_, err := scanFile(path, func(*node.Event) error {
			if n++; n == 10 {
				if err := os.Truncate(path, ends[1]); err != nil {
					t.Fatal(err)
				}
			}
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "shrank") {
			t.Fatalf("a file cut while read: %v", err)
		}
		grown := filepath.Join(t.TempDir(), "g.lz4")
		if err := os.WriteFile(grown, blocks[:ends[1]], 0o644); err != nil {
			t.Fatal(err)
		}
		n = 0
		if _, err := scanFile(grown, func(*node.Event) error {
			if n++; n == 10 {
				f, err := os.OpenFile(grown, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.Write(blocks[ends[1]:ends[2]])
				f.Close()
			}
			return nil
		}); err != nil {
			t.Fatalf("a file that grew while read: %v", err)
		}
	}
}
