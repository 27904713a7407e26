package predicates_test

import (
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/predicates"
)

// A derived value that grew by thousands of elements a step made a new
// user's check crawl for minutes within every budget, and nothing said
// which value. Options.Slow hears of each slow derived value once, with
// the size of its value.
func TestSlowDerivedValuesAreToldOnce(t *testing.T) {
	heard := slowOnes(t, `
A = table("paxos.Agent")
def grow():
    return (big() or []) + [a.Promised for a in A] * 10
big = derived("big", grow)
small = derived("small", lambda: len(A))
safety("Fine", lambda: len(big()) >= 0 and small() >= 0)
`, predicates.Options{SlowAfter: time.Nanosecond})
	if len(heard) != 2 || heard[0].Name != "big" || heard[1].Name != "small" {
		t.Fatalf("heard %+v, want big and small once each", heard)
	}
	if heard[0].Size <= 0 || heard[1].Size != -1 || heard[0].Took <= 0 {
		t.Fatalf("heard %+v: want big's size and small's -1 (an int)", heard)
	}
}

// A predicate that costs most of the check is told of by its share of
// the time, once, with its kind; a cheap one beside it is not: a new
// user's predicate scanned every row for every row, and the check ran
// five minutes without a word until the step budget stopped it. It is
// costly at odd steps only, which timing every eighth step never saw
// (nor is a share judged on the first step's one sample).
func TestCostlyPredicatesAreToldByTheirShare(t *testing.T) {
	heard := slowOnes(t, `
A = table("paxos.Agent")
def heavy(a):
    return len([i for i in range(1000) if i >= 0]) > event.step - event.step
# Costly at odd steps only: timing every eighth step never saw it.
safety("Costly", lambda: event.step % 2 == 0 or forall(A, heavy))
safety("Cheap", lambda: event.step >= 0)
`, predicates.Options{ShareAfter: time.Nanosecond})
	if len(heard) != 1 || heard[0].Name != "Costly" || heard[0].Kind != "safety" {
		t.Fatalf("heard %+v, want Costly once", heard)
	}
	if h := heard[0]; h.Took != 0 || h.Spent <= 0 || h.Spent > h.Elapsed || h.Evals < 16 {
		t.Fatalf("heard %+v: want a share (Spent within Elapsed, Took 0) judged on 16 steps or more", h)
	}
}

// slowOnes checks src over the first 201 steps of a paxos run and returns
// what Options.Slow heard, opts giving the thresholds.
func slowOnes(t *testing.T, src string, opts predicates.Options) []predicates.SlowEvaluation {
	t.Helper()
	var heard []predicates.SlowEvaluation
	opts.To, opts.Slow = 200, func(s predicates.SlowEvaluation) { heard = append(heard, s) }
	c, err := predicates.LoadSource("slow.star", []byte(src), simReplayer(t, paxos.System), opts)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Run(predicates.RunOptions{})
	if err != nil || len(rep.Errors) > 0 {
		t.Fatal(err, rep.Errors)
	}
	return heard
}
