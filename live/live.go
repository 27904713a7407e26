// Package live runs one node of a system as a real process: a single event
// loop goroutine serialises the node's handlers (through node.Instance, the
// same dispatch core the simulator and the replayer use), a TCP transport
// carries messages between processes, real timers and external inputs are
// posted to the loop, and the node's Disk is a badger store in its data
// directory. Built with -tags record, the node also records every event to
// a per-node trace file that replay re-executes exactly; built without it,
// the recorder is compiled out.
package live

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/system"
)

// entropy is the process's real randomness, captured before any system
// installs node.InterceptCryptoRand: the live Source draws seeds and the
// bytes a handler reads from crypto/rand from it.
var entropy = cryptorand.Reader

// reserveBlock is how far ahead of its current seq and Lamport clock a node
// reserves durably. A restarted process resumes above the reservation, so
// it never reuses a seq or goes back in Lamport time, even when the events
// its killed predecessor ran last never reached the trace.
const reserveBlock = 1 << 16

// inboxSize bounds the events waiting for the loop. Network readers and
// timers wait when it is full; the loop itself never waits on it.
const inboxSize = 4096

var errNotRecording = errors.New("this binary was built without -tags record and cannot record a trace")

// ErrStopped is returned by calls on a node that has stopped.
var ErrStopped = errors.New("node stopped")

// Options configure one live node.
type Options struct {
	System *system.System
	// Bug and Params build the system's handlers, as in the simulator;
	// they are written to the trace header. Bug "" means "none".
	Bug    string
	Params map[string]string
	// ID is this node; Addrs maps every node of the system, this one
	// included, to its TCP address. The node listens on its own.
	ID    node.ID
	Addrs map[node.ID]string
	// DataDir holds the node's badger store (its Disk and the runtime's
	// seq/Lamport reservation).
	DataDir string
	// SyncWrites makes every event's Disk writes reach stable storage
	// before its messages leave (survives power loss, costs an fsync per
	// event). Without it, writes survive a crash of the process.
	SyncWrites bool
	// TraceDir, when set, records the node's events to TraceDir/ID.lz4.
	// Only a binary built with -tags record can record.
	TraceDir string
	// StateHashes records hashes of the handler's observed state, spaced
	// as the simulator spaces them by default (one after about every
	// state.DefaultHashBytes of state walked, and at the node's last
	// event), so that replay also finds a handler that changed only
	// state. Off by default.
	StateHashes bool
	// Logger receives the runtime's and the handlers' log lines (nil:
	// slog.Default()). Verbose keeps handlers' Debug lines.
	Logger  *slog.Logger
	Verbose bool
	// TaskBound is the wall time a resumed task may run without blocking
	// through the runtime (0: node.DefaultTaskBound); a task that exceeds
	// it stops the node with an error naming it.
	TaskBound time.Duration
	// Listener, if set, is used instead of listening on Addrs[ID] (tests
	// pass one bound to a free port).
	Listener net.Listener
}

// recorderConfig is what a recorder needs to open a node's trace.
type recorderConfig struct {
	Dir    string
	Node   node.ID
	Header traceHeader
	Log    *slog.Logger
}

// TraceFileName is the file a node records to inside the trace directory.
func TraceFileName(id node.ID) string { return string(id) + ".lz4" }

// itemKind says what an inbox item asks the loop to do.
type itemKind uint8

const (
	itemRecv itemKind = iota + 1
	itemTimer
	itemInput
	itemCall
)

// item is one request to the event loop.
type item struct {
	kind itemKind
	ev   node.Event
	// input and call: reply is told when the event ran (or failed);
	// until, when set, keeps an input's caller waiting until it holds.
	reply chan error
	until func(node.Handler) bool
	ctx   context.Context
	fn    func(node.Handler)
}

// waiter is an input's caller waiting for a condition on the handler.
type waiter struct {
	until func(node.Handler) bool
	reply chan error
	ctx   context.Context
}

// Node is one running node.
type Node struct {
	opts  Options
	id    node.ID
	sys   *system.System
	log   *slog.Logger
	store *diskStore
	inst  *node.Instance
	pacer *state.HashPacer // spaces state hashes (opts.StateHashes)
	src   liveSource
	tr    *transport
	rec   *recorder

	inbox   chan item
	local   []node.Event // messages to self and task resumes, in order (loop only)
	timers  map[node.TimerID]*time.Timer
	waiters []waiter

	seqLimit, lamportLimit uint64 // durable reservation
	restarted              bool

	stopping chan struct{} // closed by Close: the loop stops
	done     chan struct{} // closed when the loop has exited
	stopOnce sync.Once
	closeErr error
	closed   sync.Once
	failMu   sync.Mutex
	failure  error
}

// Start opens the node's store, starts its transport and its event loop,
// and runs its first event: init on a fresh data directory, restart on one
// a previous process used.
func Start(opts Options) (*Node, error) {
	if opts.System == nil {
		return nil, errors.New("live: no system")
	}
	sys := opts.System
	if opts.Bug == "" {
		opts.Bug = "none"
	}
	if err := sys.CheckBug(opts.Bug); err != nil {
		return nil, err
	}
	if _, ok := opts.Addrs[opts.ID]; !ok {
		return nil, fmt.Errorf("node %q has no address in the peer list", opts.ID)
	}
	if opts.DataDir == "" {
		return nil, errors.New("live: no data directory")
	}
	if opts.TraceDir != "" && !Recording {
		return nil, errNotRecording
	}
	ids := make([]node.ID, 0, len(opts.Addrs))
	for id := range opts.Addrs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	cfg := system.NewConfig(opts.Bug, ids, opts.Params)
	// What the simulator refuses, a live cluster refuses too (a peer
	// list the system cannot run with, an unknown parameter).
	if err := sys.CheckConfig(cfg); err != nil {
		return nil, fmt.Errorf("system %s cannot run nodes %v: %w", sys.Name, ids, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("node", string(opts.ID))
	if sys.CryptoRand {
		node.InterceptCryptoRand()
	}

	store, err := openStore(opts.DataDir, opts.SyncWrites, log)
	if err != nil {
		return nil, err
	}
	n := &Node{
		opts: opts, id: opts.ID, sys: sys, log: log, store: store,
		inbox: make(chan item, inboxSize), timers: map[node.TimerID]*time.Timer{},
		stopping: make(chan struct{}), done: make(chan struct{}),
	}
	n.src = liveSource{store: store}
	fail := func(err error) (*Node, error) {
		store.close()
		return nil, err
	}
	res, ok, err := store.getUint64s(metaReserve, 2)
	if err != nil {
		return fail(err)
	}
	n.restarted = ok
	n.pacer = state.NewHashPacer(state.HashSpacing{Bytes: state.DefaultHashBytes})
	n.inst = node.NewInstance(node.Config{
		ID: opts.ID, Nodes: ids, Members: node.NewMembers(ids), Codec: sys.Codec, Store: dataView{store}, Verbose: opts.Verbose,
		TaskBound: opts.TaskBound,
		New:       func() node.Handler { return sys.New(opts.ID, cfg) },
	})
	if n.restarted {
		n.seqLimit, n.lamportLimit = res[0], res[1]
		n.inst.Resume(n.seqLimit, n.lamportLimit)
	}

	if Recording && opts.TraceDir != "" {
		seg, _, err := store.getUint64s(metaSegment, 1)
		if err != nil {
			return fail(err)
		}
		segment := 0
		if seg != nil {
			segment = int(seg[0])
		}
		n.rec, err = openRecorder(recorderConfig{Dir: opts.TraceDir, Node: opts.ID, Log: log, Header: traceHeader{
			System: sys.Name, Nodes: ids, Node: opts.ID, Bug: opts.Bug, Params: opts.Params,
			Types: sys.Codec.Names(), Segment: segment, StateHashes: opts.StateHashes,
			Addr: opts.Addrs[opts.ID], Restart: n.restarted,
		}})
		if err != nil {
			return fail(err)
		}
		store.putUint64s(metaSegment, uint64(n.rec.segment()+1))
		if err := store.commit(); err != nil {
			n.rec.close("could not start: "+err.Error(), TransportStats{}, nil)
			return fail(err)
		}
	}

	ln := opts.Listener
	if ln == nil {
		ln, err = net.Listen("tcp", opts.Addrs[opts.ID])
		if err != nil {
			if Recording && n.rec != nil {
				n.rec.close("could not listen: "+err.Error(), TransportStats{}, nil)
			}
			return fail(fmt.Errorf("listen on %s: %w", opts.Addrs[opts.ID], err))
		}
	}
	n.tr = newTransport(opts.ID, sys.Name, opts.Addrs, ln, n.deliver, log)
	go n.loop()
	return n, nil
}

// ID is the node's ID.
func (n *Node) ID() node.ID { return n.id }

// Restarted reports whether this process continues a node that ran
// before on the same data directory (its first event was a restart).
func (n *Node) Restarted() bool { return n.restarted }

// Done is closed when the node has stopped, by Close or after a fatal
// error (Err says which).
func (n *Node) Done() <-chan struct{} { return n.done }

// Err is the fatal error that stopped the node, if any.
func (n *Node) Err() error {
	n.failMu.Lock()
	defer n.failMu.Unlock()
	return n.failure
}

// RecordingErr is the error that stopped the node's recording (a full
// disk, an I/O error), if any: the node keeps running without it, Close
// does not report it again, and the trace ends with a notice saying so
// when the writer could append one.
func (n *Node) RecordingErr() error {
	if !Recording || n.rec == nil {
		return nil
	}
	return n.rec.err()
}

// Stats reports the transport's counters.
func (n *Node) Stats() TransportStats { return n.tr.stats() }

// Input delivers an external request (a value of a type registered with
// the system's codec) to the node's Input handler and returns once that
// event ran. It is safe to call from any goroutine.
func (n *Node) Input(ctx context.Context, in node.Message) error {
	return n.InputWait(ctx, in, nil)
}

// InputWait is Input that keeps waiting after the input event until
// until(handler) holds. until runs on the event loop after the input's
// event and after every later event, until it returns true or ctx ends; it
// may read the handler but must not change it. This is how an application
// answers a request once the system has done something later (a write
// committed), without recording anything beyond the input itself.
func (n *Node) InputWait(ctx context.Context, in node.Message, until func(node.Handler) bool) error {
	name, payload, err := n.sys.Codec.Encode(in)
	if err != nil {
		return fmt.Errorf("input to %s: %w", n.id, err)
	}
	it := item{kind: itemInput, ev: node.Event{Kind: node.KindInput, MsgType: name, Payload: payload},
		reply: make(chan error, 1), until: until, ctx: ctx}
	return n.call(ctx, it)
}

// Read runs fn on the event loop between two events, with the handler (nil
// if the node has failed). fn must not change the handler and must not
// keep it: reads are not recorded.
func (n *Node) Read(ctx context.Context, fn func(node.Handler)) error {
	return n.call(ctx, item{kind: itemCall, fn: fn, reply: make(chan error, 1), ctx: ctx})
}

func (n *Node) call(ctx context.Context, it item) error {
	select {
	case n.inbox <- it:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.stopping:
		return ErrStopped
	case <-n.done:
		return ErrStopped
	}
	select {
	case err := <-it.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return ErrStopped
	}
}

// deliver hands a received message to the loop; it waits while the inbox
// is full (the TCP connection then pushes back on the sender's writer).
func (n *Node) deliver(f frame) bool {
	if !n.sys.Codec.Known(f.Type) {
		n.log.Warn("dropping a message of an unregistered type", "from", f.From, "type", f.Type)
		return true
	}
	it := item{kind: itemRecv, ev: node.Event{Kind: node.KindRecv, From: f.From, MsgSeq: f.Seq,
		MsgIndex: f.Index, SendLamport: f.Lamport, MsgType: f.Type, Payload: f.Payload}}
	select {
	case n.inbox <- it:
		return true
	case <-n.stopping:
		return false
	case <-n.done:
		return false
	}
}

// loop is the node's only goroutine that touches the instance.
func (n *Node) loop() {
	defer close(n.done)
	first := node.KindInit
	if n.restarted {
		first = node.KindRestart
	}
	if !n.dispatch(&node.Event{Kind: first}) {
		return
	}
	for {
		var it item
		if len(n.local) > 0 {
			// Messages to self first, but let one waiting item in
			// each turn so that a chatty node cannot starve its peers.
			select {
			case it = <-n.inbox:
			case <-n.stopping:
				return
			default:
				ev := n.local[0]
				n.local = n.local[1:]
				if ev.Kind == node.KindTask && !n.inst.TaskRunnable(ev.Task) {
					continue
				}
				if !n.dispatch(&ev) {
					return
				}
				continue
			}
		} else {
			select {
			case it = <-n.inbox:
			case <-n.stopping:
				return
			}
		}
		if !n.handle(it) {
			return
		}
	}
}

func (n *Node) handle(it item) bool {
	switch it.kind {
	case itemRecv:
		return n.dispatch(&it.ev)
	case itemTimer:
		if !n.inst.TimerPending(it.ev.TimerID) {
			return true // cancelled after it fired
		}
		delete(n.timers, it.ev.TimerID)
		return n.dispatch(&it.ev)
	case itemInput:
		if it.ctx != nil && it.ctx.Err() != nil {
			it.reply <- it.ctx.Err() // the caller gave up before it ran
			return true
		}
		if it.until != nil {
			n.waiters = append(n.waiters, waiter{until: it.until, reply: it.reply, ctx: it.ctx})
		}
		ok := n.dispatch(&it.ev)
		if it.until == nil {
			it.reply <- n.Err()
		}
		return ok
	case itemCall:
		it.fn(n.inst.Handler())
		it.reply <- nil
	}
	return true
}

// finalStates is the node's final state hash for the end record, when its
// last event carries none. The node's loop has stopped.
func (n *Node) finalStates() []state.NodeHash {
	if !n.opts.StateHashes || n.pacer == nil {
		return nil
	}
	return n.pacer.Final([]node.ID{n.id}, func(node.ID) *node.Instance { return n.inst })
}

// dispatch runs one event and applies its effects: disk writes are
// committed (with the reservation, if it must move) before the event is
// recorded and before any message leaves.
func (n *Node) dispatch(ev *node.Event) bool {
	ev.Time = time.Now().UnixNano()
	if err := n.inst.Dispatch(ev, n.src); err != nil {
		n.fail(fmt.Errorf("node %s: %w", n.id, err))
		return false
	}
	if n.opts.StateHashes {
		// Spaced as in the simulator (state.DefaultHashBytes), so that a
		// node with a large state does not pay O(state) on every event.
		n.pacer.After(ev, n.inst)
	}
	if ev.Seq > n.seqLimit || ev.Lamport > n.lamportLimit {
		n.seqLimit, n.lamportLimit = ev.Seq+reserveBlock, ev.Lamport+reserveBlock
		n.store.putUint64s(metaReserve, n.seqLimit, n.lamportLimit)
	}
	if err := n.store.commit(); err != nil {
		// The node cannot keep its promises without its disk.
		n.fail(fmt.Errorf("node %s seq %d: %w", n.id, ev.Seq, err))
		return false
	}
	if Recording && n.rec != nil {
		n.rec.append(ev)
	}
	for i, s := range ev.Sends {
		if s.To == n.id {
			n.local = append(n.local, node.Event{Kind: node.KindRecv, From: n.id, MsgSeq: ev.Seq,
				MsgIndex: uint32(i), SendLamport: ev.Lamport, MsgType: s.Type, Payload: s.Payload})
			continue
		}
		n.tr.send(s.To, &frame{From: n.id, Seq: ev.Seq, Index: uint32(i), Lamport: ev.Lamport, Type: s.Type, Payload: s.Payload})
	}
	// A task an event made runnable resumes in an event of its own, queued
	// like a message to self.
	for _, id := range ev.Woken {
		if r, ok := n.inst.TaskResume(id); ok {
			n.local = append(n.local, r)
		}
	}
	for _, t := range ev.TimersSet {
		id, name := t.ID, t.Name
		n.timers[id] = time.AfterFunc(t.After, func() {
			select {
			case n.inbox <- item{kind: itemTimer, ev: node.Event{Kind: node.KindTimer, TimerID: id, TimerName: name}}:
			case <-n.stopping:
			case <-n.done:
			}
		})
	}
	for _, id := range ev.TimersCancelled {
		if t, ok := n.timers[id]; ok {
			t.Stop()
			delete(n.timers, id)
		}
	}
	for _, l := range ev.Logs {
		if l.Attrs == "" {
			n.log.Log(context.Background(), l.Level, l.Msg, "seq", ev.Seq, "kind", ev.Kind.String())
		} else {
			n.log.Log(context.Background(), l.Level, l.Msg, "seq", ev.Seq, "kind", ev.Kind.String(), "attrs", l.Attrs)
		}
	}
	n.checkWaiters()
	return true
}

// checkWaiters answers the input callers whose condition now holds.
func (n *Node) checkWaiters() {
	if len(n.waiters) == 0 {
		return
	}
	h := n.inst.Handler()
	n.waiters = slices.DeleteFunc(n.waiters, func(w waiter) bool {
		if w.ctx != nil && w.ctx.Err() != nil {
			w.reply <- w.ctx.Err()
			return true
		}
		if h != nil && w.until(h) {
			w.reply <- nil
			return true
		}
		return false
	})
}

func (n *Node) fail(err error) {
	n.failMu.Lock()
	if n.failure == nil {
		n.failure = err
	}
	n.failMu.Unlock()
	n.log.Error("node failed", "err", err)
}

// Close stops the node: the loop stops between events, timers stop, the
// transport closes, the trace segment is ended with reason and flushed,
// and the store is closed. Safe to call more than once and after a fatal
// error.
func (n *Node) Close(reason string) error {
	n.closed.Do(func() {
		close(n.stopping)
		<-n.done
		n.inst.Close() // the node's tasks end with it
		for _, t := range n.timers {
			t.Stop()
		}
		for _, w := range n.waiters {
			w.reply <- ErrStopped
		}
		n.waiters = nil
		n.tr.close()
		var errs []error
		if Recording && n.rec != nil {
			if err := n.Err(); err != nil {
				reason = "error: " + err.Error()
			}
			errs = append(errs, n.rec.close(reason, n.tr.stats(), n.finalStates()))
		}
		if err := n.store.close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// liveSource serves a live node's nondeterminism from the real world.
type liveSource struct{ store *diskStore }

func (liveSource) Clock() int64 { return time.Now().UnixNano() }

func (liveSource) Seed() uint64 {
	var b [8]byte
	if _, err := io.ReadFull(entropy, b[:]); err != nil {
		panic(&node.SourceError{Err: fmt.Errorf("read entropy: %w", err)})
	}
	return binary.LittleEndian.Uint64(b[:])
}

func (s liveSource) DiskGet(key string) ([]byte, bool) { return dataView{s.store}.Get(key) }

func (liveSource) CryptoRead(p []byte) {
	if _, err := io.ReadFull(entropy, p); err != nil {
		panic(&node.SourceError{Err: fmt.Errorf("read entropy: %w", err)})
	}
}

// traceHeader is what a live trace segment's header says about the node.
type traceHeader struct {
	System      string
	Nodes       []node.ID
	Node        node.ID
	Bug         string
	Params      map[string]string
	Types       []string
	Segment     int
	StateHashes bool
	Addr        string
	Restart     bool
}

// runInfo is the header's description of how the segment was made.
func (h traceHeader) runInfo() map[string]string {
	host, _ := os.Hostname()
	return map[string]string{
		"addr": h.Addr, "host": host, "pid": strconv.Itoa(os.Getpid()),
		"restart": strconv.FormatBool(h.Restart),
	}
}
