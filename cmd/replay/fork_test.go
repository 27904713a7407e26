package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// stepsOf is the number of steps of a trace (its events merged).
func stepsOf(t *testing.T, dir string, files ...string) int {
	t.Helper()
	r := replay(t, dir, append([]string{"events"}, files...)...)
	mustOK(t, r)
	return strings.Count(r.stdout, "\n")
}

// eventLines lists the first n lines of replay events without their
// effects: what a send became ("never received: ...") belongs to each
// trace's own future, so it may differ between a parent and its fork.
func eventLines(t *testing.T, dir string, n int, files ...string) []string {
	t.Helper()
	r := replay(t, dir, append([]string{"events", "--limit", strconv.Itoa(n)}, files...)...)
	mustOK(t, r)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	for i, l := range lines {
		if before, _, ok := strings.Cut(l, " -> "); ok {
			lines[i] = before
		}
	}
	return lines
}

// checkFork forks files at step and asserts what every fork must hold:
// exit 0 with a summary, 0 divergences, the parent's steps 0..step, the
// same bytes for the same seed; it returns the fork's path.
func checkFork(t *testing.T, dir string, step int, extra []string, files ...string) string {
	t.Helper()
	out := fmt.Sprintf("fork-%d.lz4", step)
	args := append(append([]string{"fork"}, files...), append([]string{"--at", strconv.Itoa(step), "--seed", "3", "-o", out}, extra...)...)
	r := replay(t, dir, args...)
	mustOK(t, r)
	for _, want := range []string{fmt.Sprintf("at #%d", step), "in flight:", "pending timers:", "partitions: none", "continued with seed 3", "next: replay verify " + out} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("fork output lacks %q:\n%s", want, r.stdout)
		}
	}
	v := replay(t, dir, "verify", out)
	mustOK(t, v)
	if !strings.Contains(v.stdout, ": 0 divergences") {
		t.Fatalf("verify %s: %s", out, v.stdout)
	}
	parent, forked := eventLines(t, dir, step+1, files...), eventLines(t, dir, step+1, out)
	if len(parent) != step+1 || len(forked) != step+1 {
		t.Fatalf("%d and %d lines for steps #0..#%d", len(parent), len(forked), step)
	}
	for i := range parent {
		if parent[i] != forked[i] {
			t.Fatalf("step #%d differs:\nparent %s\nfork   %s", i, parent[i], forked[i])
		}
	}
	args[len(args)-len(extra)-1] = "again.lz4"
	mustOK(t, replay(t, dir, args...))
	a, _ := os.ReadFile(filepath.Join(dir, out))
	b, _ := os.ReadFile(filepath.Join(dir, "again.lz4"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("two forks at #%d with seed 3 differ", step)
	}
	return out
}

// TestForkEverySystem forks a churned, lossy run of every bundled system
// in the middle and at its last step; the fork reads like any trace:
// info shows the fork's header, check runs the system's predicates.
func TestForkEverySystem(t *testing.T) {
	for _, sys := range examples.All() {
		t.Run(sys.Name, func(t *testing.T) {
			dir := t.TempDir()
			mustOK(t, replay(t, dir, "sim", sys.Name, "--seed", "2", "--time", "2s", "--steps", "3000", "--churn", "1", "--drop", "0.1", "--dup", "0.05", "-o", "p.lz4"))
			n := stepsOf(t, dir, "p.lz4")
			for _, step := range []int{n / 2, n - 1} {
				out := checkFork(t, dir, step, []string{"--steps", "1000"}, "p.lz4")
				info := replay(t, dir, "info", out)
				mustOK(t, info)
				for _, want := range []string{"fork:", "fork_at=" + strconv.Itoa(step), "fork_of=p.lz4", "seed=3", "churn=1", "drop=0.1"} {
					if !strings.Contains(info.stdout, want) {
						t.Fatalf("info lacks %q:\n%s", want, info.stdout)
					}
				}
				script, err := filepath.Abs(filepath.Join("..", "..", "scripts", sys.Name+".star"))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(script); err == nil {
					if c := replay(t, dir, "check", out, script); c.code != 0 && c.code != 1 {
						t.Fatalf("check %s: exit %d\n%s%s", out, c.code, c.stdout, c.stderr)
					}
				}
			}
			// A fork's schedule is not the simulator's alone: refused.
			badInput(t, replay(t, dir, "schedule", fmt.Sprintf("fork-%d.lz4", n-1)), "fork")
		})
	}
}

// splitByNode writes one file per node of a simulated trace, as live
// nodes record them (driver live, each file its own node's events).
func splitByNode(t *testing.T, dir, path string) []string { return splitStopping(t, dir, path, "", 0) }

// splitStopping is splitByNode with node stop's process stopped cleanly
// after its first keep events. The run is cut where a node would receive
// a message stop sent after that, which a stopped process never sent
// (every node's trace ends there).
func splitStopping(t *testing.T, dir, path string, stop node.ID, keep int) []string {
	t.Helper()
	f, err := record.ReadFile(filepath.Join(dir, path))
	if err != nil {
		t.Fatal(err)
	}
	var lastSeq uint64
	for i, kept := 0, 0; i < len(f.Events) && kept < keep; i++ {
		if ev := f.Events[i]; ev.Node == stop {
			lastSeq, kept = ev.Seq, kept+1
		}
	}
	for i, ev := range f.Events {
		if ev.Kind == node.KindRecv && ev.From == stop && ev.MsgSeq > lastSeq {
			f.Events = f.Events[:i]
			break
		}
	}
	var files []string
	for _, id := range f.Header.Nodes {
		h := *f.Header
		h.Driver, h.Recorded, h.Run = "live", []node.ID{id}, nil
		name := "node-" + string(id) + ".lz4"
		out, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		w, err := record.NewWriter(out, h, record.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		end := record.End{Reason: "terminated", Time: f.Ends[0].Time}
		kept := 0
		for _, ev := range f.Events {
			if ev.Node != id {
				continue
			}
			if id == stop && kept == keep {
				break
			}
			if err := w.Append(ev); err != nil {
				t.Fatal(err)
			}
			kept++
			if id == stop {
				end = record.End{Reason: "stopped by the test", Time: ev.Time}
			}
		}
		if err := w.Close(end); err != nil {
			t.Fatal(err)
		}
		out.Close()
		files = append(files, name)
	}
	return files
}

// A recording in one file per node forks like one file: every file given,
// merged; one missing makes fork name that node. The network settings of
// a recording that was not simulated are the system's.
func TestForkPerNodeFiles(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "5", "--time", "1s", "--churn", "0", "-o", "p.lz4"))
	files := splitByNode(t, dir, "p.lz4")
	n := stepsOf(t, dir, files...)
	checkFork(t, dir, n/3, []string{"--steps", "500"}, files...)
	badInput(t, replay(t, dir, append([]string{"fork", "--at", "10", "-o", "x.lz4"}, files[1:]...)...), "node n1", "none of the given traces records it")
}

// A live node whose process stopped cleanly before the step is down in
// the world (no crash is recorded for it): without churn it stays down in
// the continuation, with churn it restarts.
func TestForkStoppedLiveNode(t *testing.T) {
	dir := t.TempDir()
	// Causal clocks, as the separate processes of a live cluster record.
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "5", "--time", "1s", "--churn", "0", "--drop", "0", "--clocks", "causal", "-o", "p.lz4"))
	files := splitStopping(t, dir, "p.lz4", "n1", 12)
	// Fork at the recording's end, n1 stopped after its 12th event.
	step := stepsOf(t, dir, files...) - 1
	out := checkFork(t, dir, step, []string{"--steps", "300", "--churn", "0"}, files...)
	f := replay(t, dir, append([]string{"fork", "--at", strconv.Itoa(step), "--churn", "0", "-o", "y.lz4"}, files...)...)
	mustOK(t, f)
	if !strings.Contains(f.stdout, "n1 stopped: stopped by the test") {
		t.Fatalf("the fork does not say n1 had stopped:\n%s", f.stdout)
	}
	after := replay(t, dir, "events", out, "--node", "n1", "--from", strconv.Itoa(step+1))
	mustOK(t, after)
	if after.stdout != "" {
		t.Fatalf("n1 ran in the continuation without churn:\n%s", after.stdout)
	}
	checkFork(t, dir, step, []string{"--steps", "2000", "--churn", "5"}, files...)
	after = replay(t, dir, "events", fmt.Sprintf("fork-%d.lz4", step), "--node", "n1", "--kind", "restart")
	mustOK(t, after)
	if after.stdout == "" {
		t.Fatal("n1 never restarted under churn")
	}
}

// TestForkBadInput: each wrong invocation exits 2 with one line naming
// the problem; a trace that diverges before the step exits 3; nothing is
// left at -o.
func TestForkBadInput(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "4", "--time", "1s", "-o", "p.lz4"))
	n := stepsOf(t, dir, "p.lz4")
	fork := func(args ...string) result { return replay(t, dir, append([]string{"fork"}, args...)...) }
	badInput(t, fork("p.lz4", "-o", "x.lz4"), "missing --at")
	badInput(t, fork("p.lz4", "--at", "-1", "-o", "x.lz4"), "--at -1")
	badInput(t, fork("p.lz4", "--at", strconv.Itoa(n), "-o", "x.lz4"), fmt.Sprintf("--at %d", n), fmt.Sprintf("#0..#%d", n-1))
	badInput(t, fork("p.lz4", "--at", "5"), "missing -o")
	badInput(t, fork("p.lz4", "--at", "5", "-o", "p.lz4"), "also an input")
	badInput(t, fork("--at", "5", "-o", "x.lz4"), "missing TRACE")
	badInput(t, fork("missing.lz4", "--at", "5", "-o", "x.lz4"), "missing.lz4")
	badInput(t, fork("p.lz4", "--at", "5", "--drop", "2", "-o", "x.lz4"), "--drop 2")
	badInput(t, fork("p.lz4", "--at", "5", "--latency", "5ms", "-o", "x.lz4"), "--latency")
	badInput(t, fork("p.lz4", "--at", "5", "--bug", "spec", "-o", "x.lz4"), "unknown flag: --bug")
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	badInput(t, fork("p.lz4", "--at", "5", "-o", "adir"), "adir", "directory")
	badInput(t, fork("p.lz4", "--at", "5", "-o", "nodir/x.lz4"), "nodir")
	if err := os.WriteFile(filepath.Join(dir, "garbage.lz4"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	badInput(t, fork("garbage.lz4", "--at", "0", "-o", "x.lz4"), "not a replaycheck trace")

	// A trace of a system this binary does not know.
	f, err := record.ReadFile(filepath.Join(dir, "p.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	rewrite := func(name string, h record.Header, edit func(*node.Event)) {
		out, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		w, err := record.NewWriter(out, h, record.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range f.Events {
			e := *ev
			if edit != nil {
				edit(&e)
			}
			w.Append(&e)
		}
		w.Close(f.Ends[0])
		out.Close()
	}
	h := *f.Header
	h.System = "nosuch"
	rewrite("nosuch.lz4", h, nil)
	badInput(t, fork("nosuch.lz4", "--at", "5", "-o", "x.lz4"), "unknown system \"nosuch\"", "built with cli.Main")
	badInput(t, replay(t, dir, "verify", "nosuch.lz4"), "unknown system \"nosuch\"", "built with cli.Main")

	// A trace whose 20th event drew another seed than its handler now
	// does diverges there: a fork after it exits 3, one before it works.
	seeds, victim := 0, node.MsgID{}
	rewrite("tampered.lz4", *f.Header, func(ev *node.Event) {
		for i := range ev.Nondet {
			if ev.Nondet[i].Kind == node.NondetSeed {
				if seeds++; seeds == 20 {
					ev.Nondet = append([]node.Nondet(nil), ev.Nondet...)
					ev.Nondet[i].Int ^= 0x5a5a
					victim = node.MsgID{From: ev.Node, Seq: ev.Seq}
				}
			}
		}
	})
	if victim.From == "" {
		t.Fatal("fewer than 20 events drew a seed")
	}
	v := replay(t, dir, "verify", "tampered.lz4")
	at := strings.Index(v.stdout, "replay diverged at step #")
	if v.code != 3 || at < 0 {
		t.Fatalf("verify of the tampered trace: exit %d\n%s", v.code, v.stdout)
	}
	var bad int
	fmt.Sscanf(v.stdout[at:], "replay diverged at step #%d", &bad)
	r := fork("tampered.lz4", "--at", strconv.Itoa(n-1), "-o", "x.lz4")
	if r.code != 3 || !strings.Contains(r.stderr, fmt.Sprintf("diverged at step #%d", bad)) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("fork of a diverging trace: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.lz4")); !os.IsNotExist(err) {
		t.Fatal("a refused fork left its output")
	}
	if bad > 0 {
		mustOK(t, fork("tampered.lz4", "--at", strconv.Itoa(bad-1), "--steps", "100", "-o", "before.lz4"))
	}
}

func TestForkHelp(t *testing.T) {
	r := replay(t, t.TempDir(), "fork", "--help")
	mustOK(t, r)
	for _, want := range []string{"--at", "--seed", "--steps", "--time", "--drop", "--dup", "--churn", "--latency", "--down", "--max-down", "--output",
		"in flight", "live recordings", "exits 3", "scenario is not run again", "healed", "fork_of"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("replay fork --help lacks %q", want)
		}
	}
	if r := replay(t, t.TempDir(), "--help"); !strings.Contains(r.stdout, "fork") {
		t.Error("replay --help does not list fork")
	}
}

// TestForkKeepsTheParentsLosses: a message the parent never delivered,
// whose receiver had lived past the end of its latency window, was lost
// (paxos spec seed 8 drops 30%); a fork does not deliver it, even with
// --drop 0. Before, every such message arrived at once as the fork began.
func TestForkKeepsTheParentsLosses(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--bug", "spec", "--seed", "8", "-o", "p.lz4"))
	const at = 1062
	fork := replay(t, dir, "fork", "p.lz4", "--at", fmt.Sprint(at), "--drop", "0", "--steps", "300", "-o", "f.lz4")
	mustOK(t, fork)
	r := replay(t, dir, "events", "f.lz4", "--json")
	mustOK(t, r)
	type ev struct {
		Step     int    `json:"step"`
		Node     string `json:"node"`
		Kind     string `json:"kind"`
		TimeNS   int64  `json:"time_ns"`
		SentStep *int   `json:"sent_step"`
	}
	var evs []ev
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e ev
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	last := map[string]int64{} // each node's latest event time up to the fork
	down := map[string]bool{}  // down at the fork: its last event a crash
	for _, e := range evs[:at+1] {
		last[e.Node] = max(last[e.Node], e.TimeNS)
		down[e.Node] = e.Kind == "crash"
	}
	const latencyMax = int64(10 * time.Millisecond) // the trace's latency=1ms-10ms
	late := 0
	for _, e := range evs[at+1:] {
		if e.SentStep != nil && *e.SentStep <= at && last[e.Node] > evs[*e.SentStep].TimeNS+latencyMax {
			late++
		}
	}
	if late > 0 {
		t.Fatalf("the fork delivered %d messages the parent had lost (their receivers had passed their latency windows)", late)
	}
	// What fork prints as in flight is what the continuation may still
	// deliver; the parent's losses are listed apart.
	section := ""
	listed := map[string]int{}
	for _, line := range strings.Split(fork.stdout, "\n") {
		switch {
		case strings.HasPrefix(line, "  in flight:"):
			section = "flying"
		case strings.HasPrefix(line, "  lost by the parent run:"):
			section = "lost"
		case strings.HasPrefix(line, "    ") && strings.Contains(line, ", sent at #") && section != "":
			var id, to, typ string
			var sent int
			if _, err := fmt.Sscanf(strings.ReplaceAll(strings.TrimSpace(line), ",", " "), "%s -> %s %s sent at #%d", &id, &to, &typ, &sent); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			// Lost: the receiver's clock passed the window's end, or it
			// was down (serial clocks) when the world's time did.
			passed := last[to] > evs[sent].TimeNS+latencyMax || down[to] && evs[at].TimeNS > evs[sent].TimeNS+latencyMax
			if passed != (section == "lost") {
				t.Errorf("%s lists %s (to %s, sent at #%d): the receiver's clock passed its window: %v", section, id, to, sent, passed)
			}
			listed[section]++
		default:
			section = ""
		}
	}
	if listed["lost"] == 0 || listed["flying"] == 0 {
		t.Fatalf("fork lists %v; want messages both in flight and lost by the parent:\n%s", listed, fork.stdout)
	}
	// Of many losses it lists the latest, nearest the fork, and counts
	// the earlier ones (it listed the first of the run: a new user's fork
	// at #1740 showed losses of #3 and #8).
	if m := regexp.MustCompile(`(?m)^  lost by the parent run: (\d+) message`).FindStringSubmatch(fork.stdout); m != nil && m[1] != "8" && listed["lost"] == 8 {
		n, _ := strconv.Atoi(m[1])
		if !strings.Contains(fork.stdout, fmt.Sprintf("    ... and %d earlier\n", n-8)) {
			t.Fatalf("fork lists 8 of %d losses without saying the rest are earlier:\n%s", n, fork.stdout)
		}
	}
	if len(evs) <= at+1 {
		t.Fatal("the fork has no continuation")
	}
}

// A fork's network line counted the messages its parent had lost before
// the fork among its own losses, and a new user took a --drop 0 fork's
// "9 lost" for the continuation's: it says which are the parent's.
func TestForkSaysWhichLossesAreTheParents(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "--drop", "0.2", "-o", "pd.lz4"))
	r := replay(t, dir, "fork", "pd.lz4", "--at", "800", "--seed", "3", "--drop", "0", "-o", "f.lz4")
	mustOK(t, r)
	m := regexp.MustCompile(`count the (\d+) message\(s\) in flight at the fork too, and lost the (\d+) the parent had lost \(above\): the continuation lost 0\)`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("the network line does not tell the parent's losses apart:\n%s", r.stdout)
	}
	// The counts are the header's: a new user read "in flight: 1" above
	// and "the 3 message(s) of the world in flight at the fork" below.
	header := regexp.MustCompile(`(?m)^  in flight: (\d+) message`).FindStringSubmatch(r.stdout)
	lost := regexp.MustCompile(`(?m)^  lost by the parent run: (\d+) message`).FindStringSubmatch(r.stdout)
	if header == nil || lost == nil || header[1] != m[1] || lost[1] != m[2] {
		t.Fatalf("the network line's counts (%s in flight, %s lost by the parent) are not the header's (%v, %v):\n%s", m[1], m[2], header, lost, r.stdout)
	}
}

// A node down at the fork stays down in a continuation without churn,
// and the fork says so (critical's walks restart such nodes, which made
// a user expect the same of fork); with churn it says nothing of it.
func TestForkSaysADownNodeStaysDown(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "p.lz4"))
	ev := replay(t, dir, "events", "p.lz4")
	mustOK(t, ev)
	crash := regexp.MustCompile(`(?m)^#(\d+) \S+ \S+ (n\d+) crash`).FindStringSubmatch(ev.stdout)
	if crash == nil {
		t.Fatal("no crash in paxos seed 1")
	}
	r := replay(t, dir, "fork", "p.lz4", "--at", crash[1], "--churn", "0", "--steps", "200", "-o", "f.lz4")
	mustOK(t, r)
	if want := crash[2] + ", down at the fork, stayed down: the continuation has no churn"; !strings.Contains(r.stderr, want) {
		t.Fatalf("fork at the crash #%s of %s without churn: stderr lacks %q:\n%s", crash[1], crash[2], want, r.stderr)
	}
	r = replay(t, dir, "fork", "p.lz4", "--at", crash[1], "--churn", "2", "--steps", "200", "-o", "g.lz4")
	mustOK(t, r)
	if strings.Contains(r.stderr, "stayed down") {
		t.Fatalf("fork with churn says a node stayed down:\n%s", r.stderr)
	}
}

// TestForkInterruptedLeavesNothing: a Ctrl-C while fork rebuilds the
// world ends the process at once ("its output was not written"), and the
// empty partial file it had made for its output stayed behind. The
// output is now made once the world is rebuilt.
func TestForkInterruptedLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "9", "--time", "3000s", "--steps", "300000", "-o", "huge.lz4"))
	// The rebuild takes four to five times as long as loading the trace
	// (0.5 s and 2.5 s here): a signal at twice the load's time comes
	// during the rebuild on a faster machine or a slower one alike.
	start := time.Now()
	mustOK(t, replay(t, dir, "events", "huge.lz4", "--limit", "1"))
	load := time.Since(start)
	r := replayInterrupted(t, dir, 2*load, os.Interrupt, "fork", "huge.lz4", "--at", "299000", "-o", "out.fork.lz4")
	if r.code != 130 {
		t.Fatalf("fork interrupted: exit %d\n%s", r.code, r.stderr)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), "out.fork") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
