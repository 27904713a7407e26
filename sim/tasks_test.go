package sim_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// racer runs two tasks that each add 1 to Counter with a read, a yield and
// a write: which task resumes after the first one's yield decides whether
// an update is lost. Only the order of task resumes differs between runs.
type racer struct {
	Counter int
	Done    int
	block   chan struct{}
}

func (r *racer) Init(env node.Env) {
	for _, name := range []string{"left", "right"} {
		node.Go(env, name, func(t *node.Task) {
			if r.block != nil && name == "right" {
				<-r.block // a real channel: the runtime cannot see this block
			}
			v := r.Counter
			t.Yield()
			r.Counter = v + 1
			r.Done++
		})
	}
}
func (r *racer) Receive(node.Env, node.ID, node.Message) {}
func (r *racer) Timer(node.Env, node.Timer)              {}

func racerSystem(block chan struct{}) *system.System {
	return &system.System{
		Name:  "racer",
		Codec: node.NewCodec().MustRegister(Ping{}),
		New:   func(node.ID, system.Config) node.Handler { return &racer{block: block} },
		Sim:   system.SimDefaults{Nodes: 1, Steps: 100, Time: time.Second},
	}
}

// lastFirst is a chooser that always runs the most recently enabled event:
// after a yield, the other task rather than the yielder's turn.
type lastFirst struct{ *sim.Seeded }

func (lastFirst) Describe() string { return "last-first" }
func (lastFirst) Next(c *sim.Choice) (sim.Decision, error) {
	en := c.Enabled()
	if len(en) == 0 {
		return sim.Decision{InTimeOrder: true}, nil
	}
	p := en[len(en)-1]
	return sim.Decision{Index: len(en) - 1, At: max(c.Now(), p.Earliest)}, nil
}

func runRacer(t *testing.T, ch sim.Chooser) (*racer, []byte) {
	t.Helper()
	sys := racerSystem(nil)
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Chooser = 1, ch
	cfg = cfg.WithDefaults(sys)
	var final *racer
	cfg.Observe = func(ev *node.Event, in *node.Instance) error {
		final = in.Handler().(*racer)
		return nil
	}
	var buf bytes.Buffer
	if _, err := sim.Run(sys, cfg, &buf); err != nil {
		t.Fatal(err)
	}
	return final, buf.Bytes()
}

func TestTaskInterleavingIsAChoice(t *testing.T) {
	seeded, trace := runRacer(t, nil)
	if seeded.Done != 2 || seeded.Counter != 1 {
		// left reads, yields; right reads (0), yields; both write 1.
		t.Fatalf("seeded order: counter %d after %d tasks, want the lost update (1 after 2)", seeded.Counter, seeded.Done)
	}
	_, again := runRacer(t, nil)
	if !bytes.Equal(trace, again) {
		t.Fatal("same seed, different traces")
	}
	other, otherTrace := runRacer(t, lastFirst{sim.NewSeeded(1)})
	if other.Done != 2 || other.Counter == seeded.Counter {
		t.Fatalf("a chooser picking the other resume order got counter %d (seeded: %d)", other.Counter, seeded.Counter)
	}
	// Both runs replay exactly, and the schedule of the second, replayed
	// by the schedule chooser, makes the same trace.
	for i, b := range [][]byte{trace, otherTrace} {
		tr, err := replay.FromBytes(b, "racer.lz4")
		if err != nil {
			t.Fatal(err)
		}
		r, err := replay.New(tr, system.NewRegistry(racerSystem(nil)), replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.RunTo(tr.Len(), nil); err != nil {
			t.Fatalf("trace %d: %v", i, err)
		}
	}
	tr, _ := replay.FromBytes(otherTrace, "racer.lz4")
	sc, err := sim.ScheduleOf(tr.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := sc.Format(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "task n1 2 right") {
		t.Fatalf("schedule does not name task resumes:\n%s", text.String())
	}
	parsed, err := sim.ParseSchedule(strings.NewReader(text.String()), "racer.schedule")
	if err != nil {
		t.Fatal(err)
	}
	replayed, _ := runRacer(t, sim.NewScheduleChooser(parsed))
	if replayed.Counter != other.Counter || replayed.Done != 2 {
		t.Fatalf("the schedule replayed to counter %d after %d tasks, want %d after 2", replayed.Counter, replayed.Done, other.Counter)
	}
}

func TestStuckTaskStopsTheRunNamingIt(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	sys := racerSystem(block)
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.TaskBound = 1, 100*time.Millisecond
	_, err := sim.Run(sys, cfg.WithDefaults(sys), io.Discard)
	var stuck *node.TaskStuckError
	if !errors.As(err, &stuck) || stuck.Name != "right" || stuck.Node != "n1" {
		t.Fatalf("got %v, want a TaskStuckError for task right at n1", err)
	}
}
