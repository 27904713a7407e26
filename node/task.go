package node

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"time"
)

// Tasks are cooperative threads inside a node. A handler (or a task)
// starts one with Go; it runs ordinary sequential Go code and blocks only
// through the runtime: Recv, Call, Sleep, Yield, Mutex, RWMutex, Cond and
// Semaphore. Exactly one task of a node runs at a time, and only inside
// an event of kind task (a resume): the driver decides which runnable task
// resumes, records it, and replay resumes the same task at the same point.
// A task runs until it blocks or returns; it then hands control back to
// the runtime, which ends the resume event. Under the hood a task is a
// goroutine, but no two of a node's goroutines ever run at once.
//
// What makes a task runnable (its start, a matching message, a timer, an
// unlock, a signal) happens in some event of its node; that event lists
// the task in Woken and the driver schedules the resume.

// TaskID identifies a task within one incarnation of a node. IDs start at
// 1 and restart at 1 after a crash, which ends every task.
type TaskID uint64

// DefaultTaskBound is how long (wall time) a resumed task may run before
// it must block through the runtime or return. A task that exceeds it is
// most likely blocked on a real channel or mutex, or spinning; the driver
// stops with a *TaskStuckError instead of hanging.
const DefaultTaskBound = 10 * time.Second

// TaskInfo is a live task as drivers, predicates and the debugger see it.
type TaskInfo struct {
	ID    TaskID
	Name  string
	State string // "runnable" or "blocked"
	// On is what a blocked task waits for ("lock L", "recv", "sleep 5ms",
	// ...); for a runnable task, what woke it.
	On string
	// Since is when it blocked or became runnable (Unix ns), SinceSeq the
	// seq of the node's event in which it did.
	Since    int64
	SinceSeq uint64
}

// TaskStuckError reports a task that neither blocked through the runtime
// nor returned within the bound.
type TaskStuckError struct {
	Node  ID
	Task  TaskID
	Name  string
	Bound time.Duration
}

func (e *TaskStuckError) Error() string {
	return fmt.Sprintf("node %s: task %d %q neither blocked through the runtime nor returned within %v "+
		"(is it blocked on a real channel, sync.Mutex or I/O, or looping without blocking? tasks may block only through node.Task, node.Mutex, node.RWMutex, node.Cond and node.Semaphore)",
		e.Node, e.Task, e.Name, e.Bound)
}

type taskState uint8

const (
	taskRunnable taskState = iota + 1
	taskRunning
	taskBlocked
)

// errTaskKilled unwinds a task's goroutine when its node crashes.
var errTaskKilled = errors.New("node: task killed (its node crashed)")

// Task is one running task, given to its function. It is an Env (the Env
// of the resume event it runs in), so a task sends, sets timers, reads
// the clock and logs as a handler does. Only the task itself may use it,
// and only while it runs.
type Task struct {
	id   TaskID
	name string
	ts   *tasks
	fn   func(*Task)

	resume  chan bool // true: the node crashed, unwind
	started bool
	gid     uint64 // for crypto/rand routing

	state    taskState
	on       string
	since    int64
	sinceSeq uint64
	wake     string // what made it runnable
	wakeSeq  uint64

	// A Recv or Call in progress: the filter, the timeout timer (0:
	// none), and what came.
	match    func(from ID, m Message) bool
	timer    TimerID
	timedOut bool
	from     ID
	msg      Message
}

type taskYield struct {
	done  bool // returned (or unwound after a kill)
	value any  // a panic's value
	stack string
}

// tasks is a node's task table. It moves with the handler when an
// instance is taken over by another (a fork), hence the in pointer.
type tasks struct {
	in      *Instance
	next    TaskID
	live    []*Task // by ID
	timers  map[TimerID]*Task
	yield   chan taskYield
	running *Task
	killing bool
	bound   time.Duration
	clock   *time.Timer
}

func (in *Instance) taskTable() *tasks {
	if in.tasks == nil {
		in.tasks = &tasks{in: in, timers: map[TimerID]*Task{}, yield: make(chan taskYield), bound: in.taskBound}
	}
	return in.tasks
}

// instanceOf finds the runtime behind an Env, for an operation named op.
func instanceOf(env Env, op string) *Instance {
	switch e := env.(type) {
	case *Instance:
		if e.cur == nil {
			panic(fmt.Sprintf("node.%s called outside a handler or task: the Env's event is over (an Env must not be kept)", op))
		}
		return e
	case *Task:
		e.mustRun(op)
		return e.ts.in
	case nil:
		panic(fmt.Sprintf("node.%s called outside a handler or task (nil Env)", op))
	}
	panic(fmt.Sprintf("node.%s needs the runtime's Env (a handler's or a task's), not a %T", op, env))
}

// Go starts a task named name running fn, from a handler or a task (env
// is its Env). The task becomes runnable; it first runs in a later event
// of this node, once the current one is over. Starting a task anywhere
// else panics.
func Go(env Env, name string, fn func(t *Task)) TaskID {
	in := instanceOf(env, fmt.Sprintf("Go(%q)", name))
	if fn == nil {
		panic(fmt.Sprintf("node.Go(%q): nil function", name))
	}
	ts := in.taskTable()
	ts.next++
	t := &Task{id: ts.next, name: name, ts: ts, fn: fn}
	ts.live = append(ts.live, t)
	ts.wake(t, "start")
	return t.id
}

// wake makes a blocked (or new) task runnable, in the current event.
func (ts *tasks) wake(t *Task, why string) {
	ev := ts.in.cur
	t.state, t.wake, t.on = taskRunnable, why, why
	t.wakeSeq, t.sinceSeq, t.since = ev.Seq, ev.Seq, ev.Time
	ev.Woken = append(ev.Woken, t.id)
}

func (ts *tasks) find(id TaskID) *Task {
	i, ok := slices.BinarySearchFunc(ts.live, id, func(t *Task, id TaskID) int {
		if t.id < id {
			return -1
		} else if t.id > id {
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return ts.live[i]
}

// deliver hands a received message to the first waiting task (by ID) whose
// filter accepts it, and reports whether one did.
func (ts *tasks) deliver(from ID, ev *Event, m Message) bool {
	for _, t := range ts.live {
		if t.state != taskBlocked || t.match == nil || !t.match(from, m) {
			continue
		}
		t.match, t.from, t.msg = nil, from, m
		if t.timer != 0 {
			ts.in.Cancel(t.timer)
			delete(ts.timers, t.timer)
			t.timer = 0
		}
		ts.wake(t, fmt.Sprintf("msg %s %s", ev.Msg(), ev.MsgType))
		return true
	}
	return false
}

// fire wakes the task a runtime timer belongs to, if any.
func (ts *tasks) fire(id TimerID) bool {
	t, ok := ts.timers[id]
	if !ok {
		return false
	}
	delete(ts.timers, id)
	t.timer = 0
	why := "timer"
	if t.match != nil {
		t.match, t.timedOut, why = nil, true, "timeout"
	}
	ts.wake(t, why)
	return true
}

// resume runs task id until it blocks or returns.
func (ts *tasks) resume(id TaskID) error {
	t := ts.find(id)
	t.state, t.on = taskRunning, ""
	ts.running = t
	if !t.started {
		t.started = true
		t.resume = make(chan bool)
		go t.main()
	} else {
		t.resume <- false
	}
	y, err := ts.await(t)
	ts.running = nil
	if err != nil {
		return err
	}
	if y.done {
		ts.remove(t)
		if y.value != nil {
			var se *SourceError
			if e, ok := y.value.(error); ok && errors.As(e, &se) {
				panic(se) // Dispatch turns it into its error
			}
			return &PanicError{Node: ts.in.id, Seq: ts.in.seq, Kind: KindTask,
				Value: fmt.Sprintf("task %d %q: %v", t.id, t.name, y.value), Stack: y.stack}
		}
	}
	return nil
}

// await waits for the running task to hand control back, within the bound.
func (ts *tasks) await(t *Task) (taskYield, error) {
	bound := ts.bound
	if bound <= 0 {
		bound = DefaultTaskBound
	}
	if ts.clock == nil {
		ts.clock = time.NewTimer(bound)
	} else {
		ts.clock.Reset(bound)
	}
	select {
	case y := <-ts.yield:
		ts.clock.Stop()
		return y, nil
	case <-ts.clock.C:
		return taskYield{}, &TaskStuckError{Node: ts.in.id, Task: t.id, Name: t.name, Bound: bound}
	}
}

func (ts *tasks) remove(t *Task) {
	ts.live = slices.DeleteFunc(ts.live, func(x *Task) bool { return x == t })
	if t.timer != 0 {
		delete(ts.timers, t.timer)
	}
}

// kill ends every task (a crash, a restart, a dropped instance): each
// started goroutine unwinds from where it blocked. What its deferred calls
// do is not part of any event: they find no Env.
func (ts *tasks) kill() error {
	ts.killing = true
	cur := ts.in.cur
	ts.in.cur = nil
	defer func() { ts.in.cur = cur }()
	var errs []error
	for _, t := range ts.live {
		if !t.started || t.state == taskRunning {
			continue // never ran, or stuck outside the runtime: nothing to unwind
		}
		ts.running = t
		t.resume <- true
		if _, err := ts.await(t); err != nil {
			errs = append(errs, err)
		}
	}
	ts.running = nil
	ts.live = nil
	return errors.Join(errs...)
}

// main is the task's goroutine.
func (t *Task) main() {
	if intercepting.Load() {
		t.gid = goroutineID()
		dispatching.Store(t.gid, t.ts.in)
	}
	var y taskYield
	defer func() {
		if t.gid != 0 {
			dispatching.Delete(t.gid)
		}
		y.done = true
		if r := recover(); r != nil && !t.ts.killing {
			y.value, y.stack = r, string(debug.Stack())
		}
		t.ts.yield <- y
	}()
	t.fn(t)
}

// mustRun panics unless t is the task running now.
func (t *Task) mustRun(op string) {
	ts := t.ts
	if ts.killing {
		panic(errTaskKilled)
	}
	if ts.running != t || ts.in.cur == nil {
		panic(fmt.Sprintf("node: task %d %q used %s while it is not running (a Task is only for its own function, during its own resume)", t.id, t.name, op))
	}
}

// block hands control back to the runtime until a wake resumes the task.
func (t *Task) block(on string) {
	ts := t.ts
	ev := ts.in.cur
	if t.state == taskRunning { // a Yield made it runnable already
		t.state, t.on, t.since, t.sinceSeq = taskBlocked, on, ev.Time, ev.Seq
	}
	ts.yield <- taskYield{}
	if killed := <-t.resume; killed {
		panic(errTaskKilled)
	}
	if t.gid != 0 {
		dispatching.Store(t.gid, t.ts.in) // the instance may have changed (a fork)
	}
}

// ID is the task's ID.
func (t *Task) ID() TaskID { return t.id }

// Name is the task's name, as given to Go.
func (t *Task) Name() string { return t.name }

// Yield lets the node's other runnable tasks (and events) run first; the
// task is runnable again at once.
func (t *Task) Yield() {
	t.mustRun("Yield")
	t.ts.wake(t, "yield")
	t.block("yield")
}

// Sleep blocks the task for d of the node's time (virtual in the
// simulator), through a timer.
func (t *Task) Sleep(d time.Duration) {
	t.mustRun("Sleep")
	t.arm(d, "sleep")
	t.block(fmt.Sprintf("sleep %v", d))
}

func (t *Task) arm(d time.Duration, what string) {
	id := t.ts.in.After(d, fmt.Sprintf("task %d %s %s", t.id, t.name, what))
	t.timer = id
	t.ts.timers[id] = t
}

// Recv blocks until a message arrives that match accepts (nil: any), or
// until timeout passes (0 or less: no timeout), and reports whether one
// came. A message is offered to the waiting tasks (in ID order) when it
// arrives; one no task takes goes to the handler's Receive. There is no
// mailbox: a message that arrived before the task began waiting is not
// seen again.
func (t *Task) Recv(match func(from ID, m Message) bool, timeout time.Duration) (from ID, m Message, ok bool) {
	t.mustRun("Recv")
	if match == nil {
		match = func(ID, Message) bool { return true }
	}
	return t.wait(match, timeout, "recv")
}

func (t *Task) wait(match func(ID, Message) bool, timeout time.Duration, on string) (ID, Message, bool) {
	t.match, t.timedOut, t.from, t.msg = match, false, "", nil
	if timeout > 0 {
		t.arm(timeout, "timeout")
		on += fmt.Sprintf(" (timeout %v)", timeout)
	}
	t.block(on)
	if t.timedOut {
		return "", nil, false
	}
	from, m := t.from, t.msg
	t.from, t.msg = "", nil
	return from, m, true
}

// Call sends req to node to and waits for the first message from to that
// match accepts (nil: any message from to), at most timeout (0 or less:
// forever). It reports false on a timeout; a reply arriving later goes to
// Receive (or another waiting task).
func (t *Task) Call(to ID, req Message, match func(m Message) bool, timeout time.Duration) (Message, bool) {
	t.mustRun("Call")
	t.ts.in.Send(to, req)
	_, m, ok := t.wait(func(from ID, m Message) bool {
		return from == to && (match == nil || match(m))
	}, timeout, fmt.Sprintf("call %s %T", to, req))
	return m, ok
}

// Env methods: a task is the Env of the resume it runs in.

// Self implements Env.
func (t *Task) Self() ID { return t.ts.in.id }

// Peers implements Env.
func (t *Task) Peers() []ID { return t.ts.in.Peers() }

// Send implements Env.
func (t *Task) Send(to ID, m Message) { t.mustRun("Send"); t.ts.in.Send(to, m) }

// After implements Env: the timer fires the handler's Timer, as a handler's would.
func (t *Task) After(d time.Duration, name string) TimerID {
	t.mustRun("After")
	return t.ts.in.After(d, name)
}

// Cancel implements Env.
func (t *Task) Cancel(id TimerID) { t.mustRun("Cancel"); t.ts.in.Cancel(id) }

// Now implements Env.
func (t *Task) Now() time.Time { t.mustRun("Now"); return t.ts.in.Now() }

// Rand implements Env: a generator seeded for the current resume.
func (t *Task) Rand() *rand.Rand { t.mustRun("Rand"); return t.ts.in.Rand() }

// Disk implements Env.
func (t *Task) Disk() Disk { t.mustRun("Disk"); return t.ts.in.Disk() }

// Log implements Env.
func (t *Task) Log() *slog.Logger { t.mustRun("Log"); return t.ts.in.Log().With("task", t.name) }

// Instance accessors for drivers and observers.

// Tasks lists the node's live tasks by ID (none while it is down).
func (in *Instance) Tasks() []TaskInfo {
	if in.tasks == nil {
		return nil
	}
	out := make([]TaskInfo, 0, len(in.tasks.live))
	for _, t := range in.tasks.live {
		st := "blocked"
		if t.state == taskRunnable {
			st = "runnable"
		} else if t.state == taskRunning {
			st = "running"
		}
		out = append(out, TaskInfo{ID: t.id, Name: t.name, State: st, On: t.on, Since: t.since, SinceSeq: t.sinceSeq})
	}
	return out
}

// LiveTasks is the number of live tasks. A node with live tasks cannot be
// deep-copied (a goroutine's stack cannot be): drivers rebuild it by
// re-execution instead.
func (in *Instance) LiveTasks() int {
	if in.tasks == nil {
		return 0
	}
	return len(in.tasks.live)
}

// TaskRunnable reports whether task id is live and runnable.
func (in *Instance) TaskRunnable(id TaskID) bool {
	if in.tasks == nil || !in.up {
		return false
	}
	t := in.tasks.find(id)
	return t != nil && t.state == taskRunnable
}

// Runnable lists the runnable tasks by ID (for a driver taking over an
// instance: each needs a resume scheduled).
func (in *Instance) Runnable() []TaskID {
	if in.tasks == nil {
		return nil
	}
	var ids []TaskID
	for _, t := range in.tasks.live {
		if t.state == taskRunnable {
			ids = append(ids, t.id)
		}
	}
	return ids
}

// TaskResume returns the inputs of the event that resumes runnable task
// id, for a driver to dispatch.
func (in *Instance) TaskResume(id TaskID) (Event, bool) {
	if !in.TaskRunnable(id) {
		return Event{}, false
	}
	t := in.tasks.find(id)
	return Event{Kind: KindTask, Task: id, TaskName: t.name, Wake: t.wake, WakeSeq: t.wakeSeq}, true
}

// Close ends the node's tasks (their goroutines unwind) without an
// event: a driver dropping an instance calls it. The instance may still
// be read. It reports a task that would not unwind within the bound.
func (in *Instance) Close() error {
	if in.tasks == nil {
		return nil
	}
	ts := in.tasks
	in.tasks = nil
	return ts.kill()
}
