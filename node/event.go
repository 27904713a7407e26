package node

import (
	"fmt"
	"log/slog"
	"time"
)

// Kind is the kind of an event.
type Kind uint8

// The event kinds. A crash runs no handler: the node's volatile state is
// lost and its timers are cancelled; its Disk survives.
const (
	KindInit Kind = iota + 1
	KindRecv
	KindTimer
	KindInput
	KindRestart
	KindCrash
	// KindTask resumes a runnable task (see Go): the task runs until it
	// blocks through the runtime or returns.
	KindTask
)

var kindNames = [...]string{"", "init", "recv", "timer", "input", "restart", "crash", "task"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Kinds lists every valid kind in numeric order.
func Kinds() []Kind {
	return []Kind{KindInit, KindRecv, KindTimer, KindInput, KindRestart, KindCrash, KindTask}
}

// ParseKind parses a kind's name as printed by String.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds() {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown event kind %q (valid: init, recv, timer, input, restart, crash, task)", s)
}

// NondetKind says what a consumed nondeterministic value was.
type NondetKind uint8

// The kinds of nondeterministic values a handler can consume.
const (
	NondetClock  NondetKind = iota + 1 // Env.Now: Int is the time in Unix ns
	NondetSeed                         // first Env.Rand of the event: Int is the seed
	NondetDisk                         // Disk.Get: Key, Found, Bytes
	NondetCrypto                       // a read of crypto/rand by the handler: Bytes
)

var nondetNames = [...]string{"", "clock", "seed", "disk", "crypto"}

func (k NondetKind) String() string {
	if int(k) < len(nondetNames) && k != 0 {
		return nondetNames[k]
	}
	return fmt.Sprintf("nondet(%d)", uint8(k))
}

// Nondet is one nondeterministic value consumed by a handler, in the order
// it was consumed.
type Nondet struct {
	Kind  NondetKind
	Int   int64 // clock (Unix ns) or seed (as int64 bits)
	Key   string
	Found bool
	Bytes []byte
}

// MsgID identifies a message: the sending node, the sequence number of the
// event that sent it, and its index among that event's sends.
type MsgID struct {
	From  ID
	Seq   uint64
	Index uint32
}

func (m MsgID) String() string { return fmt.Sprintf("%s/%d/%d", m.From, m.Seq, m.Index) }

// Send is one message sent by an event. Payload is kept in memory for the
// driver to deliver; traces record only To, Type and Digest (the receiver
// records the content).
type Send struct {
	To      ID
	Type    string
	Digest  uint64
	Payload []byte
}

// TimerSet is one timer set by an event.
type TimerSet struct {
	ID    TimerID
	Name  string
	After time.Duration
}

// LogLine is one line a handler logged during an event. Log lines are not
// recorded: a replay regenerates them.
type LogLine struct {
	Level slog.Level
	Msg   string
	Attrs string
}

// Event is one handler invocation at one node: what triggered it (filled in
// by the driver), and what the Instance observed while dispatching it.
type Event struct {
	// Set by Instance.Dispatch.
	Node    ID
	Seq     uint64 // per-node, 1 for the first event, contiguous
	Lamport uint64

	// Inputs, set by the driver before Dispatch.
	Kind Kind
	Time int64 // Unix ns (virtual in the simulator)

	// recv: the message's identity, clock and content.
	From        ID
	MsgSeq      uint64
	MsgIndex    uint32
	SendLamport uint64
	// recv and input: registered type name and canonical encoding.
	MsgType string
	Payload []byte

	// timer
	TimerID   TimerID
	TimerName string

	// task: the task resumed; its name, what made it runnable and the seq
	// of this node's event that did (recorded so that a trace shows what
	// unblocked it; replay checks them).
	Task     TaskID
	TaskName string
	Wake     string
	WakeSeq  uint64

	// Consumed nondeterminism, in order.
	Nondet []Nondet

	// Effects.
	Sends           []Send
	TimersSet       []TimerSet
	TimersCancelled []TimerID
	DiskWrites      int
	DiskDigest      uint64 // digest of the disk writes in order (0 if none)

	// Scripted marks a crash or restart the simulated scenario asked for
	// (ctl.Crash, ctl.Restart): it ran after the scenario actions of its
	// instant that were queued before it, where a fault a chooser or
	// churn injected ran before them. A schedule re-run needs to know.
	Scripted bool

	// StateHash is the canonical hash of the handler's observed state after
	// the event, when HasStateHash.
	StateHash    uint64
	HasStateHash bool

	// Logs are regenerated on every dispatch and never recorded.
	Logs []LogLine

	// Woken lists the tasks this event made runnable, in order; the
	// driver schedules a resume (a task event) for each. Not recorded:
	// replay derives it again.
	Woken []TaskID
}

// Msg returns the identity of the message a recv event received.
func (e *Event) Msg() MsgID { return MsgID{From: e.From, Seq: e.MsgSeq, Index: e.MsgIndex} }

// SentMsg returns the identity of the i-th message this event sent.
func (e *Event) SentMsg(i int) MsgID { return MsgID{From: e.Node, Seq: e.Seq, Index: uint32(i)} }

// ResetOutputs clears everything but the inputs, so an Event can be dispatched
// again (replay re-dispatches recorded inputs).
func (e *Event) ResetOutputs() {
	e.Node, e.Seq, e.Lamport = "", 0, 0
	e.Nondet = e.Nondet[:0]
	e.Sends = e.Sends[:0]
	e.TimersSet = e.TimersSet[:0]
	e.TimersCancelled = e.TimersCancelled[:0]
	e.DiskWrites, e.DiskDigest = 0, 0
	e.StateHash, e.HasStateHash = 0, false
	e.Logs = e.Logs[:0]
	e.Woken = e.Woken[:0]
}

// Inputs returns a copy of e holding only the driver-set inputs.
func (e *Event) Inputs() Event {
	return Event{
		Kind: e.Kind, Time: e.Time,
		From: e.From, MsgSeq: e.MsgSeq, MsgIndex: e.MsgIndex, SendLamport: e.SendLamport,
		MsgType: e.MsgType, Payload: e.Payload,
		TimerID: e.TimerID, TimerName: e.TimerName,
		Task: e.Task, TaskName: e.TaskName, Wake: e.Wake, WakeSeq: e.WakeSeq,
	}
}
