package predicates_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

// TestSegmentWaitIsNotBudgeted: a segment whose stability measure reads
// since_change after its seam, before the sequential run's state has
// arrived, waits inside the evaluation, then goes on for more than a
// poll's worth of steps. The wait (longer than --script-time here) is not
// counted against the evaluation's time budget: the stitched report is
// the sequential one, with no budget error.
func TestSegmentWaitIsNotBudgeted(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps = 1, 3000
	var buf bytes.Buffer
	if _, err := sim.Run(paxos.System, cfg.WithDefaults(paxos.System), &buf); err != nil {
		t.Fatal(err)
	}
	tr, err := replay.FromBytes(buf.Bytes(), "p.lz4")
	if err != nil {
		t.Fatal(err)
	}
	const budget, wait, mark, warmup = 1500 * time.Millisecond, 4 * time.Second, 650, 50
	src := []byte(`
phase = derived("phase", lambda: event.step // 400)
def work():
    n = 0
    for i in range(5000):
        n += i
    return n
liveness("Late",
         lambda: not (660 <= event.step and event.step < 760),
         aux = lambda: {"since": since_change(phase), "n": work()})
`)
	load := func(r *replay.Replayer, from int) *predicates.Checker {
		c, err := predicates.LoadSource("slow.star", src, r, predicates.Options{From: from, To: -1, TimeBudget: budget})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	newReplay := func() *replay.Replayer {
		r, err := replay.New(tr, examples.Registry(), replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	seq, err := load(newReplay(), 0).Run(predicates.RunOptions{})
	if err != nil || seq.Err() != nil {
		t.Fatalf("--jobs 1: %v %v", err, seq.Err())
	}
	run := func(s *predicates.Segment, to int) {
		for to < 0 || s.Pos()+1 < to {
			if err := s.Step(); err != nil {
				if errors.Is(err, io.EOF) {
					return
				}
				t.Error(err)
				return
			}
		}
	}
	// Segment 2 from a checkpoint before its warm-up.
	pass := newReplay()
	if err := pass.RunTo(mark-warmup-1, nil); err != nil {
		t.Fatal(err)
	}
	r2 := newReplay()
	if err := r2.StartAt(pass.TakeCheckpoint()); err != nil {
		t.Fatal(err)
	}
	prev := make(chan *predicates.Seam, 1)
	s2 := predicates.ResumeSegment(load(r2, mark-warmup), prev)
	run(s2, mark)
	s2.Mark()
	done := make(chan predicates.Part)
	go func() {
		run(s2, -1)
		done <- s2.Finish(true)
	}()
	// Segment 1 reaches the seam, and hands over only after a wait
	// longer than the time budget.
	s1 := predicates.NewFirstSegment(load(newReplay(), 0))
	run(s1, mark)
	seam := s1.Seam()
	time.Sleep(wait)
	prev <- seam
	last := <-done
	if s2.Refused != nil || s2.Waited < wait/2 {
		t.Fatalf("segment 2: refused %v, waited %v (want a wait of about %v)", s2.Refused, s2.Waited, wait)
	}
	got := predicates.Stitch([]predicates.Part{s1.Part(), last})
	a, _ := json.Marshal(seq.JSON())
	b, _ := json.Marshal(got.JSON())
	if !bytes.Equal(a, b) {
		t.Fatalf("the stitched report differs from the sequential one\nsequential: %s\nstitched:   %s", a, b)
	}
}
