package predicates_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

// segmentRig checks one paxos trace with one script, sequentially and in
// segments driven by hand.
type segmentRig struct {
	t    *testing.T
	tr   *replay.Trace
	src  []byte
	opts predicates.Options // From is set per checker
}

func newSegmentRig(t *testing.T, steps int, src string, opts predicates.Options) *segmentRig {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps = 1, steps
	opts.To = -1
	return &segmentRig{t: t, tr: paxosTraceOf(t, cfg), src: []byte(src), opts: opts}
}

func (g *segmentRig) checker(from int) *predicates.Checker {
	r, err := replay.New(g.tr, examples.Registry(), replay.Options{})
	if err != nil {
		g.t.Fatal(err)
	}
	return g.checkerOn(r, from)
}

func (g *segmentRig) checkerOn(r *replay.Replayer, from int) *predicates.Checker {
	o := g.opts
	o.From = from
	c, err := predicates.LoadSource("seg.star", g.src, r, o)
	if err != nil {
		g.t.Fatal(err)
	}
	return c
}

// sequential is the report of --jobs 1, as JSON.
func (g *segmentRig) sequential() []byte {
	seq, err := g.checker(0).Run(predicates.RunOptions{})
	if err != nil || seq.Err() != nil {
		g.t.Fatalf("--jobs 1: %v %v", err, seq.Err())
	}
	j, _ := json.Marshal(seq.JSON())
	return j
}

// warmed is a segment started from a checkpoint warmup steps before mark,
// run to its mark and marked.
func (g *segmentRig) warmed(mark, warmup int, prev <-chan *predicates.Seam) *predicates.Segment {
	pass, err := replay.New(g.tr, examples.Registry(), replay.Options{})
	if err != nil {
		g.t.Fatal(err)
	}
	if err := pass.RunTo(mark-warmup-1, nil); err != nil {
		g.t.Fatal(err)
	}
	r, err := replay.New(g.tr, examples.Registry(), replay.Options{})
	if err != nil {
		g.t.Fatal(err)
	}
	if err := r.StartAt(pass.TakeCheckpoint()); err != nil {
		g.t.Fatal(err)
	}
	s := predicates.ResumeSegment(g.checkerOn(r, mark-warmup), prev)
	if err := runSegment(s, mark); err != nil {
		g.t.Fatal(err)
	}
	s.Mark()
	return s
}

// first is the first segment, run to its end at mark.
func (g *segmentRig) first(mark int) *predicates.Segment {
	s := predicates.NewFirstSegment(g.checker(0))
	if err := runSegment(s, mark); err != nil {
		g.t.Fatal(err)
	}
	return s
}

// runSegment steps s up to step to (the end: -1).
func runSegment(s *predicates.Segment, to int) error {
	for to < 0 || s.Pos()+1 < to {
		if err := s.Step(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
	return nil
}

// stitched is the report stitched from the parts, as JSON.
func stitched(parts ...predicates.Part) []byte {
	j, _ := json.Marshal(predicates.Stitch(parts).JSON())
	return j
}

// TestSegmentWaitIsNotBudgeted: a segment whose stability measure reads
// since_change after its seam, before the sequential run's state has
// arrived, waits inside the evaluation, then goes on for more than a
// poll's worth of steps. The wait (longer than --script-time here) is not
// counted against the evaluation's time budget: the stitched report is
// the sequential one, with no budget error.
func TestSegmentWaitIsNotBudgeted(t *testing.T) {
	const budget, wait, mark, warmup = 1500 * time.Millisecond, 4 * time.Second, 650, 50
	g := newSegmentRig(t, 3000, `
phase = derived("phase", lambda: event.step // 400)
def work():
    n = 0
    for i in range(5000):
        n += i
    return n
liveness("Late",
         lambda: not (660 <= event.step and event.step < 760),
         aux = lambda: {"since": since_change(phase), "n": work()})
`, predicates.Options{TimeBudget: budget})
	want := g.sequential()
	prev := make(chan *predicates.Seam, 1)
	s2 := g.warmed(mark, warmup, prev)
	done := make(chan predicates.Part)
	go func() {
		if err := runSegment(s2, -1); err != nil {
			t.Error(err)
		}
		done <- s2.Finish(true)
	}()
	// Segment 1 reaches the seam, and hands over only after a wait
	// longer than the time budget.
	s1 := g.first(mark)
	seam := s1.Seam()
	time.Sleep(wait)
	prev <- seam
	last := <-done
	if s2.Refused != nil || s2.Waited < wait/2 {
		t.Fatalf("segment 2: refused %v, waited %v (want a wait of about %v)", s2.Refused, s2.Waited, wait)
	}
	if got := stitched(s1.Part(), last); !bytes.Equal(want, got) {
		t.Fatalf("the stitched report differs from the sequential one\nsequential: %s\nstitched:   %s", want, got)
	}
}

// TestSegmentGuessesWhatTheWarmUpSawChange: after its mark, a segment
// reads the last change and kept versions of a derived value its warm-up
// saw change many times. It goes on with its own values instead of
// waiting for the sequential run's state (it reaches the end of the trace
// before that state is sent), and the seam is accepted when those values
// were the sequential run's, refused when they were not.
func TestSegmentGuessesWhatTheWarmUpSawChange(t *testing.T) {
	const mark, warmup = 700, 100
	for _, tc := range []struct {
		name, src string
		refused   bool
	}{
		// tick changes every other step: the warm-up's last change and
		// last five versions (read from the mark on, before five
		// rewrites) are the sequential run's.
		{"right", `
tick = derived("tick", lambda: event.step // 2, keep = 5)
liveness("Late",
         lambda: not (700 <= event.step and event.step < 800),
         aux = lambda: {"since": since_change(tick), "kept": tick.history()})
`, false},
		// odd alternates while x's history fills up (20 steps into any
		// run), then stays 0: the warm-up saw it change often, but its
		// last change is not the sequential run's, which the seam finds.
		{"wrong", `
x = derived("x", lambda: event.step, keep = 20)
odd = derived("odd", lambda: len(x.history()) % 2)
liveness("Late",
         lambda: not (710 <= event.step and event.step < 800),
         aux = lambda: {"since": since_change(odd)})
`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newSegmentRig(t, 1500, tc.src, predicates.Options{})
			want := g.sequential()
			prev := make(chan *predicates.Seam, 1)
			s2 := g.warmed(mark, warmup, prev)
			ended := make(chan error, 1)
			go func() { ended <- runSegment(s2, -1) }()
			select {
			case err := <-ended:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the segment waits for the sequential run's state instead of going on with the warm-up's")
			}
			s1 := g.first(mark)
			prev <- s1.Seam()
			s2.Wait()
			if (s2.Refused != nil) != tc.refused {
				t.Fatalf("refused: %v, want refused %v", s2.Refused, tc.refused)
			}
			if tc.refused {
				if !strings.Contains(s2.Refused.Error(), "read after the seam with the warm-up's value") {
					t.Fatalf("refused for another reason: %v", s2.Refused)
				}
				return
			}
			if got := stitched(s1.Part(), s2.Finish(true)); !bytes.Equal(want, got) {
				t.Fatalf("the stitched report differs from the sequential one\nsequential: %s\nstitched:   %s", want, got)
			}
		})
	}
}
