package sim_test

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// stuck's handler at n2 blocks on its third timer until release closes
// (a Go channel: what a user's handler must not do), or calls
// runtime.Goexit there.
type stuck struct {
	Ticks   int
	release chan struct{}
	goexit  bool
}

func (s *stuck) Init(env node.Env)                       { env.After(time.Millisecond, "tick") }
func (s *stuck) Receive(node.Env, node.ID, node.Message) {}
func (s *stuck) Timer(env node.Env, _ node.Timer) {
	s.Ticks++
	if env.Self() == "n2" && s.Ticks == 3 {
		if s.goexit {
			runtime.Goexit()
		}
		<-s.release
	}
	env.After(time.Millisecond, "tick")
}

func stuckSystem(t *testing.T, goexit bool) *system.System {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // lets the left-behind handler go
	return &system.System{Name: "stuck", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &stuck{release: release, goexit: goexit} },
		Sim: system.SimDefaults{Nodes: 2, Time: time.Second}}
}

// endsBeforeTheStuckEvent reads the trace a stalled run wrote: whole,
// ended, n2's third timer not in it.
func endsBeforeTheStuckEvent(t *testing.T, data []byte) {
	t.Helper()
	tr := readTrace(t, data)
	timers := 0
	for i := range tr.Len() {
		if ev := tr.Event(i); ev.Node == "n2" && ev.Kind == node.KindTimer {
			timers++
		}
	}
	if timers != 2 {
		t.Fatalf("the trace holds %d of n2's timers, want the 2 before the stuck one", timers)
	}
}

// A handler that never returns does not hang the run: past the handler
// bound it ends with a StallError naming the node and event, and the
// trace holds every event before it. Before, sim, hunts and explore hung
// for good, and a signal lost the whole trace.
func TestAHandlerThatNeverReturnsEndsTheRun(t *testing.T) {
	sys := stuckSystem(t, false)
	cfg := sim.DefaultConfig()
	cfg.HandlerBound = 500 * time.Millisecond
	var buf bytes.Buffer
	_, err := sim.Run(sys, cfg.WithDefaults(sys), &buf)
	var se *sim.StallError
	if !errors.As(err, &se) || se.Node != "n2" || se.Kind != node.KindTimer || !strings.Contains(err.Error(), "did not return from its timer event") {
		t.Fatalf("got %v", err)
	}
	endsBeforeTheStuckEvent(t, buf.Bytes())
}

// A stop asked for while a handler is stuck ends the run as interrupted
// within about a second, keeping the trace, and OnStall is told first
// when the handler runs long.
func TestAStopEndsARunStuckInAHandler(t *testing.T) {
	sys := stuckSystem(t, false)
	cfg := sim.DefaultConfig()
	var stop atomic.Bool
	start := time.Now()
	cfg.Stop = func() bool {
		if time.Since(start) > 300*time.Millisecond {
			stop.Store(true)
		}
		return stop.Load()
	}
	var buf bytes.Buffer
	_, err := sim.Run(sys, cfg.WithDefaults(sys), &buf)
	if !errors.Is(err, sim.ErrInterrupted) || !strings.Contains(err.Error(), "node n2's handler had not returned") {
		t.Fatalf("got %v", err)
	}
	endsBeforeTheStuckEvent(t, buf.Bytes())
}

// runtime.Goexit in a handler ends the goroutine every handler runs on;
// the run ends with an error saying so (it hung with no trace).
func TestGoexitInAHandlerEndsTheRun(t *testing.T) {
	sys := stuckSystem(t, true)
	cfg := sim.DefaultConfig()
	var buf bytes.Buffer
	_, err := sim.Run(sys, cfg.WithDefaults(sys), &buf)
	if err == nil || !strings.Contains(err.Error(), "called runtime.Goexit in its timer event") {
		t.Fatalf("got %v", err)
	}
	endsBeforeTheStuckEvent(t, buf.Bytes())
}

// runtime.Goexit outside a handler (t.FailNow in an observer, say) ends
// the run with an error and its trace whole up to there; it returned no
// result and left the trace unended.
func TestGoexitOutsideAHandlerEndsTheRun(t *testing.T) {
	sys := pingSystem(nil)
	cfg := sim.DefaultConfig()
	steps := 0
	cfg.Observe = func(*node.Event, *node.Instance) error {
		if steps++; steps == 50 {
			runtime.Goexit()
		}
		return nil
	}
	var buf bytes.Buffer
	res, err := sim.Run(sys, cfg.WithDefaults(sys), &buf)
	if err == nil || !strings.Contains(err.Error(), "runtime.Goexit was called outside a handler") || res == nil || res.Steps < 49 {
		t.Fatalf("result %+v, error %v", res, err)
	}
	if tr := readTrace(t, buf.Bytes()); tr.Len() < 49 {
		t.Fatalf("the trace holds %d events", tr.Len())
	}
}
