package predicates_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/predicates/internal/raftkv"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// raftRun simulates the raftkv stand-in through the given inputs, one per
// millisecond: "n2 append 1 x", "n1 role leader", ...
func raftRun(t *testing.T, lines ...string) *replay.Trace {
	t.Helper()
	sys := *raftkv.System
	sys.Scenario = func(ctl system.Controller) {
		for i, l := range lines {
			f := strings.Fields(l)
			ctl.At(time.Duration(i+1)*time.Millisecond, func() {
				ctl.Input(node.ID(f[0]), raftkv.Cmd{Op: f[1], Args: f[2:]})
			})
		}
	}
	cfg := sim.Config{Seed: 1, Nodes: 3, Time: time.Duration(len(lines)+2) * time.Millisecond, Drop: 0, Dup: 0, Churn: 0}
	var buf bytes.Buffer
	if _, err := sim.Run(&sys, cfg.WithDefaults(&sys), &buf); err != nil {
		t.Fatal(err)
	}
	tr, err := replay.FromBytes(buf.Bytes(), "raft.lz4")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func raftViolations(t *testing.T, tr *replay.Trace, script string) []string {
	t.Helper()
	r, err := replay.New(tr, system.NewRegistry(raftkv.System), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := predicates.Load(script, r, predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Run(predicates.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range rep.Violations {
		out = append(out, fmt.Sprintf("%s %s #%d..#%d alarm=%v", v.Kind, v.Predicate, v.Step, v.EndStep, v.Alarm))
	}
	return out
}

// TestRaftScriptKeepsItsFindings drives scripts/raft.star, rewritten to
// read logs through chained views, into each of its safety violations,
// and checks that it reports exactly what the script it replaced (kept
// beside the stand-in) reports.
func TestRaftScriptKeepsItsFindings(t *testing.T) {
	agree := []string{
		"n1 term 1", "n1 role leader", "n1 append 1 a", "n2 append 1 a", "n3 append 1 a",
		"n1 append 1 b", "n2 append 1 b", "n1 commit 2", "n1 apply 2", "n2 commit 2", "n2 apply 2",
	}
	cases := []struct {
		name  string
		lines []string
		want  string // a violation the run must show
	}{
		{"clean", agree, ""},
		// n3 holds index 2 of term 1 with other data than n1 and n2.
		{"log-matching", append(append([]string{}, agree...), "n3 append 1 z"), "safety LogMatching"},
		// n3's log diverges below an index both applied.
		{"state-machine", append(append([]string{}, agree...),
			"n3 append 2 q", "n3 commit 2", "n3 apply 2"), "safety StateMachineSafety"},
		// n3 overwrites its entry 2 in place (same length, same slice):
		// seen through the chain.
		{"rewrite", append(append([]string{}, agree...), "n3 append 1 b", "n3 replace 1 1 c"), "safety LogMatching"},
		{"applied-beyond-commit", append(append([]string{}, agree...), "n3 apply 1"), "safety AppliedWithinCommitted"},
		{"two-leaders", append(append([]string{}, agree...), "n2 term 1", "n2 role leader"), "safety ElectionSafety"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := raftRun(t, tc.lines...)
			now := raftViolations(t, tr, "../scripts/raft.star")
			before := raftViolations(t, tr, "internal/raftkv/raft_before_issue12.star")
			if strings.Join(now, "\n") != strings.Join(before, "\n") {
				t.Fatalf("raft.star reports\n  %s\nthe script it replaced\n  %s", strings.Join(now, "\n  "), strings.Join(before, "\n  "))
			}
			found := tc.want == ""
			for _, v := range now {
				if tc.want != "" && strings.HasPrefix(v, tc.want+" ") {
					found = true
				}
				if tc.want == "" && strings.HasPrefix(v, "safety") {
					t.Errorf("clean run: %s", v)
				}
			}
			if !found {
				t.Errorf("want a %s violation, got %q", tc.want, now)
			}
		})
	}
}
