package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

func TestVerify(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "3", "--dup", "0.1", "-o", "t.lz4"))
	r := replay(t, dir, "verify", "t.lz4")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "on 7 nodes: 0 divergences") {
		t.Fatalf("verify: %s", r.stdout)
	}
	r = replay(t, dir, "verify", "t.lz4", "--nodes", "n1,n3,n5")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "on 3 nodes: 0 divergences") {
		t.Fatalf("partial verify: %s", r.stdout)
	}
	badInput(t, replay(t, dir, "verify", "t.lz4", "--nodes", "n42"), "n42")
}

// TestVerifyReportsTamperedStep changes one recorded random seed: replay
// must stop at exactly that step, name the node and event, exit 3.
func TestVerifyReportsTamperedStep(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "4", "-o", "t.lz4"))
	f, err := record.ReadFile(filepath.Join(dir, "t.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	r := replay(t, dir, "events", "t.lz4", "--json")
	mustOK(t, r)
	// Pick the 50th event that drew a random seed, and note its step.
	var victim *node.Event
	seen := 0
	for _, ev := range f.Events {
		for i := range ev.Nondet {
			if ev.Nondet[i].Kind == node.NondetSeed {
				seen++
				if seen == 50 {
					ev.Nondet[i].Int ^= 0x5a5a
					victim = ev
				}
			}
		}
	}
	if victim == nil {
		t.Fatal("no event drew 50 seeds")
	}
	step := -1
	for i, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if strings.Contains(line, fmt.Sprintf(`"node":"%s","seq":%d,`, victim.Node, victim.Seq)) {
			step = i
		}
	}
	out, _ := os.Create(filepath.Join(dir, "tampered.lz4"))
	w, _ := record.NewWriter(out, *f.Header, record.WriterOptions{})
	for _, ev := range f.Events {
		w.Append(ev)
	}
	w.Close(f.Ends[0])
	out.Close()

	r = replay(t, dir, "verify", "tampered.lz4")
	if r.code != 3 {
		t.Fatalf("verify of a tampered trace: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := fmt.Sprintf("replay diverged at step #%d", step)
	if !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, fmt.Sprintf("%s seq %d", victim.Node, victim.Seq)) {
		t.Fatalf("report does not name step #%d, %s seq %d:\n%s", step, victim.Node, victim.Seq, r.stdout)
	}
	if !strings.Contains(r.stdout, "likely causes") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("report or stderr malformed:\nstdout %s\nstderr %s", r.stdout, r.stderr)
	}
	// Every verb that replays past the step exits 3, as verify does
	// (state and history exited 2).
	for _, args := range [][]string{
		{"state", "tampered.lz4", "--at", fmt.Sprint(len(f.Events) - 1), "--node", string(victim.Node)},
		{"history", "tampered.lz4", "--node", string(victim.Node), "--field", "Agent.AcceptedRound"},
	} {
		if r := replay(t, dir, args...); r.code != 3 || !strings.Contains(r.stderr, "diverged") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "6", "-o", "t.lz4"))
	mustOK(t, replay(t, dir, "merge", "t.lz4", "-o", "m.lz4"))
	a := replay(t, dir, "events", "t.lz4")
	b := replay(t, dir, "events", "m.lz4")
	mustOK(t, a)
	mustOK(t, b)
	// A fate says how a lost message was lost only where the header says
	// what network the run had: the merge keeps the events, not the
	// simulator's settings, so its lost messages are "not delivered".
	fates := regexp.MustCompile(`\((dropped|in flight|receiver down|partitioned|not delivered)\)`)
	if fates.ReplaceAllString(a.stdout, "()") != fates.ReplaceAllString(b.stdout, "()") || a.stdout == "" {
		t.Fatal("the merged trace lists different events than its input")
	}
	if !strings.Contains(a.stdout, " (dropped)") || !strings.Contains(b.stdout, " (not delivered)") {
		t.Fatal("the simulated trace's lost messages should read dropped and the merged one's not delivered")
	}
	r := replay(t, dir, "verify", "m.lz4")
	mustOK(t, r)
	badInput(t, replay(t, dir, "merge", "t.lz4", "./t.lz4", "-o", "twice.lz4"), "./t.lz4 is given twice (also as t.lz4)")
	data, _ := os.ReadFile(filepath.Join(dir, "t.lz4"))
	os.WriteFile(filepath.Join(dir, "copy.lz4"), data, 0o644)
	badInput(t, replay(t, dir, "merge", "t.lz4", "copy.lz4", "-o", "twice.lz4"), "recorded twice")
	badInput(t, replay(t, dir, "merge", "t.lz4"), "-o")
	if _, err := os.Stat(filepath.Join(dir, "twice.lz4")); !os.IsNotExist(err) {
		t.Fatal("a failed merge left its output file")
	}

	// Files of different releases' codecs cannot be one file: its header
	// would say every message was encoded as the first file's were.
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "6", "--clocks", "causal", "-o", "c.lz4"))
	files := splitByNode(t, dir, "c.lz4")
	f, err := record.ReadFile(filepath.Join(dir, files[1]))
	if err != nil {
		t.Fatal(err)
	}
	f.Header.Codec = "cbor-core-deterministic/1"
	rewriteTrace(t, f, filepath.Join(dir, files[1]))
	badInput(t, replay(t, dir, append(append([]string{"merge"}, files...), "-o", "mixed.lz4")...), "different message codecs (cbor-core-deterministic/2, cbor-core-deterministic/1)")
}

// Merges of some nodes' files record the others as gaps. A gap that
// another given file covers is no loss: a merge of merges replays every
// step, as does a merge given beside the file of the node it lacked (the
// gap hid those events: verify replayed 0 steps, check raised false
// alarms). A merge of a cut file keeps the cut: checking it is checking
// less than the run, exit 2, as checking the files was (it exited 0).
func TestMergesOfMergesAndCutFiles(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "2", "--steps", "60000", "--time", "100h", "--clocks", "causal", "-o", "all.lz4"))
	files := splitByNode(t, dir, "all.lz4")
	steps := func(r result) string {
		return regexp.MustCompile(`replayed (\d+) steps`).FindString(r.stdout)
	}
	whole := replay(t, dir, "verify", "all.lz4")
	mustOK(t, whole)
	mustOK(t, replay(t, dir, append(append([]string{"merge"}, files[:2]...), "-o", "a.lz4")...))
	mustOK(t, replay(t, dir, append(append([]string{"merge"}, files[2:]...), "-o", "b.lz4")...))
	mustOK(t, replay(t, dir, "merge", "a.lz4", "b.lz4", "-o", "ab.lz4"))
	for _, args := range [][]string{{"verify", "ab.lz4"}, append([]string{"verify", "a.lz4"}, files[2:]...)} {
		r := replay(t, dir, args...)
		if r.code != 0 || steps(r) != steps(whole) || strings.Contains(r.stdout, "state unknown") {
			t.Fatalf("%v: exit %d, want %q\n%s%s", args, r.code, steps(whole), r.stdout, r.stderr)
		}
	}
	if out := replay(t, dir, "info", "ab.lz4").stdout; strings.Contains(out, "gap") || !strings.Contains(out, "complete") {
		t.Fatalf("the merge of merges records gaps over events it has:\n%s", out)
	}
	// n2's file cut, then merged.
	data, err := os.ReadFile(filepath.Join(dir, "node-n2.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "node-n2.lz4"), data[:len(data)*3/5], 0o644)
	mustOK(t, replay(t, dir, append(append([]string{"merge"}, files...), "-o", "cut.lz4")...))
	for _, verb := range []string{"verify", "check"} {
		args := []string{verb, "cut.lz4"}
		if verb == "check" {
			args = append(args, "builtin:paxos")
		}
		r := replay(t, dir, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "the recording of node n2 stopped before the run ended (n2 after #") {
			t.Fatalf("%s of a merge of a cut file: exit %d\n%s%s", verb, r.code, r.stdout, r.stderr)
		}
	}
}

// A trace cut short is judged alike by every verb: a liveness interval
// open where it ends is not judged (check said so; index --preds, debug
// and report raised it as an alarm at the last step).
func TestIncompleteTraceJudgedAlikeByEveryVerb(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "--steps", "30000", "--time", "100h", "-o", "all.lz4"))
	data, err := os.ReadFile(filepath.Join(dir, "all.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cut.lz4"), data[:len(data)/2], 0o644)
	os.WriteFile(filepath.Join(dir, "never.star"), []byte("liveness(\"Never\", lambda: False)\n"), 0o644)
	r := replay(t, dir, "check", "cut.lz4", "never.star")
	if r.code != 2 || !strings.Contains(r.stdout, "0 alarm(s)") || !strings.Contains(r.stdout, "1 still open where the incomplete trace ends") {
		t.Fatalf("check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// index said the open interval was "not raised (closed, or screened
	// by an alarm function)".
	r = replay(t, dir, "index", "cut.lz4", "--preds", "never.star")
	if !strings.Contains(r.stdout, "predicates never.star (checked): 0 violation(s), 1 liveness interval(s) not judged") || strings.Contains(r.stdout, "not raised") {
		t.Fatalf("index --preds: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Files of two runs of a cluster do not merge; when their recordings
// began far apart, the error says so, not only which message does not
// match (a new user's mixed files read "50 or more problems ... sent
// only 0 messages"). Files of one run get no such hint.
func TestFilesOfTwoRunsAreNamedSo(t *testing.T) {
	dir := t.TempDir()
	for _, seed := range []string{"1", "2"} {
		sub := filepath.Join(dir, "run"+seed)
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		mustOK(t, replay(t, sub, "sim", "paxos", "--seed", seed, "--time", "2s", "-o", "p.lz4"))
		splitByNode(t, sub, "p.lz4")
	}
	// The second run began two hours after the first.
	f, err := record.ReadFile(filepath.Join(dir, "run2", "node-n2.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	shift := int64(2 * time.Hour)
	f.Header.Start += shift
	for _, ev := range f.Events {
		ev.Time += shift
	}
	f.Ends[0].Time += shift
	rewriteTrace(t, f, filepath.Join(dir, "run2", "node-n2.lz4"))
	files := []string{"run1/node-n1.lz4", "run2/node-n2.lz4"}
	for _, id := range []string{"n3", "n4", "n5", "n6", "n7"} {
		files = append(files, "run1/node-"+id+".lz4")
	}
	r := replay(t, dir, append([]string{"verify"}, files...)...)
	if r.code != 2 || !strings.Contains(r.stderr, "the files' recordings began 2h0m0s apart (node-n1.lz4 at ") || !strings.Contains(r.stderr, "files of different runs of a cluster do not merge") {
		t.Fatalf("verify of two runs' files: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	files[1] = "run1/node-n2.lz4"
	mustOK(t, replay(t, dir, append([]string{"verify"}, files...)...))
}
