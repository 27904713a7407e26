// Package lockserver is a Boxwood-style distributed lock service written
// with tasks (node.Go): one server and N clients ("clerks"), each running
// several worker tasks that repeatedly acquire one of a few locks in
// shared or exclusive mode, hold it for a while and release it.
//
// A clerk caches what the server granted it: its local tasks share a
// cached lock without asking the server again (several readers, or one
// writer at a time). The server grants compatible requests in arrival
// order, queues the others, and revokes the lock from the clerks that
// hold it in a conflicting mode. A revoke starts a revoker task at the
// clerk: it raises the lock's flag (new local users wait), waits for the
// current users to finish, and gives the lock back. A clerk upgrades
// shared to exclusive by releasing first, then asking again. Every
// request to the server (acquire, release) is a call that holds a socket
// from the clerk's pool from the request until its reply.
//
// Seeded bugs (--bug), as in the WiDS Checker paper's Boxwood study:
//
//   - livelock: the revoker does not raise the flag; it retries the
//     release in a tight loop (every millisecond) until it finds the lock
//     idle. The clerk's workers keep handing the cached lock to each
//     other, so on a busy clerk the retry keeps losing the race: the lock
//     never goes back, and another clerk's request stays queued at the
//     server while everyone keeps working.
//   - deadlock: a socket pool of one. A worker acquiring lock b holds the
//     clerk's only socket while the server queues its request behind the
//     clerk that holds b; that clerk's revoker, to give b back, waits for
//     its own only socket, held by a worker acquiring a, which the first
//     clerk holds and cannot give back: its revoker waits for the socket
//     the first worker holds, and the clerk's local users of a wait on a's
//     flag. Nothing moves again; the server's queue never drains.
//
// Parameters: --param tasks=N worker tasks per clerk (1-64, default 4),
// --param locks=N locks a..h (1-8, default 2). --nodes counts the server:
// the default 5 is the server and clerks c1-c4.
//
// scripts/lockserver.star checks safety (the holders of one lock are all
// shared, or there is one exclusive holder) and the liveness property
// that the server's pending queue is eventually empty.
package lockserver

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// Mode is a lock mode.
type Mode int

// The modes; None is "not held".
const (
	None Mode = iota
	Shared
	Exclusive
)

func (m Mode) String() string { return [...]string{"none", "shared", "exclusive"}[m] }

// covers reports whether holding m lets a local task use the lock in want.
func (m Mode) covers(want Mode) bool { return m == Exclusive || m == Shared && want == Shared }

// ServerID is the lock server's node ID.
const ServerID node.ID = "server"

// Acquire asks the server for a lock in a mode.
type Acquire struct {
	Lock string
	Mode Mode
}

// Grant tells a clerk it holds a lock in a mode.
type Grant struct {
	Lock string
	Mode Mode
}

// Release gives a lock back to the server.
type Release struct{ Lock string }

// ReleaseAck confirms a Release.
type ReleaseAck struct{ Lock string }

// Revoke asks a clerk to give a lock back.
type Revoke struct{ Lock string }

// Holder is one clerk holding a lock at the server.
type Holder struct {
	Client  node.ID
	Mode    Mode
	Revoked bool // a revoke was sent and not answered yet
}

// Request is a queued acquire.
type Request struct {
	Client node.ID
	Mode   Mode
}

// ServerLock is the server's state of one lock.
type ServerLock struct {
	Name    string
	Holders []Holder
	Queue   []Request
}

// Server is the lock server's state.
type Server struct {
	Self   node.ID
	Locks  []*ServerLock // by name
	Grants int64
	// Sweeps counts the lease sweeps: the server's periodic timer, which
	// also keeps a quiet (or stuck) system's clock moving.
	Sweeps int64
}

// Entry is a clerk's cached state of one lock.
type Entry struct {
	Name string
	Held Mode // what the server granted this clerk (None: not cached)
	// Users is the number of local tasks using the lock; LocalX whether
	// one of them uses it exclusively.
	Users  int
	LocalX bool
	// The lock's flags: a revoke is pending (new local users wait), a
	// request or a release is in flight, a local upgrade is waiting for
	// the users to leave.
	Revoke, Requesting, Releasing, Upgrading bool
}

// Client is a clerk's state. Its workers and revokers are tasks.
type Client struct {
	Self    node.ID
	Entries []*Entry
	Mu      node.Mutex
	Changed node.Cond // broadcast whenever an entry changes
	Sockets node.Semaphore
	// Done counts completed lock uses per mode, for the curious.
	DoneShared, DoneExclusive int64

	bug     string
	tasks   int
	holdMax time.Duration
}

// Params and their defaults.
const (
	defaultLocks = 2
	defaultTasks = 4
)

var lockNames = []string{"a", "b", "c", "d", "e", "f", "g", "h"}

// New builds a node's handler.
func New(id node.ID, cfg system.Config) node.Handler {
	locks, _ := intParam(cfg, "locks", defaultLocks)
	if id == ServerID {
		s := &Server{Self: id}
		for _, n := range lockNames[:locks] {
			s.Locks = append(s.Locks, &ServerLock{Name: n})
		}
		return s
	}
	tasks, _ := intParam(cfg, "tasks", defaultTasks)
	c := &Client{Self: id, bug: cfg.Bug, tasks: tasks, holdMax: 40 * time.Millisecond}
	c.Mu.Name = "clerk"
	c.Changed.Name = "entry changed"
	c.Sockets.Name = "sockets"
	c.Sockets.Size = tasks + locks // every worker and every revoker can hold one at once
	if c.bug == "deadlock" {
		c.Sockets.Size = 1
	}
	for _, n := range lockNames[:locks] {
		c.Entries = append(c.Entries, &Entry{Name: n})
	}
	return c
}

// Server.

const sweepEvery = 100 * time.Millisecond

func (s *Server) Init(env node.Env) { env.After(sweepEvery, "sweep") }

func (s *Server) Timer(env node.Env, t node.Timer) {
	s.Sweeps++
	env.After(sweepEvery, "sweep")
}

func (s *Server) lock(name string) *ServerLock {
	for _, l := range s.Locks {
		if l.Name == name {
			return l
		}
	}
	return nil
}

func (s *Server) Receive(env node.Env, from node.ID, m node.Message) {
	switch m := m.(type) {
	case Acquire:
		l := s.lock(m.Lock)
		if l == nil {
			return
		}
		l.Queue = append(l.Queue, Request{Client: from, Mode: m.Mode})
		s.serve(env, l)
	case Release:
		env.Send(from, ReleaseAck{Lock: m.Lock})
		l := s.lock(m.Lock)
		if l == nil {
			return
		}
		l.Holders = slices.DeleteFunc(l.Holders, func(h Holder) bool { return h.Client == from })
		s.serve(env, l)
	}
}

func compatible(hs []Holder, m Mode) bool {
	if m == Exclusive {
		return len(hs) == 0
	}
	return !slices.ContainsFunc(hs, func(h Holder) bool { return h.Mode == Exclusive })
}

// serve grants queued requests in order while they are compatible, then
// revokes the lock from the holders that block the queue's head.
func (s *Server) serve(env node.Env, l *ServerLock) {
	for len(l.Queue) > 0 && compatible(l.Holders, l.Queue[0].Mode) {
		r := l.Queue[0]
		l.Queue = l.Queue[1:]
		l.Holders = append(l.Holders, Holder{Client: r.Client, Mode: r.Mode})
		s.Grants++
		env.Send(r.Client, Grant{Lock: l.Name, Mode: r.Mode})
	}
	if len(l.Queue) == 0 {
		return
	}
	for i := range l.Holders {
		h := &l.Holders[i]
		if !h.Revoked {
			h.Revoked = true
			env.Send(h.Client, Revoke{Lock: l.Name})
		}
	}
}

// Clerk.

func (c *Client) Init(env node.Env) {
	for i := range c.tasks {
		node.Go(env, fmt.Sprintf("worker%d", i+1), c.worker)
	}
}

func (c *Client) Timer(env node.Env, t node.Timer) {}

// Receive gets what no task waits for: revokes (each starts a revoker)
// and replies that came after their call gave up (none: calls here wait).
func (c *Client) Receive(env node.Env, from node.ID, m node.Message) {
	if r, ok := m.(Revoke); ok {
		node.Go(env, "revoke "+r.Lock, func(t *node.Task) { c.revoke(t, r.Lock) })
	}
}

func (c *Client) entry(name string) *Entry {
	for _, e := range c.Entries {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// worker acquires a random lock in a random mode, holds it, releases it,
// thinks, forever.
func (c *Client) worker(t *node.Task) {
	for {
		r := t.Rand()
		e := c.Entries[r.IntN(len(c.Entries))]
		mode := Shared
		if r.IntN(2) == 0 {
			mode = Exclusive
		}
		hold := time.Duration(1+r.Int64N(int64(c.holdMax/time.Millisecond))) * time.Millisecond
		think := time.Duration(r.Int64N(5)) * time.Millisecond
		c.acquire(t, e, mode)
		t.Sleep(hold)
		c.release(t, e, mode)
		if think > 0 {
			t.Sleep(think)
		}
	}
}

// blocked reports whether a new local user must wait for e's flags.
func (c *Client) blocked(e *Entry) bool {
	return e.Requesting || e.Releasing || e.Upgrading || e.Revoke && c.bug != "livelock"
}

// acquire returns once the task may use e in mode.
func (c *Client) acquire(t *node.Task, e *Entry, mode Mode) {
	c.Mu.Lock(t)
	defer c.Mu.Unlock(t)
	for {
		switch {
		case c.blocked(e):
			c.Changed.Wait(t, &c.Mu)
		case e.Held.covers(mode):
			if mode == Exclusive && e.Users > 0 || mode == Shared && e.LocalX {
				c.Changed.Wait(t, &c.Mu) // busy here
				continue
			}
			e.Users++
			e.LocalX = mode == Exclusive
			return
		case e.Held == Shared:
			// Upgrade by releasing first: wait for the local readers,
			// give the shared hold back, then ask for exclusive.
			if e.Users > 0 {
				e.Upgrading = true
				for e.Users > 0 {
					c.Changed.Wait(t, &c.Mu)
				}
				e.Upgrading = false
			}
			if e.Held == Shared && !e.Releasing {
				c.giveBack(t, e)
			}
		default: // not cached: ask the server
			e.Requesting = true
			g := c.callServer(t, Acquire{Lock: e.Name, Mode: mode}, func(m node.Message) bool {
				g, ok := m.(Grant)
				return ok && g.Lock == e.Name
			})
			e.Requesting = false
			e.Held = g.(Grant).Mode
			// The requester uses what it asked for, even if a revoke
			// came meanwhile: the revoker waits for it.
			e.Users++
			e.LocalX = mode == Exclusive
			c.Changed.Broadcast(t)
			return
		}
	}
}

// release ends the task's use of e.
func (c *Client) release(t *node.Task, e *Entry, mode Mode) {
	c.Mu.Lock(t)
	e.Users--
	if mode == Exclusive {
		e.LocalX = false
		c.DoneExclusive++
	} else {
		c.DoneShared++
	}
	c.Changed.Broadcast(t)
	c.Mu.Unlock(t)
}

// callServer sends msg to the server and waits for the reply match
// accepts, through one of the clerk's sockets; the clerk's mutex, held on
// entry, is released while it waits.
func (c *Client) callServer(t *node.Task, msg node.Message, match func(node.Message) bool) node.Message {
	c.Mu.Unlock(t)
	c.Sockets.Acquire(t)
	reply, _ := t.Call(ServerID, msg, match, 0)
	c.Sockets.Release(t)
	c.Mu.Lock(t)
	return reply
}

// giveBack returns e to the server; the clerk's mutex is held, and is
// released during the call.
func (c *Client) giveBack(t *node.Task, e *Entry) {
	e.Releasing = true
	e.Held = None // no local use from here on
	c.callServer(t, Release{Lock: e.Name}, func(m node.Message) bool {
		a, ok := m.(ReleaseAck)
		return ok && a.Lock == e.Name
	})
	e.Releasing = false
	e.Revoke = false
	c.Changed.Broadcast(t)
}

// revoke runs at a revoke: raise the flag, wait for the users to leave,
// give the lock back.
func (c *Client) revoke(t *node.Task, name string) {
	e := c.entry(name)
	if e == nil {
		return
	}
	c.Mu.Lock(t)
	defer c.Mu.Unlock(t)
	if e.Held == None && !e.Requesting {
		return // already given back (an upgrade released first)
	}
	if c.bug == "livelock" {
		// BUG: no flag; retry the release until the lock happens to be idle.
		for e.Users > 0 || e.Requesting || e.Releasing {
			c.Mu.Unlock(t)
			t.Sleep(time.Millisecond)
			c.Mu.Lock(t)
		}
	} else {
		e.Revoke = true
		c.Changed.Broadcast(t)
		for e.Users > 0 || e.Requesting || e.Releasing {
			c.Changed.Wait(t, &c.Mu)
		}
	}
	if e.Held != None {
		c.giveBack(t, e)
	}
	e.Revoke = false
	c.Changed.Broadcast(t)
}

// System is the lock service as the replay tool knows it.
var System = &system.System{
	Name:    "lockserver",
	Summary: "Boxwood-style lock service: clerks with worker tasks cache shared/exclusive locks; the server queues and revokes",
	Codec:   node.NewCodec().MustRegister(Acquire{}, Grant{}, Release{}, ReleaseAck{}, Revoke{}),
	New:     New,
	NodeName: func(i int) node.ID {
		if i == 0 {
			return ServerID
		}
		return node.ID("c" + strconv.Itoa(i))
	},
	Bugs: []system.Bug{
		{Name: "livelock", Summary: "a revoker retries the release in a tight loop instead of raising the lock's flag; busy clerks never give locks back"},
		{Name: "deadlock", Summary: "a socket pool of one: acquirers hold the only socket while queued, revokers cannot give locks back"},
	},
	Sim: system.SimDefaults{
		Nodes:      5,
		LatencyMin: time.Millisecond,
		LatencyMax: 5 * time.Millisecond,
		Steps:      200_000,
		Time:       5 * time.Second,
	},
	Params: []system.Param{
		{Name: "locks", Default: strconv.Itoa(defaultLocks), Summary: fmt.Sprintf("locks the clerks contend for (1..%d)", len(lockNames))},
		{Name: "tasks", Default: strconv.Itoa(defaultTasks), Summary: "worker tasks per clerk (1..64)"},
	},
	Validate: func(cfg system.Config) error {
		if len(cfg.Nodes) < 2 || cfg.Nodes[len(cfg.Nodes)-1] != ServerID {
			return fmt.Errorf("lockserver: needs a server and at least one clerk (--nodes 2 or more)")
		}
		if n, err := intParam(cfg, "locks", defaultLocks); err != nil || n < 1 || n > len(lockNames) {
			return fmt.Errorf("lockserver: --param locks=%s: want a number between 1 and %d", cfg.Param("locks", ""), len(lockNames))
		}
		if n, err := intParam(cfg, "tasks", defaultTasks); err != nil || n < 1 || n > 64 {
			return fmt.Errorf("lockserver: --param tasks=%s: want a number between 1 and 64", cfg.Param("tasks", ""))
		}
		return nil
	},
}

func intParam(cfg system.Config, name string, def int) (int, error) {
	v, ok := cfg.Params[name]
	if !ok {
		return def, nil
	}
	return strconv.Atoi(v)
}
