package shrink

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/system"
)

// jobs is a system whose server starts a task per request: the task asks
// the worker and waits for its answer. Task ids count the tasks a node
// started, so leaving a request out renumbers every later task.
type (
	Job  struct{ ID int }
	Work struct{ ID int }
	Done struct{ ID int }
)

type jobsNode struct{ Finished []int }

func (n *jobsNode) Init(node.Env) {}
func (n *jobsNode) Receive(env node.Env, from node.ID, m node.Message) {
	if w, ok := m.(Work); ok {
		env.Send(from, Done(w))
	}
}
func (n *jobsNode) Timer(node.Env, node.Timer) {}
func (n *jobsNode) Input(env node.Env, m node.Message) {
	id := m.(Job).ID
	node.Go(env, "job", func(t *node.Task) {
		t.Send("n2", Work{id})
		_, _, ok := t.Recv(func(_ node.ID, m node.Message) bool { d, ok := m.(Done); return ok && d.ID == id }, time.Second)
		if ok {
			n.Finished = append(n.Finished, id)
		}
	})
}

var jobsSystem = &system.System{
	Name:  "jobs",
	Codec: node.NewCodec().MustRegister(Job{}, Work{}, Done{}),
	New:   func(node.ID, system.Config) node.Handler { return &jobsNode{} },
	Sim:   system.SimDefaults{Nodes: 2, LatencyMin: time.Millisecond, LatencyMax: 3 * time.Millisecond, Steps: 10_000, Time: time.Second},
	Scenario: func(ctl system.Controller) {
		for i := range 10 {
			ctl.At(time.Duration(i+1)*time.Millisecond, func() { ctl.Input("n1", Job{i}) })
		}
	},
}

// A run that fails only by the eighth request's task shrinks to that
// request alone: a task's resumption is recognised by the event that woke
// it, not by its id, which every request left out renumbered (so no
// candidate without the first requests could follow its base, and a new
// user's two-phase commit kept 180 unrelated events).
func TestShrinkLeavesOutRequestsBeforeATasksOne(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed = 1
	var buf bytes.Buffer
	if _, err := sim.Run(jobsSystem, cfg.WithDefaults(jobsSystem), &buf); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "jobs.star")
	os.WriteFile(script, []byte(`N = table("shrink.jobsNode")
safety("NoJob7", lambda: forall(N, lambda n: 7 not in n.Finished))
`), 0o644)
	opts := Options{Script: script, Check: simtest.Options{Registry: system.NewRegistry(jobsSystem)}, Time: 30 * time.Second}
	res, err := Shrink(context.Background(), jobsSystem, buf.Bytes(), opts)
	if err != nil {
		t.Fatal(err)
	}
	// Two inits, the request, its task's two runs, the work and its
	// answer: 7 events.
	if res.After.Events > 8 {
		t.Fatalf("shrunk %d events to %d, want at most 8", res.Before.Events, res.After.Events)
	}
}

// With the first request left out every later task has another id. Each
// task resumption of the candidate stands for the base's resumption that
// the same event woke (or for none): matched by id, or in order, it stood
// for another request's task, and what it sent for that task's messages.
func TestTaskResumesFollowTheEventThatWokeThem(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed = 1
	cfg = cfg.WithDefaults(jobsSystem)
	var buf bytes.Buffer
	if _, err := sim.Run(jobsSystem, cfg, &buf); err != nil {
		t.Fatal(err)
	}
	f, tr := readTrace(t, buf.Bytes())
	b, err := newBase(f, tr)
	if err != nil {
		t.Fatal(err)
	}
	at := map[nodeSeq]int{} // the base's entries by event
	drop := -1
	for i, e := range b.entries {
		at[nodeSeq{e.ev.Node, e.ev.Seq}] = i
		if drop < 0 && e.Kind == node.KindInput {
			drop = i
		}
	}
	keep := all(len(b.entries))
	keep[drop] = false
	ch := newChooser(b, keep, policy{}, 2*cfg.LatencyMax)
	cfg.Chooser, cfg.Observe = ch, ch.observe
	var out bytes.Buffer
	s := &shrinker{sys: jobsSystem} // the scenario without the request
	if _, err := sim.Run(s.filtered(b, keep, b.nodes), cfg, &out); err != nil {
		t.Fatal(err)
	}
	again, _ := readTrace(t, out.Bytes())
	followed := 0
	for _, ev := range again.Events {
		m, ok := ch.seqs[nodeSeq{ev.Node, ev.Seq}]
		if ev.Kind != node.KindTask || !ok || m < 0 {
			continue
		}
		base := b.entries[m].ev
		wokeBase := at[nodeSeq{base.Node, base.WakeSeq}]
		woke, ok := ch.seqs[nodeSeq{ev.Node, ev.WakeSeq}]
		if !ok || woke != wokeBase {
			t.Fatalf("%s task %d (woken by seq %d, base entry %d) stands for the base's task %d, woken by entry %d", ev.Node, ev.Task, ev.WakeSeq, woke, base.Task, wokeBase)
		}
		followed++
	}
	if followed == 0 {
		t.Fatal("no task of the candidate stood for one of the base")
	}
}
