package statedb

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/stall"
)

// Building is a database being built while it is read: the debugger opens
// a trace at once and browses the steps indexed so far. Its DB serves
// every read of a complete database, with Len the steps indexed so far;
// Run builds the rest, Finish swaps the complete database into place.
type Building struct {
	// DB reads what is built so far. Its Len grows while Run runs (see
	// DB.Indexing); it stays readable after Run fails, up to the step
	// where it failed, until Finish or Close.
	DB *DB

	b      *builder
	pc     *predCollector
	dir    string
	opts   Options
	start  time.Time
	unlock func()
	stop   atomic.Bool
	ran    chan struct{} // closed when Run returns
	phase  atomic.Value  // string: "indexing", then "compacting"

	mu     sync.Mutex
	runErr error
	state  int // 0 prepared, 1 running, 2 ran, 3 finished or abandoned
}

// ErrBusy is returned by StartBuild when another process is building the
// database: the caller waits for it (Ensure does) instead.
var ErrBusy = errors.New("another process is building the trace database")

// NeedsBuild tells whether Ensure would build the database of traces at
// dir (PathFor(traces) when ""): it is missing, incomplete, damaged or
// stale.
func NeedsBuild(traces []string, dir string) (bool, error) {
	dir, fp, err := target(traces, dir)
	if err != nil {
		return false, err
	}
	db, _, err := openCurrent(dir, fp)
	if err != nil || db == nil {
		return db == nil, err
	}
	return false, db.Close()
}

// StartBuild prepares the build of the database of traces at dir
// (PathFor(traces) when "") as Ensure would build it, taking the build
// lock, and returns it before any step is indexed: call Run (in a
// goroutine of its own, while readers use DB), then Finish, and Close in
// every case. It returns ErrBusy when another process holds the build
// lock. opts.Progress and opts.Stop are not used: Run takes the progress,
// Close stops.
func StartBuild(traces []string, dir string, opts Options) (*Building, error) {
	dir, fp, err := target(traces, dir)
	if err != nil {
		return nil, err
	}
	unlock, _, err := lockBuild(dir, nil, func() bool { return true })
	if errors.Is(err, ErrStopped) {
		return nil, ErrBusy
	}
	if err != nil {
		return nil, err
	}
	tr := opts.Trace
	if tr == nil {
		if tr, err = replay.Load(traces...); err != nil {
			unlock()
			return nil, err
		}
	}
	if opts.Watch == nil {
		// Close must not wait for good for a handler that does not
		// return when replayed, and Running says which one it is.
		opts.Watch = stall.NewWatch()
	}
	bg, err := prepare(dir, tr, fp, opts)
	if err != nil {
		unlock()
		return nil, err
	}
	bg.unlock = unlock
	// The trace computes some answers lazily on first use: done now, so
	// that the build and its readers never race to.
	if len(tr.Nodes) > 0 {
		tr.NodeSteps(tr.Nodes[0])
	}
	for i := range tr.Len() {
		if ev := tr.Event(i); len(ev.Sends) > 0 {
			tr.Fate(ev, 0)
			break
		}
	}
	return bg, nil
}

// Phase is what Run is doing: "indexing" (steps become readable as it
// goes), then "compacting" (every step is readable; the store is sorted
// for the readers of the complete database).
func (bg *Building) Phase() string {
	p, _ := bg.phase.Load().(string)
	return cmp.Or(p, "indexing")
}

// Trace is the trace being indexed.
func (bg *Building) Trace() *replay.Trace { return bg.b.tr }

// FoundSoFar lists the findings of the predicates checked with the index
// (Options.Preds) up to the step indexing reached: safety violations and
// liveness alarms raised so far, in the order found. The full results,
// with liveness intervals judged at the end, come when the build ends.
func (bg *Building) FoundSoFar() []Violation {
	if bg.pc == nil {
		return nil
	}
	return bg.pc.found()
}

// Run replays the trace and writes the database, calling progress (if
// not nil) with the steps done so far. It returns the build's error (a
// *replay.Divergence, ErrStopped after Close, ...). It runs once.
func (bg *Building) Run(progress func(done, total int)) error {
	bg.mu.Lock()
	if bg.state != 0 {
		bg.mu.Unlock()
		return errors.New("statedb: Building.Run called twice")
	}
	bg.state = 1
	bg.mu.Unlock()
	err := bg.run(progress)
	bg.mu.Lock()
	bg.state, bg.runErr = 2, err
	bg.mu.Unlock()
	close(bg.ran)
	return err
}

func (bg *Building) run(progress func(done, total int)) error {
	stop := func() bool { return bg.stop.Load() || (bg.opts.Stop != nil && bg.opts.Stop()) }
	prog := func(phase string, done, total int) {
		bg.phase.Store(phase)
		if progress != nil {
			progress(done, total)
		}
		if bg.opts.Progress != nil {
			bg.opts.Progress(phase, done, total)
		}
	}
	b, db := bg.b, bg.DB
	if err := b.run(bg.pc, prog, stop); err != nil {
		return err
	}
	// The last part is compacted and closed as the others were when
	// their successor started (parts.finish).
	prog("compacting", db.meta.Steps, db.meta.Steps)
	if err := db.parts.finish(db.parts.list[len(db.parts.list)-1]); err != nil {
		return err
	}
	meta := db.meta
	meta.Fields = b.fields
	meta.Parts = db.parts.firsts()
	if bg.pc != nil {
		p, flips := bg.pc.results(bg.opts.Preds, time.Since(bg.start))
		p.Lossy = b.tr.Lossy(b.tr.Nodes)
		if err := db.SetPredicates(p, flips); err != nil {
			return err
		}
	}
	// Written last: a database without it is never opened.
	meta.Complete = true
	meta.IndexSeconds = time.Since(bg.start).Seconds()
	return db.putMeta(meta)
}

// Finish swaps the complete database into place and opens it for
// reading. Call it once Run has returned nil, when nothing reads DB any
// more: DB is closed.
func (bg *Building) Finish() (*DB, error) {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	if bg.state != 2 || bg.runErr != nil {
		return nil, errors.New("statedb: Building.Finish before a successful Run")
	}
	bg.state = 3
	return bg.finishLocked()
}

// finish is Finish for build, which runs Run itself.
func (bg *Building) finish() (*DB, error) {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	bg.state = 3
	return bg.finishLocked()
}

func (bg *Building) finishLocked() (*DB, error) {
	defer bg.release()
	tmp := bg.DB.dir
	if err := bg.DB.Close(); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := swapIn(tmp, bg.dir); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return Open(bg.dir)
}

// Running is the handler call the build's replay has been in longest,
// as far as calls to it timed it (call it now and then; ok false: the
// replay is between calls). A call that runs for long (stall.WarnAfter)
// does not return when replayed, though the recorded one did.
func (bg *Building) Running() (stall.Stuck, bool) { return bg.opts.Watch.Running(time.Now()) }

// Close stops a build that is still running, waits for it, and removes
// what it wrote unless Finish swapped it in. It is safe to call at any
// time, more than once. A build stuck in a handler call (one that does
// not return when replayed) is not waited for past stall.StopAfter: its
// goroutine is left behind, and what it wrote is removed.
func (bg *Building) Close() {
	bg.stop.Store(true)
	bg.mu.Lock()
	running := bg.state == 1
	bg.mu.Unlock()
	if running {
		tick := time.NewTicker(stall.Tick / 2)
	wait:
		for {
			select {
			case <-bg.ran:
				break wait
			case now := <-tick.C:
				if _, ok := bg.opts.Watch.GiveUp(now, stall.StopAfter); ok {
					break wait
				}
			}
		}
		tick.Stop()
	}
	bg.abandon()
}

func (bg *Building) abandon() {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	if bg.state == 3 {
		return
	}
	bg.state = 3
	closeWithin(bg.DB, abandonClose)
	os.RemoveAll(bg.DB.dir)
	bg.release()
}

// abandonClose bounds how long an abandoned build waits for its stores to
// close.
const abandonClose = 5 * time.Second

// closeWithin closes db, giving up after d: a store whose memtable flush
// keeps failing (its folder removed, no file descriptors left) never
// finishes closing, since Badger retries the flush for good, and a build
// waiting for it held its lock, and every other build of the trace, with
// it. What is left behind is a goroutine retrying every second; the
// folder is removed anyway.
func closeWithin(db *DB, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- db.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("closing %s did not finish within %v", db.dir, d)
	}
}

func (bg *Building) release() {
	if bg.unlock != nil {
		bg.unlock()
		bg.unlock = nil
	}
}
