package main

import (
	"encoding/json"
	"testing"
)

// TestCheckJSONShape: check --json lists safety violations as points,
// without the liveness notion of an alarm, and says whether checking
// reached the end.
func TestCheckJSONShape(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--bug", "spec", "--seed", "8", "-o", "spec.lz4"))
	r := replay(t, dir, "check", "--json", "spec.lz4", paxosScript(t))
	if r.code != 1 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Complete   *bool            `json:"complete"`
		Violations []map[string]any `json:"violations"`
		Screened   []any            `json:"screened"`
		Seconds    *float64         `json:"seconds"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if len(rep.Violations) == 0 || rep.Complete == nil || !*rep.Complete || rep.Screened == nil || rep.Seconds == nil {
		t.Fatalf("--json report: %s", r.stdout)
	}
	for _, v := range rep.Violations {
		if v["kind"] != "safety" {
			continue
		}
		if _, has := v["alarm"]; has || v["status"] != "violation" {
			t.Fatalf("a safety violation in --json: %v", v)
		}
	}
}
