package predicates_test

import (
	"slices"
	"testing"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/predicates"
)

// A table declared without columns= whose predicates read some of its
// fields is named with the declaration that would read only those: a new
// user's natural script checked 24,000 steps in 28 s, and in 4.5 s once
// its tables named the fields it read.
func TestColumnAdvice(t *testing.T) {
	script := `
Agent = table("paxos.Agent", keep = 2)
Leaders = table("paxos.Leader")
All = table("paxos.Agent")
Named = table("paxos.Agent", columns = ["Promised"])
Lead = table("paxos.Leader")
Viewed = table("paxos.Leader", views = ["Lasts"])
safety("RoundsUp", lambda: forall(Agent, lambda a: a.AcceptedRound >= a.prev("AcceptedRound", 0)))
safety("Counted", lambda: len(Leaders) >= 0)
safety("Whole", lambda: forall(All, lambda a: a.Promised >= 0 and a.AcceptedRound >= 0 and a.AcceptedValue != None))
safety("Declared", lambda: forall(Named, lambda a: a.Promised >= 0))
safety("Lists", lambda: forall(Lead, lambda l: len(l.Lasts) >= 0 and l.Round >= 0))
safety("Views", lambda: forall(Viewed, lambda l: len(l.Lasts) >= 0 and l.Round >= 0))
`
	c, err := predicates.LoadSource("advice.star", []byte(script), simReplayer(t, paxos.System), predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(predicates.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	advice := c.ColumnAdvice()
	if len(advice) != 3 {
		t.Fatalf("advice %+v: want Agent's and both Leader tables' (Leaders' rows were only counted, All's fields all read, Named declares its columns)", advice)
	}
	i := slices.IndexFunc(advice, func(a predicates.ColumnAdvice) bool { return a.Table == "paxos.Agent" })
	if i < 0 {
		t.Fatalf("no advice for paxos.Agent: %+v", advice)
	}
	// A list read whole each time is named, unless declared views=.
	var lists [][]string
	for _, a := range advice {
		if a.Table == "paxos.Leader" {
			lists = append(lists, a.Lists)
		}
	}
	if len(lists) != 2 || !slices.ContainsFunc(lists, func(l []string) bool { return slices.Equal(l, []string{"Lasts"}) }) ||
		!slices.ContainsFunc(lists, func(l []string) bool { return len(l) == 0 }) {
		t.Errorf("lists named %v: want [Lasts] for the table without views=, none for the one with", lists)
	}
	a := advice[i]
	if a.Table != "paxos.Agent" || a.Fields != 3 || !slices.Equal(a.Read, []string{"AcceptedRound"}) {
		t.Errorf("advice %+v", a)
	}
	if got, want := a.Declaration(), `table("paxos.Agent", columns = ["AcceptedRound"], keep = 2)`; got != want {
		t.Errorf("declaration %s, want %s", got, want)
	}
}
