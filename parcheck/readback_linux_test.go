package parcheck_test

import (
	"errors"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/internal/spillfault"
	"github.com/replaycheck/replaycheck/parcheck"
	"github.com/replaycheck/replaycheck/replay"
)

// A spilled trace that cannot be read back under check --jobs ends the
// check with that error from whichever goroutine meets it: the segments
// and the pass panicked with a stack, ending the process, where a
// sequential check says one line.
func TestCheckSpilledThatCannotBeReadBackFails(t *testing.T) {
	path := chordFile(t)
	// Cut at the start every segment fails at once; cut in the middle
	// the first checks on to the cut, and later segments fail in their
	// warm-up or after their seam.
	for _, c := range []struct {
		keep  float64
		marks []int
	}{{0, nil}, {0, []int{1500, 3000, 4500}}, {0.5, nil}, {0.5, []int{1500, 3000, 4500}}, {0.25, []int{1000, 2000, 3000, 4000, 5000}}} {
		marks := c.marks
		dir := t.TempDir()
		tr, err := replay.LoadWith(replay.LoadOptions{InMemory: -1, TempDir: dir}, path)
		if err != nil {
			t.Fatal(err)
		}
		spillfault.TruncateTo(t, dir, c.keep)
		rep, st, err := parcheck.Check(tr, examples.Registry(), parcheck.Options{Jobs: 6, Warmup: 100,
			Marks: marks, Load: loader(t, "chord.star"), To: -1})
		tr.Close()
		var rb *replay.ReadBackError
		if !errors.As(err, &rb) {
			t.Fatalf("cut to %.2f, marks %v: got %v, want a ReadBackError (%s, %+v)", c.keep, marks, err, st, rep)
		}
	}
}
