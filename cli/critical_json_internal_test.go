package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/replaycheck/replaycheck/critical"
	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/replay"
)

// A search stopped (--time, Ctrl-C) before any walk recovered knows only
// that the critical step is at or before its earliest dead probe:
// --json said "doomed_from_first_step": true, though step 0 was never
// judged (a hostile pass). Only a finished search says that.
func TestCriticalJSONOfAStoppedSearch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.lz4")
	var out, errb bytes.Buffer
	a := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	if code := a.Run([]string{"sim", "paxos", "--seed", "1", "--steps", "300", "-o", path}); code != 0 {
		t.Fatalf("sim: %d %s", code, errb.String())
	}
	tr, err := replay.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	last := tr.Len() - 1
	for _, tc := range []struct {
		stopped          string
		doomed, atBefore bool
	}{{"time limit", false, true}, {"canceled", false, true}, {"", true, false}} {
		out.Reset()
		r := &criticalReport{tr: tr, paths: []string{path}, tgt: &target{}, res: &critical.Result{
			Critical: last, LastLive: -1, Stopped: tc.stopped, Probes: []critical.Probe{{Step: last, Walks: 4}}}}
		if err := r.writeJSON(a); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Critical struct {
				Doomed   bool `json:"doomed_from_first_step"`
				AtBefore bool `json:"at_or_before"`
			} `json:"critical"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if got.Critical.Doomed != tc.doomed || got.Critical.AtBefore != tc.atBefore {
			t.Errorf("stopped %q: doomed_from_first_step %v, at_or_before %v; want %v, %v", tc.stopped, got.Critical.Doomed, got.Critical.AtBefore, tc.doomed, tc.atBefore)
		}
	}
}
