package replay

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

type tidJob struct{ ID int }
type tidDone struct{ ID int }

// tidWorker starts a short task for every input: between inputs it has
// no live task, so checkpoints copy it, while its task IDs keep counting.
type tidWorker struct{ Started, Done int }

func (w *tidWorker) Init(node.Env) {}
func (w *tidWorker) Input(env node.Env, in node.Message) {
	j := in.(tidJob)
	w.Started++
	node.Go(env, fmt.Sprintf("job %d", j.ID), func(t *node.Task) {
		for k := 0; k <= j.ID%3; k++ {
			t.Sleep(time.Millisecond)
		}
		w.Done++
		t.Send("n2", tidDone{ID: j.ID})
	})
}
func (w *tidWorker) Receive(node.Env, node.ID, node.Message) {}
func (w *tidWorker) Timer(node.Env, node.Timer)              {}

type tidSink struct{ Got int }

func (s *tidSink) Init(node.Env)                           {}
func (s *tidSink) Receive(node.Env, node.ID, node.Message) { s.Got++ }
func (s *tidSink) Timer(node.Env, node.Timer)              {}

var taskIDs = &system.System{
	Name:  "taskids",
	Codec: node.NewCodec().MustRegister(tidJob{}, tidDone{}),
	New: func(id node.ID, _ system.Config) node.Handler {
		if id == "n1" {
			return &tidWorker{}
		}
		return &tidSink{}
	},
	Sim: system.SimDefaults{Nodes: 2, Time: 2 * time.Second},
	Scenario: func(ctl system.Controller) {
		for i := 1; i <= 150; i++ {
			j := tidJob{ID: i}
			ctl.At(time.Duration(i)*10*time.Millisecond, func() { ctl.Input("n1", j) })
		}
	},
}

// TestSeekBackRestoresTheTaskCounter: a node restored from a checkpoint
// taken while it had no live task goes on numbering its tasks where it
// was. Before, the checkpoint kept no task counter, the next task the
// rebuilt node started was task 1, and the seek failed with "task N is
// not a live task" (a new user's debugger, stepping back with a watch).
func TestSeekBackRestoresTheTaskCounter(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed = 1
	tr := simulated(t, taskIDs, cfg)
	r, err := New(tr, system.NewRegistry(taskIDs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := NewCursor(r, 50)
	if err != nil {
		t.Fatal(err)
	}
	last := tr.Len() - 1
	if err := c.Seek(last); err != nil {
		t.Fatal(err)
	}
	for _, target := range []int{last / 2, last / 3, last - 7, 10, last} {
		if err := c.Seek(target); err != nil {
			t.Fatalf("seek to #%d: %v", target, err)
		}
		if err := c.Seek(min(last, target+120)); err != nil {
			t.Fatalf("forward from #%d: %v", target, err)
		}
	}
}

// simulated is a simulated run of sys under cfg (its defaults filled in),
// loaded.
func simulated(t *testing.T, sys *system.System, cfg sim.Config) *Trace {
	t.Helper()
	var buf bytes.Buffer
	if _, err := sim.Run(sys, cfg.WithDefaults(sys), &buf); err != nil {
		t.Fatal(err)
	}
	tr, err := FromBytes(buf.Bytes(), sys.Name+".lz4")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
