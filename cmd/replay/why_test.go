package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestWhy runs replay why on the demo's violation, with and without the
// trace database: the chain must lead from n7's accepted x7 to the Last
// n3 sent n5 (round 35's x7, the root cause) and on to the input that
// proposed x7, and both sources must tell the same story.
func TestWhy(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "demo", "--dir", "."))
	args := []string{"why", "replay-demo.lz4", "--at", "269", "--node", "n7", "--field", "Agent.AcceptedValue"}
	replayed := replay(t, dir, args...)
	mustOK(t, replayed)
	for _, want := range []string{
		`#269 t=118.410319ms n7 recv paxos.Begin{Round:82 Value:x7} from n5 (sent #260) — Agent.AcceptedValue = "x7"`,
		`← from paxos.Begin field Value = "x7", sent by n5 at #260 (inferred: equal value)`,
		`#260 t=110.045319ms n5 recv paxos.Last{Round:82 AcceptedRound:35 AcceptedValue:x7} from n3 (sent #259) — Leader.Lasts[3].Last.AcceptedValue = "x7"`,
		`message paxos.Last from n3, sent at #259: Round = 82, AcceptedRound = 35, AcceptedValue = "x7"`,
		`origin: input paxos.Propose, field Value`,
	} {
		if !strings.Contains(replayed.stdout, want) {
			t.Fatalf("why lacks %q:\n%s", want, replayed.stdout)
		}
	}
	mustOK(t, replay(t, dir, "index", "replay-demo.lz4"))
	indexed := replay(t, dir, args...)
	mustOK(t, indexed)
	if indexed.stdout != replayed.stdout {
		t.Fatalf("database and replay disagree:\n%s\nvs\n%s", indexed.stdout, replayed.stdout)
	}
	js := replay(t, dir, append(args, "--json", "--depth", "2")...)
	mustOK(t, js)
	var chain struct {
		Value string
		Links []struct {
			Step     int
			Time     int64 `json:"time_ns"`
			Node     string
			Inferred bool
			Origin   string
		}
	}
	if err := json.Unmarshal([]byte(js.stdout), &chain); err != nil {
		t.Fatalf("%v:\n%s", err, js.stdout)
	}
	if chain.Value != `"x7"` || len(chain.Links) != 2 || chain.Links[1].Step != 260 || chain.Links[1].Time != 110045319 || !chain.Links[1].Inferred ||
		!strings.Contains(chain.Links[1].Origin, "depth limit") {
		t.Fatalf("--json --depth 2: %+v", chain)
	}
	badInput(t, replay(t, dir, "why", "replay-demo.lz4", "--at", "273", "--node", "n66", "--field", "Agent.AcceptedValue"), "no node n66", "nearest: n6")
	badInput(t, replay(t, dir, "why", "replay-demo.lz4", "--at", "269", "--node", "n7", "--field", "Agent.AcceptedValu"), "no field Agent.AcceptedValu", "nearest: Agent.AcceptedValue")
	badInput(t, replay(t, dir, "why", "replay-demo.lz4", "--at", "5000", "--node", "n6", "--field", "Agent.AcceptedValue"), "--at 5000", "#0..#1925")
	// A struct (or list, or map) that history accepts: its values have
	// their own sources, and why says so ("no field Agent", before).
	badInput(t, replay(t, dir, "why", "replay-demo.lz4", "--at", "269", "--node", "n7", "--field", "Agent"), "Agent at #269 holds", "ask about one of them, such as Agent.")
}
