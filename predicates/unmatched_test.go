package predicates_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/parcheck"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/system"
)

type heldThing struct{ N int }

type gbox[T any] struct{ V T }

// holdsAny keeps a value behind an interface field, so no table type can
// be ruled out from the Go types at load.
type holdsAny struct {
	Held any
	Box  gbox[int]
}

func (h *holdsAny) Init(env node.Env) {
	h.Held = &heldThing{N: 1}
	env.After(10*time.Millisecond, "tick")
}
func (h *holdsAny) Receive(node.Env, node.ID, node.Message) {}
func (h *holdsAny) Timer(env node.Env, _ node.Timer)        { env.After(10*time.Millisecond, "tick") }

func interfaceSystem() *system.System {
	return &system.System{Name: "holdsany", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &holdsAny{} },
		Sim: system.SimDefaults{Nodes: 2, Steps: 3, Time: time.Second}}
}

// A table whose type is in no field's type but could be behind an
// interface was loaded and, when no row came, its predicates held
// vacuously: a new user's check of a DHT against the paxos script
// passed. Such a table is now named in the report, and a generic type
// may be named without its type arguments.
func TestTablesThatMatchNothing(t *testing.T) {
	script := `
Held = table("predicates_test.heldThing")
Box = table("predicates_test.gbox")
Typo = table("predicates_test.heldThng")
Other = table("paxos.Agent")
safety("HeldIsOne", lambda: forall(Held, lambda h: h.N == 1) and len(Held) >= 1)
safety("Boxes", lambda: len(Box) >= 1)
safety("Vacuous", lambda: len(Typo) == 0 and len(Other) == 0)
`
	sys := interfaceSystem()
	check := func(t *testing.T, rep *predicates.Report) {
		t.Helper()
		for _, v := range rep.Violations {
			t.Errorf("%s fails at #%d", v.Predicate, v.Step)
		}
		if len(rep.Unmatched) != 2 {
			t.Fatalf("unmatched %+v, want heldThng's and paxos.Agent's", rep.Unmatched)
		}
		typo, other := rep.Unmatched[0], rep.Unmatched[1]
		if typo.Table != "predicates_test.heldThng" || typo.ForeignPackage || !strings.Contains(strings.Join(typo.Reached, " "), "predicates_test.heldThing") {
			t.Errorf("the typo: %+v", typo)
		}
		if typo.DidYouMean != "predicates_test.heldThing" || !strings.Contains(typo.String(), `did you mean "predicates_test.heldThing"?`) {
			t.Errorf("the typo reads %q (did you mean %q)", typo, typo.DidYouMean)
		}
		if other.DidYouMean != "" {
			t.Errorf("the other system's table is taken for a typo of %q", other.DidYouMean)
		}
		if other.Table != "paxos.Agent" || !other.ForeignPackage {
			t.Errorf("the other system's table: %+v", other)
		}
		if !strings.Contains(other.String(), "is the script for this system?") {
			t.Errorf("the other system's table reads %q", other)
		}
		// Warnings, not errors: a type only an interface holds may be
		// absent from the steps checked without a mistake.
		if len(rep.Errors) != 0 {
			t.Errorf("errors %v", rep.Errors)
		}
	}
	t.Run("sequential", func(t *testing.T) {
		c, err := predicates.LoadSource("u.star", []byte(script), simReplayer(t, sys), predicates.Options{To: -1})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := c.Run(predicates.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		check(t, rep)
	})
	t.Run("jobs 2", func(t *testing.T) {
		r := simReplayer(t, sys)
		tr := r.Trace()
		rep, _, err := parcheck.Check(tr, system.NewRegistry(sys), parcheck.Options{Jobs: 2, Warmup: 1, Marks: []int{tr.Len() / 2},
			Load: func(r *replay.Replayer, from int) (*predicates.Checker, error) {
				return predicates.LoadSource("u.star", []byte(script), r, predicates.Options{To: -1, From: from})
			}, To: -1})
		if err != nil {
			t.Fatal(err)
		}
		check(t, rep)
	})
}

// A seed hunt or an exploration checks many runs: a table is worth a
// warning only if it matched nothing in every one of them.
func TestUnmatchedAcrossRuns(t *testing.T) {
	a := predicates.UnmatchedTable{Table: "x.A"}
	b := predicates.UnmatchedTable{Table: "x.B"}
	var u predicates.UnmatchedAcross
	u.Add(nil) // a run that checked nothing says nothing
	u.Add(&predicates.Report{Unmatched: []predicates.UnmatchedTable{a, b}})
	var out strings.Builder
	u.WriteText(&out, "run")
	if !strings.Contains(out.String(), `warning: in the one run: table("x.A")`) || strings.Count(out.String(), "\n") != 2 {
		t.Errorf("after one run:\n%s", out.String())
	}
	u.Add(&predicates.Report{Unmatched: []predicates.UnmatchedTable{b}})
	u.Add(&predicates.Report{Unmatched: []predicates.UnmatchedTable{a, b}})
	if got := u.Tables(); len(got) != 1 || got[0].Table != "x.B" {
		t.Fatalf("after three runs, A matched in one: %+v", got)
	}
	out.Reset()
	u.WriteText(&out, "run")
	if !strings.HasPrefix(out.String(), `warning: in all 3 runs: table("x.B")`) {
		t.Errorf("after three runs:\n%s", out.String())
	}
	u.Add(&predicates.Report{})
	if len(u.Tables()) != 0 {
		t.Errorf("B matched in the fourth run, yet %+v", u.Tables())
	}
}

// Shards' lists are intersected by a set: a nested search was quadratic,
// and three forged result files of 100,000 tables each kept results
// merge busy for minutes (this test ran past the go test timeout).
func TestUnmatchedAcrossLongLists(t *testing.T) {
	const n = 100000
	list := func(from int) []predicates.UnmatchedTable {
		out := make([]predicates.UnmatchedTable, n)
		for i := range out {
			out[i] = predicates.UnmatchedTable{Table: fmt.Sprintf("x.T%d", from+i)}
		}
		return out
	}
	var u predicates.UnmatchedAcross
	u.Merge(list(0), 5)
	u.Merge(list(n/2), 5)
	u.Merge(list(n/4), 5)
	if got := u.Tables(); len(got) != n/2 || got[0].Table != fmt.Sprintf("x.T%d", n/2) {
		t.Fatalf("%d tables in common, the first %+v; want %d from x.T%d", len(got), got[0], n/2, n/2)
	}
}
