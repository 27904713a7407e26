// Package dd is a scripted test system for the predicate engine's
// data-driven tests: every input sets a piece of a node's state directly, so
// a test reads as "these state changes, this script, this report".
package dd

import (
	"slices"
	"strconv"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// Item is a row type nested in a list.
type Item struct {
	Key string
	Val int
}

// Inner is a nested struct.
type Inner struct{ X int }

// Cell is the node's state.
type Cell struct {
	V     int
	Name  string
	Peer  node.ID
	Items []Item
	Tags  map[string]int
	Inner Inner
	Got   int
	At    time.Time
	// Nums is a list of plain integers: the checker hashes it as raw
	// bytes, and "poke" changes an element in place.
	Nums   []int
	Hidden int                     `replay:"-"`
	timers map[string]node.TimerID `replay:"-"`
}

// Cmd is the input: Op and its arguments.
type Cmd struct {
	Op   string
	Args []string
}

// Ping is the only message.
type Ping struct{}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic("dd: not a number: " + s)
	}
	return n
}

// Init implements node.Handler.
func (c *Cell) Init(env node.Env) {
	c.Tags = map[string]int{}
	c.timers = map[string]node.TimerID{}
}

// Receive implements node.Handler.
func (c *Cell) Receive(env node.Env, from node.ID, m node.Message) { c.Got++ }

// Timer implements node.Handler.
func (c *Cell) Timer(env node.Env, t node.Timer) { delete(c.timers, t.Name) }

// Input implements node.Inputter.
func (c *Cell) Input(env node.Env, in node.Message) {
	cmd := in.(Cmd)
	a := cmd.Args
	switch cmd.Op {
	case "set":
		switch a[0] {
		case "V":
			c.V = atoi(a[1])
		case "Name":
			c.Name = a[1]
		case "Peer":
			c.Peer = node.ID(a[1])
		case "X":
			c.Inner.X = atoi(a[1])
		case "Hidden":
			c.Hidden = atoi(a[1])
		default:
			panic("dd: unknown field " + a[0])
		}
	case "push":
		c.Nums = append(c.Nums, atoi(a[0]))
	case "poke":
		c.Nums[atoi(a[0])] = atoi(a[1])
	case "trunc":
		c.Nums = c.Nums[:atoi(a[0])]
	case "add":
		c.Items = append(c.Items, Item{Key: a[0], Val: atoi(a[1])})
	case "del":
		c.Items = slices.DeleteFunc(c.Items, func(it Item) bool { return it.Key == a[0] })
	case "tag":
		c.Tags[a[0]] = atoi(a[1])
	case "untag":
		delete(c.Tags, a[0])
	case "timer":
		c.timers[a[0]] = env.After(time.Duration(atoi(a[1]))*time.Millisecond, a[0])
	case "cancel":
		env.Cancel(c.timers[a[0]])
		delete(c.timers, a[0])
	case "send":
		env.Send(node.ID(a[0]), Ping{})
	case "stamp":
		c.At = env.Now()
	case "nop":
	default:
		panic("dd: unknown op " + cmd.Op)
	}
}

// System is the scripted system; the scenario is set by the test.
var System = &system.System{
	Name:  "dd",
	Codec: node.NewCodec().MustRegister(Cmd{}, Ping{}),
	New:   func(node.ID, system.Config) node.Handler { return &Cell{} },
	Sim:   system.SimDefaults{Nodes: 3, LatencyMin: time.Millisecond, LatencyMax: time.Millisecond, Steps: 100_000, Time: time.Hour},
}
