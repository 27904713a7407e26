package node

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// taskNode is a handler whose Init runs a function that starts tasks.
type taskNode struct {
	start func(env Env, h *taskNode)
	Log   []string
	Mu    Mutex
	RW    RWMutex
	Cond  Cond
	Pool  Semaphore
	Ready bool
}

func (h *taskNode) Init(env Env) { h.start(env, h) }
func (h *taskNode) Receive(env Env, from ID, m Message) {
	h.Log = append(h.Log, "handler got "+m.(ptrMsg2).S)
}
func (h *taskNode) Timer(env Env, t Timer) { h.Log = append(h.Log, "handler timer "+t.Name) }

// miniDriver runs one node: resumes in the order tasks were woken,
// messages to self at once, timers in due order.
type miniDriver struct {
	t      *testing.T
	in     *Instance
	src    *fixedSource
	queue  []Event
	events []Event
}

func newMini(t *testing.T, bound time.Duration, start func(env Env, h *taskNode)) *miniDriver {
	store := NewMemStore()
	in := NewInstance(Config{ID: "a", Nodes: []ID{"a", "b"}, New: func() Handler { return &taskNode{start: start} },
		Codec: NewCodec().MustRegister(ptrMsg2{}), Store: store, TaskBound: bound})
	return &miniDriver{t: t, in: in, src: &fixedSource{now: 1000, store: store}}
}

func (d *miniDriver) dispatch(ev Event) error {
	ev.Time = d.src.now
	if err := d.in.Dispatch(&ev, d.src); err != nil {
		return err
	}
	d.events = append(d.events, ev)
	for _, id := range ev.Woken {
		r, ok := d.in.TaskResume(id)
		if !ok {
			d.t.Fatalf("woken task %d is not runnable", id)
		}
		d.queue = append(d.queue, r)
	}
	for i, s := range ev.Sends {
		if s.To == d.in.ID() {
			d.queue = append(d.queue, Event{Kind: KindRecv, From: d.in.ID(), MsgSeq: ev.Seq, MsgIndex: uint32(i),
				SendLamport: ev.Lamport, MsgType: s.Type, Payload: s.Payload})
		}
	}
	return nil
}

// run dispatches init and then everything queued, firing timers when
// nothing else is left; it returns the first error.
func (d *miniDriver) run() error {
	if err := d.dispatch(Event{Kind: KindInit}); err != nil {
		return err
	}
	for steps := 0; steps < 1000; steps++ {
		if len(d.queue) == 0 {
			ts := d.in.Timers()
			if len(ts) == 0 {
				return nil
			}
			first := ts[0]
			for _, t := range ts {
				if t.Due < first.Due {
					first = t
				}
			}
			d.src.now = max(d.src.now, first.Due)
			d.queue = append(d.queue, Event{Kind: KindTimer, TimerID: first.ID, TimerName: first.Name})
		}
		ev := d.queue[0]
		d.queue = d.queue[1:]
		if err := d.dispatch(ev); err != nil {
			return err
		}
	}
	return errors.New("mini driver: step limit")
}

func (d *miniDriver) log() string {
	return strings.Join(d.in.Handler().(*taskNode).Log, "\n")
}

func TestTaskMutexHandOffFIFO(t *testing.T) {
	d := newMini(t, 0, func(env Env, h *taskNode) {
		h.Mu.Name = "m"
		for i := range 3 {
			Go(env, fmt.Sprintf("w%d", i), func(t *Task) {
				h.Mu.Lock(t)
				h.Log = append(h.Log, t.Name()+" in")
				t.Sleep(time.Millisecond)
				h.Log = append(h.Log, t.Name()+" out")
				h.Mu.Unlock(t)
			})
		}
	})
	if err := d.run(); err != nil {
		t.Fatal(err)
	}
	want := "w0 in\nw0 out\nw1 in\nw1 out\nw2 in\nw2 out"
	if got := d.log(); got != want {
		t.Fatalf("log:\n%s\nwant:\n%s", got, want)
	}
	if n := d.in.LiveTasks(); n != 0 {
		t.Fatalf("%d tasks still live after all returned", n)
	}
	// Every resume is its own event, naming the task and its waker.
	var wakes []string
	for _, ev := range d.events {
		if ev.Kind == KindTask {
			wakes = append(wakes, fmt.Sprintf("%s:%s", ev.TaskName, ev.Wake))
		}
	}
	if got := strings.Join(wakes, " "); got != "w0:start w1:start w2:start w0:timer w1:unlock m w1:timer w2:unlock m w2:timer" {
		t.Fatalf("resumes: %s", got)
	}
}

func TestTaskCallAndTimeout(t *testing.T) {
	d := newMini(t, 0, func(env Env, h *taskNode) {
		Go(env, "caller", func(t *Task) {
			m, ok := t.Call("a", ptrMsg2{S: "ping"}, nil, time.Second)
			h.Log = append(h.Log, fmt.Sprintf("call: %v %v", m, ok))
			_, _, ok = t.Recv(func(_ ID, m Message) bool { return m.(ptrMsg2).S == "never" }, 5*time.Millisecond)
			h.Log = append(h.Log, fmt.Sprintf("recv: %v", ok))
			t.Send("a", ptrMsg2{S: "late"})
		})
	})
	if err := d.run(); err != nil {
		t.Fatal(err)
	}
	want := "call: {ping} true\nrecv: false\nhandler got late"
	if got := d.log(); got != want {
		t.Fatalf("log:\n%s\nwant:\n%s", got, want)
	}
	// The matched reply cancelled the call's timeout timer.
	for _, ev := range d.events {
		if ev.Kind == KindRecv && ev.Seq == 3 && len(ev.TimersCancelled) != 1 {
			t.Fatalf("the reply did not cancel the call's timeout: %+v", ev)
		}
	}
}

func TestTaskRWMutexCondSemaphore(t *testing.T) {
	d := newMini(t, 0, func(env Env, h *taskNode) {
		h.Pool.Size = 1
		Go(env, "r1", func(t *Task) {
			h.RW.RLock(t)
			t.Sleep(time.Millisecond)
			h.Log = append(h.Log, "r1 read")
			h.RW.RUnlock(t)
		})
		Go(env, "w", func(t *Task) {
			h.RW.Lock(t)
			h.Log = append(h.Log, "w write")
			h.RW.Unlock(t)
		})
		Go(env, "r2", func(t *Task) { // behind the waiting writer
			h.RW.RLock(t)
			h.Log = append(h.Log, "r2 read")
			h.RW.RUnlock(t)
		})
		Go(env, "waiter", func(t *Task) {
			h.Mu.Lock(t)
			for !h.Ready {
				h.Cond.Wait(t, &h.Mu)
			}
			h.Log = append(h.Log, "ready")
			h.Mu.Unlock(t)
			h.Pool.Acquire(t)
			h.Pool.Acquire(t) // blocks until the handler's timer releases
			h.Log = append(h.Log, "second socket")
		})
		Go(env, "setter", func(t *Task) {
			h.Mu.Lock(t)
			h.Ready = true
			h.Cond.Signal(t)
			h.Mu.Unlock(t)
		})
	})
	if err := d.run(); err != nil {
		t.Fatal(err)
	}
	got := d.log()
	for _, w := range []string{"r1 read\nw write\nr2 read", "ready"} {
		if !strings.Contains(got, w) {
			t.Fatalf("log lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "second socket") {
		t.Fatal("a semaphore of one handed out two")
	}
	ts := d.in.Tasks()
	if len(ts) != 1 || ts[0].Name != "waiter" || ts[0].State != "blocked" || ts[0].On != "acquire semaphore" {
		t.Fatalf("tasks: %+v", ts)
	}
}

func TestGoOutsideHandlerPanics(t *testing.T) {
	d := newMini(t, 0, func(env Env, h *taskNode) {})
	if err := d.run(); err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string]Env{"nil": nil, "stale": d.in} {
		func() {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), "outside a handler or task") {
					t.Fatalf("%s env: panic %v", name, r)
				}
			}()
			Go(env, "late", func(*Task) {})
		}()
	}
}

func TestTaskStuckOnRealChannel(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	d := newMini(t, 50*time.Millisecond, func(env Env, h *taskNode) {
		Go(env, "bad", func(t *Task) { <-block })
	})
	err := d.run()
	var stuck *TaskStuckError
	if !errors.As(err, &stuck) || stuck.Name != "bad" || !strings.Contains(err.Error(), `task 1 "bad" neither blocked`) {
		t.Fatalf("got %v, want a TaskStuckError naming the task", err)
	}
}

func TestTaskPanicReported(t *testing.T) {
	d := newMini(t, 0, func(env Env, h *taskNode) {
		Go(env, "boom", func(t *Task) { panic("kaput") })
	})
	err := d.run()
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Kind != KindTask || !strings.Contains(err.Error(), `task 1 "boom": kaput`) {
		t.Fatalf("got %v", err)
	}
	if w := pe.Where(); !strings.Contains(w, "task_test.go:") {
		t.Fatalf("where %q, want the task's line", w)
	}
}

// A task that misuses a lock panics inside this package; the panic is
// placed at the task's call, not at Mutex.Lock (a new user's relock was
// reported "at node.(*Mutex).Lock (tasksync.go:42)").
func TestTaskMisusePanicNamesTheCaller(t *testing.T) {
	d := newMini(t, 0, func(env Env, h *taskNode) {
		Go(env, "twice", func(t *Task) {
			h.Mu.Lock(t)
			h.Mu.Lock(t)
		})
	})
	err := d.run()
	var pe *PanicError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "which it already holds") {
		t.Fatalf("got %v", err)
	}
	if w := pe.Where(); !strings.Contains(w, "task_test.go:") {
		t.Fatalf("where %q, want the task's line", w)
	}
}

func TestCrashEndsTasks(t *testing.T) {
	// Counted by the tasks themselves, not by runtime.NumGoroutine, which
	// other tests' goroutines winding down make flaky.
	var running atomic.Int32
	d := newMini(t, 0, func(env Env, h *taskNode) {
		for i := range 5 {
			Go(env, "sleeper", func(t *Task) {
				running.Add(1)
				defer running.Add(-1) // the goroutine's unwind, at the crash
				defer h.Mu.Unlock(t)  // runs during the unwind and finds no Env: harmless
				h.Mu.TryLock(t)
				t.Sleep(time.Hour * time.Duration(i+1))
			})
		}
	})
	if err := d.dispatch(Event{Kind: KindInit}); err != nil {
		t.Fatal(err)
	}
	for len(d.queue) > 0 {
		ev := d.queue[0]
		d.queue = d.queue[1:]
		if err := d.dispatch(ev); err != nil {
			t.Fatal(err)
		}
	}
	if d.in.LiveTasks() != 5 || running.Load() != 5 {
		t.Fatalf("%d tasks, %d task goroutines running", d.in.LiveTasks(), running.Load())
	}
	if err := d.dispatch(Event{Kind: KindCrash}); err != nil {
		t.Fatal(err)
	}
	if d.in.LiveTasks() != 0 {
		t.Fatal("tasks survived the crash")
	}
	for range 1000 {
		if running.Load() == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%d task goroutines still running a second after the crash", running.Load())
}

func TestTaskUsedFromHandlerPanics(t *testing.T) {
	var kept *Task
	d := newMini(t, 0, func(env Env, h *taskNode) {
		Go(env, "t", func(t *Task) { kept = t; t.Sleep(time.Hour) })
	})
	d.dispatch(Event{Kind: KindInit})
	d.dispatch(d.queue[0])
	d.queue = nil
	d.in.cur = &Event{} // as if another event ran
	defer func() {
		d.in.cur = nil
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "while it is not running") {
			t.Fatalf("panic %v", r)
		}
	}()
	kept.Sleep(time.Second)
}

// Cond.Wait without the mutex says so, naming Wait, not an Unlock the
// task never wrote with "holder: task 0".
func TestCondWaitWithoutTheMutexSaysSo(t *testing.T) {
	d := newMini(t, 0, func(env Env, h *taskNode) {
		Go(env, "waiter", func(t *Task) {
			var c Cond
			c.Wait(t, &h.Mu)
		})
	})
	err := d.run()
	if err == nil || !strings.Contains(err.Error(), "Wait on cond with mutex, which the task must hold (nobody holds it)") {
		t.Fatalf("got %v", err)
	}
}
