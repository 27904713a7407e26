package stall

import (
	"testing"
	"time"
)

// A watch gives up on exactly the call it saw stuck: once given up on,
// the call's Leave says so, and no call enters after it.
func TestAWatchGivesUpOnTheCallItSawStuck(t *testing.T) {
	w := NewWatch()
	s := w.Slot()
	what := "node n2's handler, in its timer event"
	if !s.Begin(7, &what) {
		t.Fatal("a fresh slot refused a call")
	}
	done := make(chan struct{})
	defer close(done)
	var warned []Stuck
	start := time.Now()
	st, ok := w.Monitor(done, func() time.Duration { return 600 * time.Millisecond }, nil, func(st Stuck) { warned = append(warned, st) })
	if !ok || st.Step != 7 || st.What != what || st.After != 600*time.Millisecond || st.Interrupted {
		t.Fatalf("gave up on %+v (%v)", st, ok)
	}
	if took := time.Since(start); took < 600*time.Millisecond {
		t.Fatalf("gave up after %v, before the bound", took)
	}
	if len(warned) != 0 {
		t.Fatalf("warned of a call that ran less than WarnAfter: %+v", warned)
	}
	if s.Leave() || !s.Abandoned() || s.Begin(8, &what) {
		t.Fatal("a call given up on returned as if it had not been")
	}
}

// Calls that return keep the watch quiet, however many there are, and a
// stop gives up only on a call that has run StopAfter.
func TestReturningCallsAreNotGivenUpOn(t *testing.T) {
	w := NewWatch()
	s := w.Slot()
	what := "a call"
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-stopped:
				return
			default:
			}
			if !s.Begin(i, &what) {
				t.Error("a returning call was given up on")
				return
			}
			time.Sleep(time.Millisecond)
			if !s.Leave() {
				t.Error("a returning call was given up on")
				return
			}
			if i == 500 {
				close(done)
				return
			}
		}
	}()
	if st, ok := w.Monitor(done, func() time.Duration { return 2 * time.Second }, func() bool { return true }, nil); ok {
		t.Fatalf("gave up on %+v", st)
	}
	<-stopped
	w.Drop(s)
	if len(w.slots) != 0 {
		t.Fatal("a dropped slot is still watched")
	}
}

// A nil watch hands out no slot, and dropping it is harmless: replays
// without a watch pay nothing.
func TestANilWatchWatchesNothing(t *testing.T) {
	var w *Watch
	if s := w.Slot(); s != nil {
		t.Fatal("a nil watch handed out a slot")
	}
	w.Drop(nil)
}

// A slot with its own bound is given up on past that bound, whatever the
// watch's (none here), says so, and is not warned of as a handler is.
func TestABoundedSlotIsGivenUpOnPastItsOwnBound(t *testing.T) {
	w := NewWatch()
	handler := w.Slot()
	script := w.BoundedSlot(700 * time.Millisecond)
	hw, sw := "a handler", "an evaluation"
	if !handler.Begin(3, &hw) || !script.Begin(4, &sw) {
		t.Fatal("a fresh slot refused a call")
	}
	done := make(chan struct{})
	defer close(done)
	st, ok := w.Monitor(done, func() time.Duration { return 0 }, nil, func(st Stuck) { t.Errorf("warned of %+v", st) })
	if !ok || st.Step != 4 || st.What != sw || st.After != 700*time.Millisecond || !st.Own || st.Interrupted {
		t.Fatalf("gave up on %+v (%v)", st, ok)
	}
	if !script.Abandoned() || handler.Abandoned() {
		t.Fatal("gave up on the wrong call")
	}
	// GiveUp (a stop) takes its own bound for every slot.
	if st, ok := w.GiveUp(time.Now().Add(time.Hour), time.Second); !ok || st.Own || st.Step != 3 {
		t.Fatalf("GiveUp: %+v (%v)", st, ok)
	}
}
