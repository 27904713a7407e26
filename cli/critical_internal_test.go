package cli

import (
	"bytes"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/critical"
	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// TestCriticalNotesWalksThatStartAhead: critical says when the walks that
// decided its answer started from a world that is not a time cut (its
// answer said nothing, and a new user's critical step was such a world's
// artifact), and says nothing when both are time cuts. The run records
// causal clocks only, as a live recording does; in a simulated run
// (serial clocks) every step is a time cut.
func TestCriticalNotesWalksThatStartAhead(t *testing.T) {
	serial := paxosRun(t, false)
	for i := range serial.Len() {
		if note := timeCutNote(serial, i); note != "" {
			t.Fatalf("simulated run, #%d: %s", i, note)
		}
	}
	tr := paxosRun(t, true)
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

// The fork note is given at the very step that ran ahead in time (an
// idle node's timer replayed early), not only at steps after it: the
// world starts at that step's time whichever step it is, and steps still
// to come are earlier (a new user's fork at such a step started with
// every heartbeat overdue, and no note).
func TestTimeCutNoteAtTheStepThatRanAhead(t *testing.T) {
	tr := paxosRun(t, true)
	// earliestAfter[s]: the earliest time of the steps after #s.
	earliestAfter := make([]int64, tr.Len())
	earliestAfter[tr.Len()-1] = math.MaxInt64
	for s := tr.Len() - 2; s >= 0; s-- {
		earliestAfter[s] = min(earliestAfter[s+1], tr.Event(s+1).Time)
	}
	found := 0
	latest := int64(math.MinInt64)
	for s := 0; s+1 < tr.Len(); s++ {
		at := tr.Event(s).Time
		if at < latest {
			continue
		}
		latest = at // #s is the latest in time so far
		earliest := earliestAfter[s]
		if time.Duration(at-earliest) <= 10*time.Millisecond {
			continue
		}
		found++
		if note := timeCutNote(tr, s); !strings.Contains(note, "later step is at t="+time.Duration(earliest-tr.Header.Start).String()) {
			t.Fatalf("#%d runs %v ahead of a later step, got note %q", s, time.Duration(at-earliest), note)
		}
	}
	if found == 0 {
		t.Fatal("paxos seed 1 with causal clocks has no step that runs ahead of a later one: the test shows nothing")
	}
}

// paxosRun simulates paxos seed 1, recording causal clocks only if causal.
func paxosRun(t *testing.T, causal bool) *replay.Trace {
	t.Helper()
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

// The lines critical and shrink print of a step show the fields of a
// message it sent that nobody received, as replay events does (they
// printed "paxos.Last to nobody": the trace records only the receiver's
// copy, and only a replay of the sender has the sender's).
func TestStepLinesShowLostMessagesFields(t *testing.T) {
	tr := paxosRun(t, false)
	app := &App{Registry: system.NewRegistry(paxos.System), Stdout: io.Discard, Stderr: io.Discard}
	r := newRenderer(app, tr)
	for step := range tr.Len() {
		ev := tr.Event(step)
		for i, s := range ev.Sends {
			if len(tr.Receipts(ev.SentMsg(i))) > 0 {
				continue
			}
			line := r.StepLine(step)
			if strings.Contains(line, s.Type+" to nobody") || !strings.Contains(line, s.Type+"{") {
				t.Fatalf("#%d sent a %s nobody received, and its line lacks the fields:\n%s", step, s.Type, line)
			}
			return
		}
	}
	t.Fatal("no message of the run was lost: the test proves nothing")
}
