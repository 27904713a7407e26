package predicates

import (
	"testing"
	"time"
)

// The receive window keeps what a window of up to its span can reach,
// drops the rest as time moves on, and stays bounded on a long run.
func TestMsgWindowKeepsWhatWindowsReach(t *testing.T) {
	var w msgWindow
	span := int64(time.Minute)
	step := int64(time.Millisecond)
	for i := range int64(500_000) { // 500 s of receives, one per millisecond
		at := i * step
		w.add(at, "Ping")
		if len(w.entries) > 2*int(span/step)+2 {
			t.Fatalf("after %d receives the window holds %d entries, more than twice a minute's %d", i+1, len(w.entries), span/step)
		}
		if w.stale > 0 && w.entries[w.stale-1].at >= at-span {
			t.Fatalf("after %d receives entry %d (at %d) is counted stale but a %v window from %d reaches it", i+1, w.stale-1, w.entries[w.stale-1].at, time.Minute, at)
		}
	}
	last := 499_999 * step
	n := 0
	for _, e := range w.entries {
		if e.at > last-span && e.at <= last {
			n++
		}
	}
	if want := int(span / step); n != want {
		t.Fatalf("a minute's window counts %d receives, want %d", n, want)
	}
}

// Each receive costs the same however many receives the window holds:
// one minute of receives at 10,000/s is 600,000 entries (before, each
// receive walked every entry that had left the minute: up to 300,000).
func BenchmarkMsgWindowAdd(b *testing.B) {
	var w msgWindow
	step := int64(100 * time.Microsecond)
	for i := range b.N {
		w.add(int64(i)*step, "Ping")
	}
}
