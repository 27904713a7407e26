// Package node is the API distributed programs are written against, and the
// one dispatch core every driver (simulator, live runtime, replayer) shares.
//
// A program is a Handler: a pointer to a struct whose fields are the node's
// state. The runtime calls one handler method per event. Everything a handler
// may not compute deterministically from its state and the event (the clock,
// randomness, durable storage, crypto/rand) it obtains through Env, so the
// runtime can record it and later serve it back. An Instance owns one handler
// and its runtime state (Lamport clock, per-node sequence number, timer table)
// and turns each event into an Event record: the event's inputs, the
// nondeterministic values consumed in order, and the effects produced.
package node

import (
	"log/slog"
	"math/rand/v2"
	"time"
)

// ID names a node. IDs are compared as strings wherever an order is needed.
type ID string

// Message is a value of a type registered with the system's Codec.
type Message = any

// TimerID identifies a timer within one incarnation of a node. IDs start at
// 1 and restart at 1 after a crash, since a crash clears every timer.
type TimerID uint64

// Timer is what a firing timer tells its handler.
type Timer struct {
	ID   TimerID
	Name string
}

// Handler is a node's program. Implementations are pointers to structs; the
// struct's fields are the node's observed state (fields tagged replay:"-" are
// hidden from predicates and the debugger).
//
// Handlers must be deterministic given their state, the event and what Env
// returns: no goroutines, no time.Now, no global math/rand, no decisions that
// depend on map iteration order, no select. Replay detects a violation of
// this rule as a divergence; it never tolerates one silently.
type Handler interface {
	// Init runs at the first start and again at every restart after a
	// crash, on a fresh handler built by the system's factory.
	Init(env Env)
	// Receive handles one message from another node (or from itself).
	Receive(env Env, from ID, m Message)
	// Timer handles a timer set earlier with Env.After.
	Timer(env Env, t Timer)
}

// Inputter is implemented by handlers that accept external requests (a
// client write, an operator command). Inputs are recorded like messages.
type Inputter interface {
	Input(env Env, in Message)
}

// Env is the handler's only window on the world during one event. It must
// not be retained: its methods panic when no event of the node is running
// (scenario code, another goroutine). One kept and used during a later
// event of the same node acts as that event's Env; do not rely on it.
type Env interface {
	// Self is this node's ID.
	Self() ID
	// Peers lists every other node of the system, sorted; Self is not in it.
	Peers() []ID
	// Send sends m to node to (which may be Self). Delivery is up to the
	// network: a message may be delayed, dropped or duplicated.
	Send(to ID, m Message)
	// After sets a timer that fires after d; name is shown in traces and to
	// predicates. A crash cancels every timer.
	After(d time.Duration, name string) TimerID
	// Cancel cancels a pending timer; cancelling a fired one is a no-op.
	Cancel(id TimerID)
	// Now reads the clock (virtual in the simulator). Recorded.
	Now() time.Time
	// Rand returns a generator seeded from a recorded per-event seed drawn
	// on first use. It is valid for this event only.
	Rand() *rand.Rand
	// Disk is the node's durable key/value store; it survives crashes.
	Disk() Disk
	// Log returns a logger whose lines attach to this event; drivers show
	// them and the debugger displays them at the event's step.
	Log() *slog.Logger
}

// Disk is a node's durable key/value store. Reads are recorded, so a replay
// sees exactly what the recorded run read even without the store's files.
type Disk interface {
	Get(key string) (value []byte, ok bool)
	Put(key string, value []byte)
	Delete(key string)
}
