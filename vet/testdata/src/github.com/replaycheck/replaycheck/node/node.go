// Package node is a stand-in for the real node package with the same
// import path and the same Handler and Env, so the testdata type-checks
// in analysistest's GOPATH layout.
package node

import (
	"math/rand/v2"
	"time"
)

type ID string

type Message = any

type TimerID uint64

type Timer struct {
	ID   TimerID
	Name string
}

type Handler interface {
	Init(env Env)
	Receive(env Env, from ID, m Message)
	Timer(env Env, t Timer)
}

type Env interface {
	Self() ID
	Peers() []ID
	Send(to ID, m Message)
	After(d time.Duration, name string) TimerID
	Cancel(id TimerID)
	Now() time.Time
	Rand() *rand.Rand
}

// Task and Mutex stand in for the runtime's tasks: they block on channels
// by design, which the analyzer must not blame on the handler.
type Task struct{ resume chan bool }

func (t *Task) Sleep(d time.Duration) { <-t.resume }

type Mutex struct{ holder uint64 }

func (m *Mutex) Lock(t *Task) { t.resume <- true }

func Go(env Env, name string, fn func(t *Task)) uint64 { return 0 }
