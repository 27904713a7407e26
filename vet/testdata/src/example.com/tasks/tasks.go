// Package tasks holds a handler whose tasks block through the runtime
// (no finding) and one task that blocks on a real channel (a finding).
package tasks

import (
	"time"

	"github.com/replaycheck/replaycheck/node"
)

type Node struct {
	Mu   node.Mutex
	Uses int
	ch   chan int
}

func (n *Node) Init(env node.Env) { // want Init:`reaches\(channel:channel receive\)`
	node.Go(env, "worker", n.worker)
	node.Go(env, "bad", func(t *node.Task) {
		<-n.ch // want `a channel operation exchanges values with`
	})
}

func (n *Node) worker(t *node.Task) {
	for {
		n.Mu.Lock(t)
		n.Uses++
		t.Sleep(time.Millisecond)
	}
}

func (n *Node) Receive(env node.Env, from node.ID, m node.Message) {}
func (n *Node) Timer(env node.Env, t node.Timer)                   {}
