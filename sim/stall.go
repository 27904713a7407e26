package sim

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/stall"
)

// A handler that never returns (an endless loop, a blocking call on a
// real channel, sync.Mutex or I/O) cannot be stopped: Go has no way to
// end a goroutine from outside. What the simulator can do is not hang
// with it. The run's loop goes on its own goroutine, and the caller's
// watches it: it says when a handler has run for long (Config.OnStall),
// and once a stop is asked for (Config.Stop) or the handler bound passes,
// it takes the trace over and ends it before the stuck event, leaving
// the stuck goroutine behind (the process is about to end, or the run is
// given up: a search goes on to its next run).

// DefaultHandlerBound is how long one handler call may run, in wall-clock
// time, before the run ends with an error (Config.HandlerBound).
const DefaultHandlerBound = stall.DefaultBound

// errAbandoned is what the loop gets when it comes back from a handler
// the watch gave up on: it returns at once, touching nothing.
var errAbandoned = errors.New("sim: the run was taken over while a handler ran")

// StallError ends a run whose handler did not return, past the handler
// bound or, with Interrupted, when a stop was asked for (it then wraps
// ErrInterrupted). The trace holds every event before the stuck one.
type StallError struct {
	Node        node.ID
	Kind        node.Kind
	After       time.Duration
	Interrupted bool
}

func (e *StallError) Error() string {
	if e.Interrupted {
		return fmt.Sprintf("interrupted: node %s's handler had not returned from its %s event after %v; the trace ends before that event", e.Node, e.Kind, e.After)
	}
	return fmt.Sprintf("node %s's handler did not return from its %s event within %v: an endless loop, or a call that blocks outside the runtime (a Go channel, sync.Mutex, time.Sleep, file or network I/O); the trace ends before that event", e.Node, e.Kind, e.After)
}

func (e *StallError) Unwrap() error {
	if e.Interrupted {
		return ErrInterrupted
	}
	return nil
}

// enterHandler and leaveHandler bracket a handler call in the loop; false
// means the watch took the run over, and the loop must return at once.
// Which node and kind are stored before the call is entered, so that a
// watch that gives up on the call it saw reads them as that call's.
func (s *Sim) enterHandler(sn *simNode, kind node.Kind) bool {
	if s.call.Abandoned() {
		return false
	}
	s.handling.Store(sn)
	s.handlingKind.Store(int32(kind))
	return s.call.Enter()
}

func (s *Sim) leaveHandler() bool { return s.call.Leave() }

// loopResult is what the loop's goroutine hands back.
type loopResult struct {
	err      error
	panicked bool
	value    any // the panic's value
	goexit   bool
}

// runWatched runs loop on a goroutine of its own and finishes the run: as
// finish does when it returns, or, when a handler does not return, by
// ending the trace before the stuck event.
func (s *Sim) runWatched(loop func() error) (*Result, error) {
	done := make(chan loopResult, 1)
	go func() {
		returned := false
		defer func() {
			if returned {
				return
			}
			if r := recover(); r != nil {
				done <- loopResult{panicked: true, value: r}
				return
			}
			done <- loopResult{goexit: true}
		}()
		err := loop()
		returned = true
		done <- loopResult{err: err}
	}()
	bound := s.cfg.HandlerBound
	if bound == 0 {
		bound = DefaultHandlerBound
	}
	tick := time.NewTicker(stall.Tick)
	defer tick.Stop()
	var t stall.Tracker
	for {
		select {
		case r := <-done:
			switch {
			case r.panicked:
				panic(r.value) // the simulator's own failure, as before the loop moved
			case r.goexit:
				if s.call.Abandon(s.call.Seen()) {
					id, kind := s.handled()
					return s.abandon(fmt.Errorf("node %s's handler called runtime.Goexit in its %s event, which ends the goroutine that runs every handler; the trace ends before that event", id, kind))
				}
				// Outside a handler (scenario code, a StopWhen condition,
				// Observe: t.FailNow in a test): the loop is gone, the
				// run is whole up to it.
				return s.finish(errors.New("runtime.Goexit was called outside a handler (in scenario code, a StopWhen condition or an observer: t.FailNow in a test?), which ends the run's goroutine"))
			}
			return s.finish(r.err)
		case now := <-tick.C:
			seen := s.call.Seen()
			stuck, warn := t.Observe(seen, now)
			if stuck == 0 {
				continue
			}
			if warn && s.cfg.OnStall != nil {
				id, kind := s.handled()
				s.cfg.OnStall(id, kind, stuck.Round(time.Second))
			}
			stop := s.cfg.Stop != nil && s.cfg.Stop() && stuck >= stall.StopAfter
			over := bound > 0 && stuck >= bound
			if (stop || over) && s.call.Abandon(seen) {
				// The handler that stuck is the one seen (the swap
				// would have failed had another begun), so these name it.
				id, kind := s.handled()
				if over {
					return s.abandon(&StallError{Node: id, Kind: kind, After: bound})
				}
				return s.abandon(&StallError{Node: id, Kind: kind, After: stuck.Round(time.Second), Interrupted: true})
			}
		}
	}
}

// abandon ends the trace of a run whose loop is stuck in a handler, with
// every event before it: no final state hashes (the stuck node's state is
// mid-event) and no ending of tasks (the stuck goroutine may hold them).
func (s *Sim) abandon(runErr error) (*Result, error) { return s.end(runErr, nil) }

// handled is the node and kind of the event whose handler runs.
func (s *Sim) handled() (node.ID, node.Kind) {
	return s.handling.Load().id, node.Kind(s.handlingKind.Load())
}

// watchState tells the watch where the loop is (call: calls and phase),
// which node's handler runs and for which kind of event. Atomics, not
// the event: storing the event's address would move every event to the
// heap.
type watchState struct {
	call         stall.Call
	handling     atomic.Pointer[simNode]
	handlingKind atomic.Int32
}
