package lamport

import "testing"

func TestTickAndReceive(t *testing.T) {
	var a, b Clock
	if got := a.Tick(); got != 1 {
		t.Fatalf("first tick = %d, want 1", got)
	}
	sent := a.Tick() // a sends at 2
	b.Tick()         // b: 1
	if got := b.Receive(sent); got != 3 {
		t.Fatalf("receive of clock 2 at local 1 = %d, want 3", got)
	}
	// A receive of an older message still moves the clock forward.
	for range 5 {
		b.Tick()
	}
	if got := b.Receive(1); got != 9 {
		t.Fatalf("receive of an old clock = %d, want local+1 = 9", got)
	}
	if b.Now() != 9 {
		t.Fatalf("Now = %d, want 9", b.Now())
	}
}
