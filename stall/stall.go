// Package stall watches calls into system code (a node's handler) from
// another goroutine, so that the caller can say that a call has not
// returned and give up on it. Go cannot end a goroutine from outside:
// what a simulator or a replay can do is not hang with it.
//
// A Call is one goroutine's calls, bracketed by Enter and Leave. Its
// state is one word, the number of calls so far above two bits of
// phase, so that a watcher gives up on exactly the call it saw stuck,
// never on the next one that began meanwhile. A Tracker times one Call
// across a watcher's ticks; a Watch times many (the replays of one
// command: check --jobs runs several at once).
package stall

import (
	"sync"
	"sync/atomic"
	"time"
)

// DefaultBound is how long one handler call may run, in wall-clock time,
// before it is given up on.
const DefaultBound = time.Minute

// WarnAfter is how long a call runs before the watcher says so.
const WarnAfter = 10 * time.Second

// Tick is how often a watcher looks.
const Tick = 250 * time.Millisecond

// StopAfter is how long a call must have run for a stop (Ctrl-C) to give
// up on it rather than wait for it: a call that is merely slow returns
// and the caller stops at its own next check.
const StopAfter = time.Second

const (
	phaseOut       uint64 = iota // running the caller's own code
	phaseIn                      // inside a call
	phaseAbandoned               // given up on: the caller must not touch its work again
	phaseMask      uint64 = 3
)

// Call is the state of one goroutine's calls into system code.
type Call struct{ word atomic.Uint64 }

// Enter notes that a call begins; false means it was given up on, and
// the caller must return at once.
func (c *Call) Enter() bool {
	old := c.word.Load()
	return old&phaseMask == phaseOut && c.word.CompareAndSwap(old, (old&^phaseMask)+4|phaseIn)
}

// Leave notes that the call returned; false means it was given up on
// meanwhile, and the caller must return at once.
func (c *Call) Leave() bool {
	old := c.word.Load()
	return old&phaseMask == phaseIn && c.word.CompareAndSwap(old, old&^phaseMask|phaseOut)
}

// Seen is the call's state as a watcher reads it.
func (c *Call) Seen() uint64 { return c.word.Load() }

// Abandon gives up on the call if it is still the one seen, in it.
func (c *Call) Abandon(seen uint64) bool {
	return seen&phaseMask == phaseIn && c.word.CompareAndSwap(seen, seen&^phaseMask|phaseAbandoned)
}

// Abandoned reports whether the calls were given up on.
func (c *Call) Abandoned() bool { return c.word.Load()&phaseMask == phaseAbandoned }

// Tracker times one Call across a watcher's ticks.
type Tracker struct {
	last   uint64
	since  time.Time
	warned bool
}

// Observe takes the state seen at now and returns how long the same call
// has run (0 when none runs), and whether this is the first time it has
// run past WarnAfter.
func (t *Tracker) Observe(seen uint64, now time.Time) (running time.Duration, warn bool) {
	if seen&phaseMask != phaseIn || seen != t.last || t.since.IsZero() {
		t.last, t.since, t.warned = seen, now, false
		return 0, false
	}
	running = now.Sub(t.since)
	if running >= WarnAfter && !t.warned {
		t.warned = true
		return running, true
	}
	return running, false
}

// Slot is a Call whose watcher may need to say what it runs: which
// step, and a description its owner gives.
type Slot struct {
	Call
	step atomic.Int64
	what atomic.Pointer[string]
	// own, if set, is the slot's bound instead of the watch's: its calls
	// are not a handler's (a predicate's evaluation, which has a budget
	// of its own), and are not warned of.
	own time.Duration
}

// Begin notes which step's call begins (what describes it; the pointer
// is kept, so it must not change) and enters it.
func (s *Slot) Begin(step int, what *string) bool {
	s.step.Store(int64(step))
	s.what.Store(what)
	return s.Enter()
}

// Stuck is a call a Watch gave up on.
type Stuck struct {
	Step        int
	What        string // as its owner described it
	After       time.Duration
	Interrupted bool // given up on at a stop, not past the bound
	// Own: the call is in a slot with a bound of its own (BoundedSlot),
	// not a handler's; given up on, it was past that bound.
	Own bool
}

// Watch watches the slots of one command's replays.
type Watch struct {
	mu    sync.Mutex
	slots map[*Slot]*Tracker
}

// NewWatch returns a watch with no slots.
func NewWatch() *Watch { return &Watch{slots: map[*Slot]*Tracker{}} }

// Slot adds a slot to the watch (nil on a nil watch: not watched).
func (w *Watch) Slot() *Slot { return w.BoundedSlot(0) }

// BoundedSlot adds a slot whose calls are given up on past bound, not
// past the watch's bound (bound 0: the watch's), and are not warned of:
// calls whose owner bounds them itself, where only one that outruns its
// owner's bound by far is stuck.
func (w *Watch) BoundedSlot(bound time.Duration) *Slot {
	if w == nil {
		return nil
	}
	s := &Slot{own: bound}
	w.mu.Lock()
	w.slots[s] = new(Tracker)
	w.mu.Unlock()
	return s
}

// Drop removes a slot whose owner is done.
func (w *Watch) Drop(s *Slot) {
	if w == nil || s == nil {
		return
	}
	w.mu.Lock()
	delete(w.slots, s)
	w.mu.Unlock()
}

// Monitor looks at the slots every Tick until done is closed (false), or
// it gives up on a call (true): one past bound (none when bound <= 0;
// asked at every look: a command learns it once its flags are parsed),
// or one that has run StopAfter when stop says so. slow is told, once
// per call, of one that has run WarnAfter.
func (w *Watch) Monitor(done <-chan struct{}, bound func() time.Duration, stop func() bool, slow func(Stuck)) (Stuck, bool) {
	tick := time.NewTicker(Tick)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return Stuck{}, false
		case now := <-tick.C:
			if st, ok := w.look(now, bound(), true, stop, slow); ok {
				return st, true
			}
		}
	}
}

// Run runs work on a goroutine of its own and watches its calls as
// Monitor does, returning when work returns (gaveUp false; goexit true
// when work ended with runtime.Goexit) or when it gives up on one of
// work's calls (gaveUp true), leaving work's goroutine behind: a caller
// whose goroutine ran the stuck call itself could not return.
func (w *Watch) Run(work func(), bound func() time.Duration, stop func() bool, slow func(Stuck)) (st Stuck, gaveUp, goexit bool) {
	done := make(chan bool, 1) // whether work returned
	go func() {
		returned := false
		defer func() {
			if !returned { // runtime.Goexit (a panic goes on to end the process)
				done <- false
			}
		}()
		work()
		returned = true
		done <- true
	}()
	stopWatch := make(chan struct{})
	type result struct {
		st Stuck
		ok bool
	}
	watched := make(chan result, 1)
	go func() {
		st, ok := w.Monitor(stopWatch, bound, stop, slow)
		watched <- result{st, ok}
	}()
	select {
	case returned := <-done:
		close(stopWatch)
		// Given up on just as it returned: the work ended with its
		// calls abandoned, which says less.
		if r := <-watched; r.ok {
			return r.st, true, false
		}
		return Stuck{}, false, !returned
	case r := <-watched:
		return r.st, true, false
	}
}

// Running is the call that has run longest, as far as the looks so far
// timed it (this one, Monitor's, GiveUp's: a caller that does not run
// Monitor calls it now and then), if one runs.
func (w *Watch) Running(now time.Time) (Stuck, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var longest Stuck
	found := false
	for s, t := range w.slots {
		seen := s.Seen()
		running, _ := t.Observe(seen, now)
		if seen&phaseMask != phaseIn || found && running <= longest.After {
			continue
		}
		st := Stuck{Step: int(s.step.Load()), What: *s.what.Load(), After: running, Own: s.own > 0}
		if s.Seen() != seen {
			continue
		}
		longest, found = st, true
	}
	longest.After = longest.After.Round(time.Second)
	return longest, found
}

// GiveUp gives up on a call that has run at least after (as the looks so
// far timed it: call it now and then), for a caller that does not run
// Monitor and is about to stop waiting for the calls.
func (w *Watch) GiveUp(now time.Time, after time.Duration) (Stuck, bool) {
	return w.look(now, after, false, nil, nil)
}

// look is one tick of Monitor (own: slots' own bounds count) or GiveUp.
func (w *Watch) look(now time.Time, bound time.Duration, own bool, stop func() bool, slow func(Stuck)) (Stuck, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	stopping := false
	if stop != nil {
		stopping = stop()
	}
	for s, t := range w.slots {
		seen := s.Seen()
		running, warn := t.Observe(seen, now)
		if running == 0 {
			continue
		}
		st := Stuck{Step: int(s.step.Load()), What: *s.what.Load(), After: running.Round(time.Second), Own: s.own > 0}
		if s.Seen() != seen {
			continue // it returned while read: step and what may be the next call's
		}
		limit := bound
		if own && s.own > 0 {
			limit, warn = s.own, false
		}
		if warn && slow != nil {
			slow(st)
		}
		over := limit > 0 && running >= limit
		if !(over || stopping && running >= StopAfter) || !s.Abandon(seen) {
			continue
		}
		// The swap succeeded, so the call seen is the one stuck, and
		// step and what (stored before it was entered) name it.
		if over {
			st.After = limit
		} else {
			st.Interrupted = true
		}
		return st, true
	}
	return Stuck{}, false
}
