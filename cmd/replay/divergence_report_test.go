package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestDivergenceOfASimulatedTrace: a new user checked a fix against the
// trace of the bug. The report listed every predicate at 0 violations
// above the divergence, the likely causes began with map order and
// math/rand (a simulated trace replays only the code that made it), and
// --json named the divergence's fields in Go (`"Step"`, `"Now"`). A live
// recording keeps its order of causes.
func TestDivergenceOfASimulatedTrace(t *testing.T) {
	dir := t.TempDir()
	f := tamperedPaxos(t, dir)
	_, at, script := checkTampered(t, dir, f)
	text := replay(t, dir, "check", "tampered.lz4", script)
	if !strings.Contains(text.stdout, "checking stopped early, after #") || !strings.Contains(text.stdout, "the replay diverged at #") {
		t.Errorf("the report does not say why checking stopped:\n%s", text.stdout)
	}
	causes := func(r result) []string {
		var out struct {
			Divergence map[string]json.RawMessage `json:"divergence"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("check --json: %v\n%s", err, r.stdout)
		}
		for _, k := range []string{"step", "node", "seq", "event", "differs", "causes"} {
			if _, ok := out.Divergence[k]; !ok {
				t.Errorf("the divergence has no %q: %s", k, r.stdout)
			}
		}
		var step int
		var cs []string
		json.Unmarshal(out.Divergence["step"], &step)
		json.Unmarshal(out.Divergence["causes"], &cs)
		if step != at || len(cs) == 0 {
			t.Fatalf("divergence at #%d with causes %q, want #%d", step, cs, at)
		}
		return cs
	}
	if cs := causes(replay(t, dir, "check", "--json", "tampered.lz4", script)); !strings.Contains(cs[0], "since the run was simulated") {
		t.Errorf("a simulated trace's first likely cause is %q, want a change of code", cs[0])
	}
	if !strings.Contains(text.stdout, "likely causes:\n    - the handler's code or a dependency changed since the run was simulated") {
		t.Errorf("text report:\n%s", text.stdout)
	}
	f.Header.Driver = "live"
	for _, h := range f.Segments {
		h.Driver = "live"
	}
	rewriteTrace(t, f, filepath.Join(dir, "tampered.lz4"))
	if cs := causes(replay(t, dir, "check", "--json", "tampered.lz4", script)); strings.Contains(strings.Join(cs, "\n"), "simulated") {
		t.Errorf("a live recording's causes name a simulated run: %q", cs)
	}
}
