package tui

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/replaycheck/replaycheck/replay"
)

// A background task (indexing, a check, a search) that cannot read a
// spilled trace back ends the session with that error, as the UI
// goroutine's own reads do: it panicked on its goroutine, taking the
// process down with a stack and the terminal left raw.
func TestATaskThatCannotReadTheTraceEndsTheSession(t *testing.T) {
	m := paxosModel(t, 3, func(int) int { return 0 })
	u := startUI(t, m)
	rb := &replay.ReadBackError{Step: 7, Err: os.ErrClosed}
	go u.view.run(m, &Task{Name: "check", Background: func(func(done, total int)) { panic(rb) }})
	select {
	case err := <-u.done:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("the session ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session goes on")
	}
}

// A task that fails before the event loop has its screen (tasks start
// before it runs) still ends the session: Stop did nothing then, and the
// debugger went on with every task's report dropped.
func TestATaskFailingBeforeTheScreenEndsTheSession(t *testing.T) {
	m := paxosModel(t, 3, func(int) int { return 0 })
	v := NewView(m, nil)
	v.fail(&replay.ReadBackError{Step: 7, Err: os.ErrClosed})
	s := tcell.NewSimulationScreen("UTF-8")
	v.app.SetScreen(s)
	done := make(chan error, 1)
	go func() { done <- v.Run() }()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("the session ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		v.app.Stop()
		t.Fatal("the session goes on")
	}
}
