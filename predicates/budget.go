package predicates

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/dustin/go-humanize"
	"go.starlark.net/starlark"

	"github.com/replaycheck/replaycheck/stall"
)

// Budgets of one script load and of one evaluation (a predicate, derived
// value, aux or alarm function, or a watch), besides MaxSteps.
const (
	// DefaultMemoryBudget is how much one load or evaluation may grow
	// the heap.
	DefaultMemoryBudget = 256 << 20
	// DefaultTimeBudget is how long one load or evaluation may run.
	DefaultTimeBudget = 10 * time.Second
)

const (
	// pollSteps: the interpreter hands control back every so many
	// Starlark steps to check the clock and the heap.
	pollSteps = 1024
	// pollElems: a budgeted iterator checks every so many elements.
	pollElems = 4096
	// smallAlloc: allocations below it are only summed up, and the heap
	// is looked at once they add up to pollBytes.
	smallAlloc = 64 << 10
	pollBytes  = 4 << 20
	// maxIntBits bounds the integers a product may make, and those that
	// can be printed: math/big's conversions are superlinear.
	maxIntBits = 1 << 20
	// maxIntChars bounds the strings int() parses.
	maxIntChars = 1 << 18
	// maxDepth bounds how deeply nested a value may be to be printed or
	// kept (Starlark's printer is quadratic in the depth).
	maxDepth = 64
	// maxCallDepth bounds recursion: Starlark's own limit (100,000 calls)
	// lets the Go stack grow to about 400 MB.
	maxCallDepth = 10_000
)

// budget enforces the step, memory and time budgets of the evaluation
// running on a thread. Starlark has no allocation hook, so memory is
// bounded in three ways: the built-ins and operators that can allocate
// without bound in one call are replaced by ones that estimate the
// allocation first (sandbox.go); large ranges and string views iterate
// through budgeted iterators; and every pollSteps steps the interpreter
// calls back (through OnMaxSteps) to compare the heap's growth since the
// evaluation began with the budget. The heap is the process's: an
// evaluation that finds it over budget collects garbage and looks again
// before failing.
type budget struct {
	thread   *starlark.Thread
	maxSteps uint64
	memory   uint64
	time     time.Duration

	what      string // "load" or "evaluation", for messages
	stepLimit uint64
	start     time.Time
	deadline  time.Time
	base      uint64 // heap at the start, lowered by a collection
	baseRead  bool   // base is read at the first look, not per evaluation
	pending   uint64 // small allocations since the heap was last read
	sample    []metrics.Sample
	err       error // a budget exceeded inside a built-in
	// process: the evaluation exceeded its memory or time budget, which
	// measure the process (its heap, the wall clock): other work running
	// beside it counts too.
	process bool
	// slot shows the evaluation running to Options.Watch (nil: none),
	// which gives up on one that outruns StuckBound: the budgets above
	// are looked at between Starlark steps, and one step (a built-in)
	// can run for as long as it likes. depth counts evaluations begun
	// and not ended: one nested in another is part of its call.
	slot  *stall.Slot
	depth int
}

// StuckBound is how long one load or evaluation under timeBudget may run
// before a watch (Options.Watch) gives up on the check: the budget's own
// check fails an evaluation between two Starlark steps, so only one step
// that runs on far past the budget (one built-in call: set() over
// integers alike in their low 32 bits, a hash of a value that shares
// itself 60 levels deep) gets this far. Twice the budget, and at least
// 10 s past it: a busy machine must not make a slow evaluation look
// stuck.
func StuckBound(timeBudget time.Duration) time.Duration {
	more := max(timeBudget, 10*time.Second)
	if timeBudget > math.MaxInt64-more {
		// Saturated: a bound that overflowed to a negative one was taken
		// for none, and the watch's (--handler-bound) gave up on a slow
		// evaluation as a stuck handler.
		return math.MaxInt64
	}
	return timeBudget + more
}

// errGivenUp: a watch gave up on an evaluation of this checker, whose
// owner has stopped waiting for it; nothing evaluates after it.
var errGivenUp = errors.New("the check was given up on: an evaluation did not return within its bound (predicates.StuckBound)")

func newBudget(t *starlark.Thread, opts Options) *budget {
	b := &budget{thread: t, maxSteps: opts.MaxSteps, memory: uint64(opts.MemoryBudget), time: opts.TimeBudget,
		sample: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
	t.OnMaxSteps = b.onMaxSteps
	return b
}

// defaultDesc names an evaluation its caller did not describe.
var defaultDesc = "an evaluation of the predicates script"

// begin starts a load or an evaluation with fresh budgets; step and
// desc (kept: it must not change) say what it is to a watch. Every begin
// has its end.
func (b *budget) begin(what string, step int, desc *string) {
	b.thread.Uncancel()
	b.what, b.err, b.pending, b.process = what, nil, 0, false
	if b.depth++; b.depth == 1 && b.slot != nil {
		if desc == nil {
			desc = &defaultDesc
		}
		if !b.slot.Begin(step, desc) {
			b.fail(errGivenUp)
		}
	}
	b.stepLimit = satAdd(b.thread.Steps, b.maxSteps)
	b.start = time.Now()
	b.deadline = b.start.Add(b.time)
	// Most evaluations never look at the heap; reading it costs more than
	// a short evaluation. It is read at the first look instead: what was
	// allocated before that is at most pollSteps steps' worth of small
	// allocations, as every large one looks first.
	b.baseRead = false
	b.arm()
}

// end ends what begin began, reporting false when a watch gave up on it
// meanwhile (it returned after all, too late: its owner has gone on).
func (b *budget) end() bool {
	if b.depth--; b.depth > 0 || b.slot == nil || b.slot.Leave() {
		return true
	}
	b.fail(errGivenUp)
	return false
}

func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

func (b *budget) arm() {
	b.thread.SetMaxExecutionSteps(min(b.stepLimit, satAdd(b.thread.Steps, pollSteps)))
}

func (b *budget) onMaxSteps(t *starlark.Thread) {
	if t.Steps >= b.stepLimit {
		t.Cancel("too many steps")
		return
	}
	if d := t.CallStackDepth(); d > maxCallDepth {
		b.fail(fmt.Errorf("calls nested %d deep (at most %d)", d, maxCallDepth))
		return
	}
	if err := b.check(0); err != nil {
		b.fail(err)
		return
	}
	b.arm()
}

// fail records a budget exceeded where no error can be returned (an
// iterator) and cancels the thread, so the evaluation fails at its next
// step.
func (b *budget) fail(err error) {
	if b.err == nil {
		b.err = err
	}
	b.thread.Cancel(err.Error())
}

func (b *budget) heap() uint64 {
	metrics.Read(b.sample)
	return b.sample[0].Value.Uint64()
}

// used is the heap's growth since the evaluation began (since it was
// first looked at).
func (b *budget) used() uint64 {
	h := b.heap()
	if !b.baseRead || h < b.base {
		b.base, b.baseRead = h, true
	}
	return h - b.base
}

// check fails if the time is up or if n more bytes would take the heap's
// growth past the memory budget.
func (b *budget) check(n uint64) error {
	if now := time.Now(); now.After(b.deadline) {
		b.process = true
		return fmt.Errorf("time budget exceeded: the %s ran for %v; the budget is %v (--script-time)",
			b.what, now.Sub(b.start).Round(time.Millisecond), b.time)
	}
	if n > b.memory {
		return b.memoryError(n, 0)
	}
	used := b.used()
	if used+n > b.memory {
		// Garbage counts until it is collected: look again after a
		// collection before failing.
		runtime.GC()
		if used = b.used(); used+n > b.memory {
			b.process = true
			return b.memoryError(n, used)
		}
	}
	return nil
}

func (b *budget) memoryError(n, used uint64) error {
	what := fmt.Sprintf("the %s grew the heap by %s", b.what, humanize.IBytes(used))
	if n > 0 {
		what = fmt.Sprintf("%s more would be needed", humanize.IBytes(n))
		if used > 0 {
			what = fmt.Sprintf("%s more would be needed after %s", humanize.IBytes(n), humanize.IBytes(used))
		}
	}
	return fmt.Errorf("memory budget exceeded: %s; the budget is %s per %s (--script-memory)", what, humanize.IBytes(b.memory), b.what)
}

// reserve is called before a built-in allocates about n bytes at once.
// Small allocations only add up until they are worth a look at the heap.
func (b *budget) reserve(n uint64) error {
	if n < smallAlloc {
		if b.pending += n; b.pending < pollBytes {
			return nil
		}
		b.pending, n = 0, 0
	}
	return b.check(n)
}
