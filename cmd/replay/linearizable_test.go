package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLinearizableRaftkv checks a raftkv run with
// scripts/raftkv-linearizable.star: the history of client writes built
// from the trace (inputs, and the proposer applying the entry) is
// linearizable for models.kv. A model raftkv breaks (a key written at
// most once; the scenario rewrites each of its 50 keys) must be reported
// with the window of the failing key and a partial linearization, which
// also proves the history holds the run's writes and their replies.
func TestLinearizableRaftkv(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../scripts/raftkv-linearizable.star")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "raftkv-linearizable.star"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	once := `load("raftkv-linearizable.star", "writes")

def _once(state, input, output):
    return state == "", input[2]

write_once = model(init = "", step = _once, partition = lambda input: input[1], name = "write-once")
safety("WriteOnce", lambda: linearizable(writes, write_once),
       aux = lambda: linearizability(writes, write_once))
`
	if err := os.WriteFile(filepath.Join(dir, "once.star"), []byte(once), 0o644); err != nil {
		t.Fatal(err)
	}
	mustOK(t, replay(t, dir, "sim", "raftkv", "--seed", "1", "-o", "rk.lz4"))
	r := replay(t, dir, "check", "rk.lz4", "raftkv-linearizable.star")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "WritesLinearizable               safety    0 violation(s)") {
		t.Fatalf("clean check:\n%s", r.stdout)
	}

	r = replay(t, dir, "check", "--json", "rk.lz4", "once.star")
	if r.code != 1 {
		t.Fatalf("write-once model: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Violations []struct {
			Predicate string
			Step      int
			Aux       struct {
				Linearizable bool     `json:"linearizable"`
				Partition    string   `json:"partition"`
				Operations   int      `json:"operations"`
				Window       []string `json:"window"`
				WindowSteps  []int    `json:"window_steps"`
				Partial      []string `json:"partial_linearization"`
				NotLin       []string `json:"not_linearized"`
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if len(rep.Violations) != 1 || rep.Violations[0].Predicate != "WriteOnce" {
		t.Fatalf("want one WriteOnce violation (the first rewrite of a key; later ones are the same break): %+v", rep.Violations)
	}
	v := rep.Violations[0]
	a := v.Aux
	// The first key rewritten is k00 (write 50 rewrites write 0); its
	// window is those two writes, both returned: the second's reply is
	// the violating step.
	if a.Linearizable || a.Partition != "k00" || a.Operations < 51 || len(a.Window) != 2 ||
		len(a.WindowSteps) != 2 || a.WindowSteps[1] != v.Step ||
		len(a.Partial) != 1 || !strings.Contains(a.Partial[0], `("put", "k00", "v0") -> None`) ||
		len(a.NotLin) != 1 || !strings.Contains(a.NotLin[0], `("put", "k00", "v50") -> None`) {
		t.Fatalf("violation report: %+v", v)
	}
}
