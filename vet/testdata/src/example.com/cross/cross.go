// Package cross holds a handler that reaches nondeterminism only through
// another package of the module.
package cross

import (
	"example.com/helpers"

	"github.com/replaycheck/replaycheck/node"
)

type N struct {
	Stamp int64
	Peers map[node.ID]int
}

func (n *N) Init(env node.Env) { // want Init:`reaches\(clock:time.Now\)`
	n.Stamp = helpers.Stamp() // want `call of helpers.Stamp reaches time.Now \(example.com/helpers/helpers.go:14, via helpers.now\): time.Now reads the wall clock`
	_ = helpers.Pure(2)
}

func (n *N) Receive(env node.Env, from node.ID, m node.Message) { // want Receive:`reaches\(maporder:the order of calls to Broadcast \(which sends, sets timers or draws from env.Rand\),effects\)`
	for id := range n.Peers { // want `map iteration order is random on every run and here it decides the order of calls to Broadcast`
		helpers.Broadcast(env, id)
	}
}

func (n *N) Timer(env node.Env, t node.Timer) { // want Timer:`reaches\(effects\)`
	helpers.Broadcast(env, "tick")
	_ = helpers.Stamp() //replay:ok silenced at the call: no finding, and Timer's fact stays clean
}

// E gets Pause from helpers.Base: reported at the type, the only place in
// this package that brings it in.
type E struct { // want `handler E's method Pause reaches time.Sleep \(example.com/helpers/helpers.go:\d+\): time.Sleep blocks the event`
	helpers.Base
}

func (e *E) Init(env node.Env)                                  {}
func (e *E) Receive(env node.Env, from node.ID, m node.Message) {}
func (e *E) Timer(env node.Env, t node.Timer)                   {}
