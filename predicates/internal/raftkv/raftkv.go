// Package raftkv is a scripted stand-in for examples/raftkv's observed
// state (type raftkv.Node, the same fields), so that tests can drive
// scripts/raft.star into the violations a real raftkv never shows: logs
// that disagree, entries applied differently, two leaders of one term.
// Each input sets fields or edits the log; log entries carry a hash chain
// computed as raftkv computes it (over the previous chain, the term and
// the data).
package raftkv

import (
	"encoding/binary"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// Entry is one log entry, as examples/raftkv's.
type Entry struct {
	Index uint64
	Term  uint64
	Chain uint64
	Req   uint64
}

// Node has examples/raftkv's observed fields.
type Node struct {
	ID      uint64
	Term    uint64
	Vote    uint64
	Lead    uint64
	Role    string
	Commit  uint64
	Applied uint64
	Log     []Entry
}

// Cmd is an input: "term T", "role R", "commit C", "apply A",
// "append TERM DATA" (a new entry), "trunc N" (keep N entries) or
// "replace N TERM DATA" (keep N entries and append one, in one event: the
// log changes in place, as raftkv's does when a leader overwrites it).
type Cmd struct {
	Op   string
	Args []string
}

func num(s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		panic("raftkv fake: not a number: " + s)
	}
	return n
}

// Init implements node.Handler.
func (n *Node) Init(env node.Env) {
	n.ID = num(string(env.Self())[1:])
	n.Role = "follower"
}

// Receive implements node.Handler.
func (n *Node) Receive(node.Env, node.ID, node.Message) {}

// Timer implements node.Handler.
func (n *Node) Timer(node.Env, node.Timer) {}

// Input implements node.Inputter.
func (n *Node) Input(env node.Env, in node.Message) {
	c := in.(Cmd)
	switch c.Op {
	case "term":
		n.Term = num(c.Args[0])
	case "role":
		n.Role = c.Args[0]
	case "commit":
		n.Commit = num(c.Args[0])
	case "apply":
		n.Applied = num(c.Args[0])
	case "replace":
		n.Log = n.Log[:num(c.Args[0])]
		n.Input(env, Cmd{Op: "append", Args: c.Args[1:]})
	case "append":
		var prev uint64
		if len(n.Log) > 0 {
			prev = n.Log[len(n.Log)-1].Chain
		}
		h := fnv.New64a()
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:], prev)
		binary.LittleEndian.PutUint64(b[8:], num(c.Args[0]))
		h.Write(b[:])
		h.Write([]byte(c.Args[1]))
		n.Log = append(n.Log, Entry{Index: uint64(len(n.Log) + 1), Term: num(c.Args[0]), Chain: h.Sum64()})
	case "trunc":
		n.Log = n.Log[:num(c.Args[0])]
	default:
		panic("raftkv fake: unknown op " + c.Op)
	}
}

// System is the scripted system; the scenario is set by the test.
var System = &system.System{
	Name:  "raftkv",
	Codec: node.NewCodec().MustRegister(Cmd{}),
	New:   func(node.ID, system.Config) node.Handler { return &Node{} },
	Sim:   system.SimDefaults{Nodes: 3, LatencyMin: time.Millisecond, LatencyMax: time.Millisecond, Steps: 100_000, Time: time.Hour},
}
