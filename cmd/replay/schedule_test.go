package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestScheduleRerunsTheRun: a seeded run's schedule, extracted as text,
// re-runs the same events (replay events agree line for line); the trace
// itself works as --schedule too; an edited schedule whose event cannot
// happen exits 3 naming the line; flags that would change the run are
// refused.
func TestScheduleRerunsTheRun(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--bug", "spec", "--seed", "4", "--churn", "0.3", "--dup", "0.05", "-o", "a.lz4"))
	mustOK(t, replay(t, dir, "schedule", "a.lz4", "-o", "a.schedule"))
	want := replay(t, dir, "events", "a.lz4")
	mustOK(t, want)
	for _, from := range []string{"a.schedule", "a.lz4"} {
		mustOK(t, replay(t, dir, "sim", "paxos", "--schedule", from, "-o", "b.lz4"))
		got := replay(t, dir, "events", "b.lz4")
		if got.stdout != want.stdout {
			t.Fatalf("--schedule %s: the rerun's events differ from the original's", from)
		}
	}
	mustOK(t, replay(t, dir, "verify", "b.lz4"))

	text, err := os.ReadFile(filepath.Join(dir, "a.schedule"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(text), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "#") && strings.Contains(l, " recv ") {
			f := strings.Fields(l) // deliver a message that was never sent
			lines[i] = strings.Join([]string{f[0], f[1], f[2], f[3] + "9", f[4]}, " ")
			break
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.schedule"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	r := replay(t, dir, "sim", "paxos", "--schedule", "bad.schedule", "-o", "c.lz4")
	if r.code != 3 || !strings.Contains(r.stderr, "schedule line") {
		t.Fatalf("an impossible schedule: exit %d, want 3 naming the schedule event\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	// A delivery's message type edited: the pending event is named.
	typed := strings.Replace(string(text), "paxos.Collect", "paxos.Zzz", 1)
	if err := os.WriteFile(filepath.Join(dir, "typed.schedule"), []byte(typed), 0o644); err != nil {
		t.Fatal(err)
	}
	r = replay(t, dir, "sim", "paxos", "--schedule", "typed.schedule", "-o", "d.lz4")
	if r.code != 3 || !strings.Contains(r.stderr, "the pending event is recv") {
		t.Fatalf("an edited message type: exit %d, want 3 naming the pending event\nstderr: %s", r.code, r.stderr)
	}
	// An init's seed removed: the handler's draw is not in the schedule,
	// which leaves it as an impossible event does (exit 3, not 1).
	unseeded := regexp.MustCompile(`(?m)^(\S+ init n3) seed=[0-9a-f]+`).ReplaceAllString(string(text), "$1")
	if unseeded == string(text) {
		t.Fatal("the schedule lists no seed for n3's init")
	}
	os.WriteFile(filepath.Join(dir, "unseeded.schedule"), []byte(unseeded), 0o644)
	r = replay(t, dir, "sim", "paxos", "--schedule", "unseeded.schedule", "-o", "u.lz4")
	if r.code != 3 || !strings.Contains(r.stderr, "init n3: the handler drew a random seed the schedule does not list") {
		t.Fatalf("a seed removed: exit %d, want 3\nstderr: %s", r.code, r.stderr)
	}
	// A node that is not in the run is bad input.
	if err := os.WriteFile(filepath.Join(dir, "n9.schedule"), []byte(strings.Replace(string(text), " init n1", " init n9", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	badInput(t, replay(t, dir, "sim", "paxos", "--schedule", "n9.schedule"), "n9", "not a node")
	mustOK(t, replay(t, dir, "sim", "paxos", "--schedule", "a.schedule", "--no-state-hashes", "-o", "e.lz4"))
	badInput(t, replay(t, dir, "sim", "paxos", "--schedule", "a.schedule", "--check", "x.star"), "--check", "hunt")
	badInput(t, replay(t, dir, "sim", "paxos", "--schedule", "a.schedule", "--seed", "9"), "--seed", "--schedule")
	badInput(t, replay(t, dir, "sim", "chord", "--schedule", "a.schedule"), "paxos", "chord")
	badInput(t, replay(t, dir, "sim", "paxos", "--schedule", "missing.schedule"), "missing.schedule")
	badInput(t, replay(t, dir, "schedule"), "TRACE")
}

// A simulation that stopped on an error (here a schedule line the run
// could not follow) wrote a whole trace of a run cut short: check and
// verify said nothing of it (exit 0, complete), only info did. Every verb
// that loads it now says so on stderr.
func TestRunStoppedOnAnErrorIsSaid(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "lockserver", "--seed", "1", "-o", "ls.lz4"))
	mustOK(t, replay(t, dir, "schedule", "ls.lz4", "-o", "ls.schedule"))
	b, err := os.ReadFile(filepath.Join(dir, "ls.schedule"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	// A timer that was never set, at the time of the line before it.
	at := slices.IndexFunc(lines, func(l string) bool { return !strings.HasPrefix(l, "#") && strings.Contains(l, " task ") })
	bad := strings.Fields(lines[at])[0] + " timer c1 999 bogus"
	lines = slices.Insert(lines, at, bad)
	if err := os.WriteFile(filepath.Join(dir, "bad.schedule"), []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := replay(t, dir, "sim", "lockserver", "--schedule", "bad.schedule", "-o", "bad.lz4"); r.code == 0 {
		t.Fatalf("the impossible schedule ran:\n%s", r.stdout)
	}
	for _, args := range [][]string{{"check", "bad.lz4", "builtin:lockserver"}, {"verify", "bad.lz4"}} {
		r := replay(t, dir, args...)
		if !strings.Contains(r.stderr, "note: bad.lz4: the run stopped on an error, so it ends where the trace does: schedule line") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
}
