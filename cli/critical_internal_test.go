package cli

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/critical"
	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

// TestCriticalNotesWalksThatStartAhead: critical says when the walks that
// decided its answer started from a world that is not a time cut (its
// answer said nothing, and a new user's critical step was such a world's
// artifact), and says nothing when both are time cuts. The run records
// causal clocks only, as a live recording does; in a simulated run
// (serial clocks) every step is a time cut.
func TestCriticalNotesWalksThatStartAhead(t *testing.T) {
	paxosRun := func(causal bool) *replay.Trace {
		cfg := sim.DefaultConfig()
		cfg.Seed, cfg.CausalClocks = 1, causal
		var buf bytes.Buffer
		if _, err := sim.Run(paxos.System, cfg.WithDefaults(paxos.System), &buf); err != nil {
			t.Fatal(err)
		}
		tr, err := replay.FromBytes(buf.Bytes(), "p.lz4")
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	serial := paxosRun(false)
	for i := range serial.Len() {
		if note := timeCutNote(serial, i); note != "" {
			t.Fatalf("simulated run, #%d: %s", i, note)
		}
	}
	tr := paxosRun(true)
	clean, ahead := -1, -1
	for i := 1; i < tr.Len() && (clean < 0 || ahead < 0); i++ {
		if tr.Event(i).Kind == node.KindInput {
			continue // answerNotes notes an input critical step too
		}
		if timeCutNote(tr, i) == "" {
			if clean < 0 && timeCutNote(tr, i-1) == "" {
				clean = i
			}
		} else if ahead < 0 && timeCutNote(tr, i-1) == "" {
			ahead = i
		}
	}
	if clean < 0 || ahead < 0 {
		t.Fatalf("paxos seed 1: no pair of time-cut steps (%d) or no step ahead after one (%d)", clean, ahead)
	}
	if notes := answerNotes(tr, &critical.Result{LastLive: clean - 1, Critical: clean}); len(notes) != 0 {
		t.Fatalf("#%d and #%d are time cuts, got %q", clean-1, clean, notes)
	}
	notes := answerNotes(tr, &critical.Result{LastLive: ahead - 1, Critical: ahead})
	if len(notes) != 1 || !strings.Contains(notes[0], "walks from #"+strconv.Itoa(ahead)+" start from a world that is not a time cut") {
		t.Fatalf("#%d is not a time cut, got %q", ahead, notes)
	}
	if notes := answerNotes(tr, &critical.Result{LastLive: -1, Critical: -1}); len(notes) != 0 {
		t.Fatalf("no transition, got %q", notes)
	}
}
