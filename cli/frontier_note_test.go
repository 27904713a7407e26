package cli

import (
	"os"
	"strings"
	"testing"
)

// A safety predicate that compares with now() on a trace replayed in
// causal order is told that a real-time overlap can go unseen (a new
// user's lease check caught 1 seed in 100 with causal clocks, 18 with
// serial ones); with serial clocks, or reading only now(node), it is not.
func TestCheckNotesSafetyReadingNowInCausalOrder(t *testing.T) {
	t.Chdir(t.TempDir())
	script := `Agent = table("paxos.Agent")
safety("Frontier", lambda: forall(Agent, lambda a: now() >= 0))
safety("OwnClock", lambda: forall(Agent, lambda a: now(a.node) >= 0))
liveness("Live", lambda: now() >= 0)
`
	if err := os.WriteFile("p.star", []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		clocks string
		jobs   string
		noted  bool
	}{{"causal", "1", true}, {"causal", "2", true}, {"serial", "1", false}} {
		app, _, errb := simulated(t, "paxos", "--seed", "1", "--steps", "6000", "--clocks", tc.clocks, "-o", tc.clocks+".lz4")
		if code := app.Run([]string{"check", "--jobs", tc.jobs, tc.clocks + ".lz4", "p.star"}); code != ExitOK {
			t.Fatalf("check %s clocks: exit %d: %s", tc.clocks, code, errb.String())
		}
		note := ""
		for _, l := range strings.Split(errb.String(), "\n") {
			if strings.Contains(l, "compared with now()") {
				note = l
			}
		}
		switch {
		case tc.noted && !strings.Contains(note, "safety predicate Frontier compared with now()"):
			t.Fatalf("%s clocks, --jobs %s: no note on Frontier:\n%s", tc.clocks, tc.jobs, errb.String())
		case tc.noted && (strings.Contains(note, "OwnClock") || strings.Contains(note, "Live")):
			t.Fatalf("the note names a predicate that reads only a node's clock, or a liveness one: %s", note)
		case !tc.noted && note != "":
			t.Fatalf("%s clocks: %s", tc.clocks, note)
		}
	}
}
