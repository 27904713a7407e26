package predicates_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/system"
)

// entry is a row of flat content: all of it lies in the element's own
// memory (a string's bytes never change).
type entry struct {
	V int
	S string
}

// lister keeps a list of entries that its events change in every way a
// list changes (appended to in place and past its capacity, an element
// rewritten, cut, copied elsewhere and the old copy written over, a
// string swapped for an equal one),
// and, as the truth to check the rows against, what they add up to.
type lister struct {
	Entries          []entry
	Sum, Count, LenS int
}

func (l *lister) Init(env node.Env)                       { env.After(time.Millisecond, "edit") }
func (l *lister) Receive(node.Env, node.ID, node.Message) {}
func (l *lister) Timer(env node.Env, _ node.Timer) {
	rng := env.Rand()
	for range 1 + rng.IntN(3) {
		n := len(l.Entries)
		switch op := rng.IntN(11); {
		case op < 4 || n == 0:
			l.Entries = append(l.Entries, entry{rng.IntN(100), strconv.Itoa(rng.IntN(1000))})
		case op == 4:
			for range 10 {
				l.Entries = append(l.Entries, entry{rng.IntN(100), "x"})
			}
		case op == 5:
			l.Entries[rng.IntN(n)].V++
		case op == 6:
			l.Entries[rng.IntN(n)].S += "y"
		case op == 7:
			l.Entries = l.Entries[:rng.IntN(n)]
		case op == 8:
			l.Entries = slices.Clone(l.Entries)
		case op == 9:
			i := rng.IntN(n)
			l.Entries[i].S = strings.Clone(l.Entries[i].S)
		default:
			// Moved elsewhere, and the old memory written over: the
			// rows must not be read from it.
			old := l.Entries
			l.Entries = slices.Clone(old)
			old[rng.IntN(n)].V += 1000
		}
	}
	l.Sum, l.Count, l.LenS = 0, len(l.Entries), 0
	for _, e := range l.Entries {
		l.Sum += e.V
		l.LenS += len(e.S)
	}
	env.After(time.Millisecond, "edit")
}

// The scan passes over a long list of flat rows while its memory is as
// it was, and walks only what was appended in place: every other change
// must still reach the rows. The rows' sums are checked against the
// node's own after every one of 4,000 edits.
func TestRowsOfAListThatChangesEveryWay(t *testing.T) {
	sys := &system.System{Name: "lister", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &lister{} },
		Sim: system.SimDefaults{Nodes: 1, Steps: 4000, Time: time.Hour}}
	c, err := predicates.LoadSource("l.star", []byte(`E = table("predicates_test.entry")
L = table("predicates_test.lister", columns = ["Sum", "Count", "LenS"])
def sums():
    v, s = 0, 0
    for e in E:
        v += e.V
        s += len(e.S)
    return (v, len(E), s)
rows = derived("rows", sums)
safety("RowsAreTheList", lambda: forall(L, lambda l: rows() == (l.Sum, l.Count, l.LenS)))
`), simReplayer(t, sys), predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Run(predicates.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Complete || rep.Steps < 3000 || len(rep.Errors) > 0 {
		t.Fatalf("checked %d steps, complete %v, errors %v", rep.Steps, rep.Complete, rep.Errors)
	}
	for _, v := range rep.Violations {
		t.Fatalf("the rows differ from the list at #%d (%s)", v.Step, v.Headline())
	}
	if p := rep.Predicates["RowsAreTheList"]; p == nil || p.Evals < 1000 {
		t.Fatalf("the predicate was evaluated %v times", p)
	}
}
