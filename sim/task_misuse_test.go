package sim_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

type unlocker struct{ Mu node.Mutex }

func (u *unlocker) Init(env node.Env) {
	node.Go(env, "badunlock", func(t *node.Task) { u.Mu.Unlock(t) })
}
func (*unlocker) Receive(node.Env, node.ID, node.Message) {}
func (*unlocker) Timer(node.Env, node.Timer)              {}

// Misusing a runtime lock names the task once: the error read
// `task 1 "badunlock": task 1 "badunlock": Unlock of ...`.
func TestTaskMisuseNamesTheTaskOnce(t *testing.T) {
	sys := &system.System{Name: "unlocker", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &unlocker{} },
		Sim: system.SimDefaults{Nodes: 1, Time: time.Second}}
	cfg := sim.DefaultConfig()
	_, err := sim.Run(sys, cfg.WithDefaults(sys), io.Discard)
	if err == nil || strings.Count(err.Error(), `"badunlock"`) != 1 || !strings.Contains(err.Error(), "Unlock of") {
		t.Fatalf("got %v", err)
	}
}
