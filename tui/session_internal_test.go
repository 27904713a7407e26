package tui

import (
	"testing"
	"time"
)

// A backward run's window grows while stepping through it is quick,
// however long the seek to its start took (a node with tasks always live
// is rebuilt at every seek), and shrinks when the steps themselves are
// slow (a slow watch). Before, the seek counted, and a node rebuilt in
// more than chunkTime kept the window at one step: a run back over N
// steps cost N rebuilds.
func TestBackwardWindow(t *testing.T) {
	w := 1
	for range 20 {
		w = backWindow(w, time.Millisecond)
	}
	if w != maxBackWindow {
		t.Fatalf("quick steps: window %d after 20 windows, want %d", w, maxBackWindow)
	}
	if got := backWindow(64, 3*chunkTime); got != 32 {
		t.Fatalf("slow steps: window 64 → %d, want 32", got)
	}
	if got := backWindow(1, 3*chunkTime); got != 1 {
		t.Fatalf("slow steps: window 1 → %d, want 1", got)
	}
}
