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
		w = backWindow(w, 0, time.Millisecond)
	}
	if w != maxBackWindow {
		t.Fatalf("quick steps: window %d after 20 windows, want %d", w, maxBackWindow)
	}
	// A seek of 3 s and a step of 1 ms: the next window steps for about
	// as long as the seek took.
	if got := backWindow(1, 3*time.Second, time.Millisecond); got != 3000 {
		t.Fatalf("slow seek: window 1 → %d, want 3000", got)
	}
	// Slow steps after a slow seek: still sized on the seek.
	if got := backWindow(40, time.Second, 400*time.Millisecond); got != 100 {
		t.Fatalf("slow seek and steps: window 40 → %d, want 100", got)
	}
	// Slow steps after a quick seek: halved at most.
	if got := backWindow(64, 0, 3*chunkTime); got != 32 {
		t.Fatalf("slow steps: window 64 → %d, want 32", got)
	}
	if got := backWindow(1, 0, 3*chunkTime); got != 1 {
		t.Fatalf("slow steps: window 1 → %d, want 1", got)
	}
}
