package sim

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/replaycheck/replaycheck/node"
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
const DefaultHandlerBound = time.Minute

// stallWarnAfter is how long a handler runs before OnStall is told.
const stallWarnAfter = 10 * time.Second

// The watch state is one word: the number of handler calls so far above
// two bits of phase, so that the watch gives up on exactly the call it
// saw stuck, never on the next one that began meanwhile.
const (
	phaseLoop      uint64 = iota // running the simulator's own code
	phaseHandler                 // inside a handler call
	phaseAbandoned               // taken over by the watch: the loop must not touch the run again
	phaseMask      uint64 = 3
)

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
func (s *Sim) enterHandler(sn *simNode, kind node.Kind) bool {
	old := s.watch.Load()
	if old&phaseMask != phaseLoop {
		return false
	}
	s.handling.Store(sn)
	s.handlingKind.Store(int32(kind))
	return s.watch.CompareAndSwap(old, (old&^phaseMask)+4|phaseHandler)
}

func (s *Sim) leaveHandler() bool {
	old := s.watch.Load()
	return old&phaseMask == phaseHandler && s.watch.CompareAndSwap(old, old&^phaseMask|phaseLoop)
}

// abandonCall gives the run up if the loop is still in the handler call
// the watch saw (state seen), taking it over.
func (s *Sim) abandonCall(seen uint64) bool {
	return seen&phaseMask == phaseHandler && s.watch.CompareAndSwap(seen, seen&^phaseMask|phaseAbandoned)
}

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
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last uint64
	var since time.Time
	warned := false
	for {
		select {
		case r := <-done:
			switch {
			case r.panicked:
				panic(r.value) // the simulator's own failure, as before the loop moved
			case r.goexit:
				seen := s.watch.Load()
				if s.abandonCall(seen) {
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
			seen := s.watch.Load()
			if seen&phaseMask != phaseHandler || seen != last {
				last, since, warned = seen, now, false
				continue
			}
			stuck := now.Sub(since)
			id, kind := s.handled()
			if stuck >= stallWarnAfter && !warned && s.cfg.OnStall != nil {
				warned = true
				s.cfg.OnStall(id, kind, stuck.Round(time.Second))
			}
			stop := s.cfg.Stop != nil && s.cfg.Stop() && stuck >= time.Second
			over := bound > 0 && stuck >= bound
			if (stop || over) && s.abandonCall(seen) {
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

// watchState tells the watch where the loop is (watch: calls and phase),
// which node's handler runs and for which kind of event. Atomics, not
// the event: storing the event's address would move every event to the
// heap.
type watchState struct {
	watch        atomic.Uint64
	handling     atomic.Pointer[simNode]
	handlingKind atomic.Int32
}
