package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/replaycheck/replaycheck/lamport"
)

// Source supplies the nondeterministic values a handler consumes. Each
// driver has its own: the simulator's reads virtual time and the run's
// seeded generator, the live runtime's reads the real clock and entropy, and
// the replayer's serves back what the trace recorded. A Source that cannot
// serve a value (a replay whose handler now asks for something the recording
// does not have) panics with a *SourceError, which Dispatch returns.
type Source interface {
	Clock() int64                      // Unix ns
	Seed() uint64                      // a per-event seed for Env.Rand
	DiskGet(key string) ([]byte, bool) // a read of the node's durable store
	CryptoRead(p []byte)               // bytes for a crypto/rand read
}

// SourceError is the panic value a Source uses to abort a dispatch.
type SourceError struct{ Err error }

func (e *SourceError) Error() string { return e.Err.Error() }
func (e *SourceError) Unwrap() error { return e.Err }

// Store is a node's durable key/value storage as a driver provides it.
type Store interface {
	Get(key string) ([]byte, bool)
	Put(key string, value []byte)
	Delete(key string)
}

// PanicError reports a handler that panicked during an event.
type PanicError struct {
	Node  ID
	Seq   uint64
	Kind  Kind
	Value any
	Stack string
}

func (e *PanicError) Error() string {
	where := ""
	if w := e.Where(); w != "" {
		where = " at " + w
	}
	return fmt.Sprintf("node %s: handler panicked in %s event (seq %d)%s: %v", e.Node, e.Kind, e.Seq, where, e.Value)
}

// Where is the function and line that panicked, from Stack: the first
// frame below the panic outside the Go runtime and this package ("" if
// Stack does not show one), e.g. "main.(*Node).Timer (node.go:42)". A
// panic of this package (a lock taken twice) is placed at its caller,
// the handler's line; only when no such frame is there is it its own.
func (e *PanicError) Where() string {
	lines := strings.Split(e.Stack, "\n")
	below, own := false, ""
	for i := 0; i+1 < len(lines); i++ {
		fn := lines[i]
		if strings.HasPrefix(fn, "\t") || fn == "" {
			continue
		}
		if strings.HasPrefix(fn, "panic(") {
			below = true
			continue
		}
		if !below || strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "runtime/") {
			continue
		}
		if p := strings.LastIndexByte(fn, '('); p > 0 {
			fn = fn[:p]
		}
		file := strings.TrimSpace(lines[i+1])
		if sp := strings.IndexByte(file, ' '); sp > 0 {
			file = file[:sp] // the +0x offset
		}
		at := fmt.Sprintf("%s (%s)", fn, filepath.Base(file))
		if strings.HasPrefix(fn, "created by ") {
			break // the frames are over
		}
		path := file
		if c := strings.LastIndexByte(file, ':'); c > 0 {
			path = file[:c] // the line
		}
		if strings.HasPrefix(fn, thisPackage) && !strings.HasSuffix(path, "_test.go") {
			own = cmp.Or(own, at)
			continue
		}
		return at
	}
	return own
}

// thisPackage prefixes the functions of this package in a stack.
const thisPackage = "github.com/replaycheck/replaycheck/node."

// PendingTimer is a timer set and neither fired nor cancelled.
type PendingTimer struct {
	ID   TimerID
	Name string
	Due  int64 // Unix ns
}

// Config builds an Instance.
type Config struct {
	ID    ID
	Nodes []ID // every node of the system, including ID
	// Members, when set, is Nodes as a shared node set: drivers pass one
	// to every Instance of a run so that N nodes hold one list, not N.
	Members *Members
	New     func() Handler // the system's factory, bound to this node
	Codec   *Codec
	Store   Store // durable storage; writes go here
	Verbose bool  // keep Debug-level log lines (otherwise Info and above)
	// TaskBound is how long (wall time) a resumed task may run without
	// blocking through the runtime; 0: DefaultTaskBound.
	TaskBound time.Duration
}

// Instance is one node: its handler and runtime state. It is not safe for
// concurrent use; drivers serialise events per node.
type Instance struct {
	id      ID
	members *Members
	factory func() Handler
	codec   *Codec
	store   Store
	verbose bool

	handler   Handler
	up        bool
	clock     lamport.Clock
	seq       uint64
	timers    map[TimerID]PendingTimer
	nextTimer TimerID
	tasks     *tasks // nil until a task starts
	taskBound time.Duration

	// Valid during a dispatch only.
	cur    *Event
	src    Source
	pcg    *rand.PCG
	rnd    *rand.Rand
	seeded bool
	disk   diskView
	log    *slog.Logger
	digest *xxhash.Digest
	gid    uint64 // the goroutine this instance's events run on (crypto/rand routing)
}

// NewInstance builds a node that has not started yet; its first event must
// be an init.
func NewInstance(c Config) *Instance {
	in := &Instance{
		id:        c.ID,
		members:   c.Members,
		factory:   c.New,
		codec:     c.Codec,
		store:     c.Store,
		verbose:   c.Verbose,
		taskBound: c.TaskBound,
		timers:    map[TimerID]PendingTimer{},
		digest:    xxhash.New(),
	}
	if in.members == nil || !in.members.Contains(c.ID) {
		in.members = NewMembers(append(slices.Clone(c.Nodes), c.ID))
	}
	in.pcg = rand.NewPCG(0, 0)
	in.rnd = rand.New(in.pcg)
	in.disk.in = in
	in.log = slog.New(&logHandler{in: in})
	return in
}

// ID is the node's ID.
func (in *Instance) ID() ID { return in.id }

// Handler is the node's current handler (nil before init and while crashed).
func (in *Instance) Handler() Handler { return in.handler }

// Up reports whether the node is running (started and not crashed).
func (in *Instance) Up() bool { return in.up }

// Seq is the sequence number of the last event dispatched (0 before any).
func (in *Instance) Seq() uint64 { return in.seq }

// Lamport is the node's Lamport clock after its last event.
func (in *Instance) Lamport() uint64 { return in.clock.Now() }

// Store is the node's durable store.
func (in *Instance) Store() Store { return in.store }

// Codec is the system's codec.
func (in *Instance) Codec() *Codec { return in.codec }

// Timers lists pending timers, ordered by ID.
func (in *Instance) Timers() []PendingTimer {
	ts := make([]PendingTimer, 0, len(in.timers))
	for _, t := range in.timers {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b PendingTimer) int { return int(a.ID) - int(b.ID) })
	return ts
}

// Resume sets the sequence number and Lamport clock of a node whose process
// restarted, before its first event (a restart): the live driver reserves
// them durably so that a new incarnation never reuses a seq or goes back in
// Lamport time, even when the old one's last events were never recorded.
func (in *Instance) Resume(seq, lamport uint64) {
	in.seq = seq
	in.clock.Set(lamport)
}

// Kill drops the handler and its timers without an event: a process that
// died without recording a crash (kill -9). The next event must be a
// restart.
func (in *Instance) Kill() {
	in.Close()
	in.handler = nil
	in.up = false
	in.timers = map[TimerID]PendingTimer{}
	in.nextTimer = 0
}

// TimerPending reports whether timer id is still pending.
func (in *Instance) TimerPending(id TimerID) bool {
	_, ok := in.timers[id]
	return ok
}

// Dispatch runs one event. The driver fills ev's inputs (Kind, Time, and
// the message or timer fields); Dispatch sets Node, Seq and Lamport, runs
// the handler with src supplying nondeterminism, and fills the consumed
// values and effects. On error the instance must not be used further.
func (in *Instance) Dispatch(ev *Event, src Source) (err error) {
	if err := in.admit(ev); err != nil {
		return err
	}
	ev.ResetOutputs()
	ev.Node = in.id
	in.seq++
	ev.Seq = in.seq
	if ev.Kind == KindRecv {
		ev.Lamport = in.clock.Receive(ev.SendLamport)
	} else {
		ev.Lamport = in.clock.Tick()
	}
	in.cur, in.src, in.seeded = ev, src, false
	in.digest.Reset()
	leave := in.enterDispatch()
	defer func() {
		leave()
		if ev.DiskWrites > 0 {
			ev.DiskDigest = in.digest.Sum64()
		}
		in.cur, in.src = nil, nil
		if r := recover(); r != nil {
			var se *SourceError
			if e, ok := r.(error); ok && errors.As(e, &se) {
				err = se.Err
				return
			}
			err = &PanicError{Node: in.id, Seq: ev.Seq, Kind: ev.Kind, Value: r, Stack: string(debug.Stack())}
		}
	}()
	switch ev.Kind {
	case KindInit, KindRestart, KindCrash:
		if in.tasks != nil {
			ts := in.tasks
			in.tasks = nil
			if err := ts.kill(); err != nil {
				return fmt.Errorf("node %s seq %d: ending tasks at %s: %w", in.id, ev.Seq, ev.Kind, err)
			}
		}
	}
	switch ev.Kind {
	case KindInit, KindRestart:
		in.timers = map[TimerID]PendingTimer{}
		in.nextTimer = 0
		in.handler = in.factory()
		if in.handler == nil {
			panic(fmt.Sprintf("the system's New returned no handler for node %s", in.id))
		}
		in.up = true
		in.handler.Init(in)
	case KindCrash:
		in.handler = nil
		in.up = false
		in.timers = map[TimerID]PendingTimer{}
		in.nextTimer = 0
	case KindRecv:
		m, err := in.codec.Decode(ev.MsgType, ev.Payload)
		if err != nil {
			return fmt.Errorf("node %s seq %d: %w", in.id, ev.Seq, err)
		}
		if in.tasks != nil && in.tasks.deliver(ev.From, ev, m) {
			break
		}
		in.handler.Receive(in, ev.From, m)
	case KindTimer:
		delete(in.timers, ev.TimerID)
		if in.tasks != nil && in.tasks.fire(ev.TimerID) {
			break
		}
		in.handler.Timer(in, Timer{ID: ev.TimerID, Name: ev.TimerName})
	case KindTask:
		return in.tasks.resume(ev.Task)
	case KindInput:
		m, err := in.codec.Decode(ev.MsgType, ev.Payload)
		if err != nil {
			return fmt.Errorf("node %s seq %d: input: %w", in.id, ev.Seq, err)
		}
		in.handler.(Inputter).Input(in, m)
	}
	return nil
}

// admit checks that an event can happen in the node's current state.
func (in *Instance) admit(ev *Event) error {
	where := func(format string, args ...any) error {
		return fmt.Errorf("node %s: %s event at seq %d: %s", in.id, ev.Kind, in.seq+1, fmt.Sprintf(format, args...))
	}
	switch ev.Kind {
	case KindInit:
		if in.seq != 0 {
			return where("node already started")
		}
	case KindRestart:
		if in.up {
			return where("node is running (a restart follows a crash)")
		}
	case KindCrash:
		if !in.up {
			return where("node is not running")
		}
	case KindRecv, KindTimer, KindInput, KindTask:
		if !in.up {
			return where("node is not running")
		}
		if ev.Kind == KindTask {
			var t *Task
			if in.tasks != nil {
				t = in.tasks.find(ev.Task)
			}
			switch {
			case t == nil:
				return where("task %d (%q) is not a live task", ev.Task, ev.TaskName)
			case t.state != taskRunnable:
				return where("task %d %q is not runnable (it waits for %s)", ev.Task, t.name, t.on)
			case t.name != ev.TaskName:
				return where("task %d is named %q, not %q", ev.Task, t.name, ev.TaskName)
			case t.wake != ev.Wake || t.wakeSeq != ev.WakeSeq:
				return where("task %d %q was woken by %q at seq %d, not %q at seq %d", ev.Task, t.name, t.wake, t.wakeSeq, ev.Wake, ev.WakeSeq)
			}
		}
		if ev.Kind == KindRecv && !in.members.Contains(ev.From) {
			return where("sender %q is not a node of this system", ev.From)
		}
		if ev.Kind == KindTimer {
			t, ok := in.timers[ev.TimerID]
			if !ok {
				return where("timer %d is not pending", ev.TimerID)
			}
			if ev.TimerName != t.Name {
				return where("timer %d is named %q, not %q", ev.TimerID, t.Name, ev.TimerName)
			}
		}
		if ev.Kind == KindInput {
			if _, ok := in.handler.(Inputter); !ok {
				return where("handler %T does not implement Input", in.handler)
			}
		}
	default:
		return where("invalid kind")
	}
	return nil
}

// The Instance is the Env of the event it is dispatching.

func (in *Instance) active() *Event {
	if in.cur == nil {
		panic("node: Env used outside the event it was given to")
	}
	return in.cur
}

// Self implements Env.
func (in *Instance) Self() ID { return in.id }

// Peers implements Env.
func (in *Instance) Peers() []ID {
	ids := in.members.ids
	i, _ := in.members.Index(in.id)
	return slices.Concat(ids[:i], ids[i+1:])
}

// Members is the system's node set, shared (see MembersOf).
func (in *Instance) Members() *Members { return in.members }

// Send implements Env.
func (in *Instance) Send(to ID, m Message) {
	ev := in.active()
	if !in.members.Contains(to) {
		panic(fmt.Sprintf("send %T to %q: not a node of this system", m, to))
	}
	name, payload, err := in.codec.Encode(m)
	if err != nil {
		panic(fmt.Sprintf("send to %s: %v", to, err))
	}
	ev.Sends = append(ev.Sends, Send{To: to, Type: name, Digest: xxhash.Sum64(payload), Payload: payload})
}

// After implements Env.
func (in *Instance) After(d time.Duration, name string) TimerID {
	ev := in.active()
	d = max(d, 0)
	in.nextTimer++
	id := in.nextTimer
	in.timers[id] = PendingTimer{ID: id, Name: name, Due: ev.Time + int64(d)}
	ev.TimersSet = append(ev.TimersSet, TimerSet{ID: id, Name: name, After: d})
	return id
}

// Cancel implements Env.
func (in *Instance) Cancel(id TimerID) {
	ev := in.active()
	if _, ok := in.timers[id]; !ok {
		return
	}
	delete(in.timers, id)
	ev.TimersCancelled = append(ev.TimersCancelled, id)
}

// Now implements Env.
func (in *Instance) Now() time.Time {
	ev := in.active()
	t := in.src.Clock()
	ev.Nondet = append(ev.Nondet, Nondet{Kind: NondetClock, Int: t})
	return time.Unix(0, t).UTC()
}

// Rand implements Env.
func (in *Instance) Rand() *rand.Rand {
	ev := in.active()
	if !in.seeded {
		seed := in.src.Seed()
		ev.Nondet = append(ev.Nondet, Nondet{Kind: NondetSeed, Int: int64(seed)})
		in.pcg.Seed(seed, seed^0x9e3779b97f4a7c15)
		in.seeded = true
	}
	return in.rnd
}

// Disk implements Env.
func (in *Instance) Disk() Disk {
	in.active()
	return &in.disk
}

// Log implements Env.
func (in *Instance) Log() *slog.Logger {
	in.active()
	return in.log
}

// ReadCrypto serves a read of crypto/rand made by the handler during the
// current event from the driver's Source and records it. It reports false
// when no event is being dispatched.
func (in *Instance) ReadCrypto(p []byte) bool {
	if in.cur == nil {
		return false
	}
	in.src.CryptoRead(p)
	in.cur.Nondet = append(in.cur.Nondet, Nondet{Kind: NondetCrypto, Bytes: slices.Clone(p)})
	return true
}

type diskView struct{ in *Instance }

func (d *diskView) Get(key string) ([]byte, bool) {
	ev := d.in.active()
	v, ok := d.in.src.DiskGet(key)
	v = slices.Clone(v)
	ev.Nondet = append(ev.Nondet, Nondet{Kind: NondetDisk, Key: key, Found: ok, Bytes: v})
	return slices.Clone(v), ok
}

func (d *diskView) Put(key string, value []byte) {
	ev := d.in.active()
	d.write(ev, 'P', key, value)
	d.in.store.Put(key, slices.Clone(value))
}

func (d *diskView) Delete(key string) {
	ev := d.in.active()
	d.write(ev, 'D', key, nil)
	d.in.store.Delete(key)
}

// write folds one write into the event's disk digest: op, key, value, each
// length-prefixed so that different write sequences cannot collide by
// concatenation.
func (d *diskView) write(ev *Event, op byte, key string, value []byte) {
	var hdr [17]byte
	hdr[0] = op
	putU64(hdr[1:], uint64(len(key)))
	putU64(hdr[9:], uint64(len(value)))
	d.in.digest.Write(hdr[:])
	d.in.digest.WriteString(key)
	d.in.digest.Write(value)
	ev.DiskWrites++
}

func putU64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

// logHandler attaches log lines to the event being dispatched.
type logHandler struct {
	in    *Instance
	attrs string
}

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.in.verbose || l >= slog.LevelInfo
}

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	ev := h.in.cur
	if ev == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a.String())
		return true
	})
	ev.Logs = append(ev.Logs, LogLine{Level: r.Level, Msg: r.Message, Attrs: b.String()})
	return nil
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range as {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a.String())
	}
	return &logHandler{in: h.in, attrs: b.String()}
}

func (h *logHandler) WithGroup(string) slog.Handler { return h }

// MemStore is an in-memory Store: the simulator's disk (it outlives the
// handler across a crash) and the replayer's.
type MemStore struct {
	m map[string][]byte
}

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{m: map[string][]byte{}} }

// Get implements Store.
func (s *MemStore) Get(key string) ([]byte, bool) {
	v, ok := s.m[key]
	return v, ok
}

// Put implements Store.
func (s *MemStore) Put(key string, value []byte) { s.m[key] = value }

// Delete implements Store.
func (s *MemStore) Delete(key string) { delete(s.m, key) }

// Keys lists the stored keys, sorted.
func (s *MemStore) Keys() []string {
	return slices.Sorted(maps.Keys(s.m))
}

// Clone returns an independent copy (values are never mutated in place, so
// they are shared).
func (s *MemStore) Clone() *MemStore {
	c := &MemStore{m: make(map[string][]byte, len(s.m))}
	for k, v := range s.m {
		c.m[k] = v
	}
	return c
}

// Snapshot is a copy of an instance's complete state: handler, clock, seq,
// timers and store. Replay keeps snapshots as checkpoints.
type Snapshot struct {
	handler   Handler
	up        bool
	seq       uint64
	clock     uint64
	timers    map[TimerID]PendingTimer
	nextTimer TimerID
	store     Store
	// tasks is the node's live tasks: they cannot be copied, only moved
	// (see Restore).
	tasks *tasks
	// nextTask is the last task ID given out since the node started: a
	// node restored without live tasks numbers its next one after it,
	// as the recorded run did.
	nextTask TaskID
}

// LiveTasks is the number of live tasks in the snapshot. A snapshot with
// live tasks cannot be copied, and can be restored once, by a Copier that
// shares the handler (the tasks' stacks point into it): drivers rebuild
// such a node by re-executing its events instead of copying it.
func (s *Snapshot) LiveTasks() int {
	if s.tasks == nil {
		return 0
	}
	return len(s.tasks.live)
}

// Handler is the snapshot's handler (nil while the node was down), to
// read, not to run.
func (s *Snapshot) Handler() Handler { return s.handler }

// Copier deep-copies handlers and stores; package state provides one.
// (node cannot import state: it imports nothing of ours but lamport.)
type Copier struct {
	Handler func(Handler) Handler
	Store   func(Store) Store
}

func (c Copier) copy(h Handler, s Store) (Handler, Store) {
	if h != nil {
		h = c.Handler(h)
	}
	return h, c.Store(s)
}

// Snapshot copies the instance's state. It must not be called during a
// dispatch.
func (in *Instance) Snapshot(c Copier) *Snapshot {
	h, st := c.copy(in.handler, in.store)
	timers := make(map[TimerID]PendingTimer, len(in.timers))
	for k, v := range in.timers {
		timers[k] = v
	}
	snap := &Snapshot{handler: h, up: in.up, seq: in.seq, clock: in.clock.Now(),
		timers: timers, nextTimer: in.nextTimer, store: st}
	if in.tasks != nil {
		snap.nextTask = in.tasks.next
	}
	if in.LiveTasks() > 0 {
		snap.tasks = in.tasks
	}
	return snap
}

// Copy returns a copy of the snapshot whose handler and store are copied
// with c, so that two restores need not share them.
func (s *Snapshot) Copy(c Copier) *Snapshot {
	if s.LiveTasks() > 0 {
		panic("node: Snapshot.Copy of a node with live tasks (a task's stack cannot be copied; rebuild the node by re-execution)")
	}
	h, st := c.copy(s.handler, s.store)
	timers := make(map[TimerID]PendingTimer, len(s.timers))
	for k, v := range s.timers {
		timers[k] = v
	}
	return &Snapshot{handler: h, up: s.up, seq: s.seq, clock: s.clock, timers: timers, nextTimer: s.nextTimer, store: st, nextTask: s.nextTask}
}

// Restore puts the instance back in a snapshot's state. The snapshot is
// copied again, so it can be restored any number of times.
//
// A snapshot with live tasks hands them over to in (once: its tasks then
// belong to in); in's own tasks, if different, end.
func (in *Instance) Restore(s *Snapshot, c Copier) {
	if in.tasks != nil && in.tasks != s.tasks {
		in.Close()
	}
	in.tasks = nil
	if s.LiveTasks() > 0 {
		if s.tasks.in != in && s.tasks.in.tasks == s.tasks {
			s.tasks.in.tasks = nil // taken over
		}
		s.tasks.in = in
		in.tasks = s.tasks
	} else if s.nextTask > 0 {
		in.taskTable().next = s.nextTask
	}
	in.handler, in.store = c.copy(s.handler, s.store)
	in.up, in.seq, in.nextTimer = s.up, s.seq, s.nextTimer
	in.clock.Set(s.clock)
	in.timers = make(map[TimerID]PendingTimer, len(s.timers))
	for k, v := range s.timers {
		in.timers[k] = v
	}
}
