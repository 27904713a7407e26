// Package bad is a handler with two findings, for replay vet's tests.
package bad

import (
	"math/rand"
	"time"

	"github.com/replaycheck/replaycheck/node"
)

type Node struct{ Seen map[node.ID]bool }

func (n *Node) Init(env node.Env) { env.After(time.Duration(rand.Intn(100))*time.Millisecond, "tick") }

func (n *Node) Receive(env node.Env, from node.ID, m node.Message) {
	for id := range n.Seen {
		env.Send(id, m)
	}
}

func (n *Node) Timer(env node.Env, t node.Timer) {}
