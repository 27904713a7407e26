package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Spaced state hashes through the command line: the flags, what info
// says, determinism, and a schedule that re-runs byte for byte.
func TestStateHashSpacingFlags(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "raftkv", "--seed", "3", "--hash-every", "4", "-o", "a.lz4"))
	mustOK(t, replay(t, dir, "sim", "raftkv", "--seed", "3", "--hash-every", "4", "-o", "b.lz4"))
	a, _ := os.ReadFile(filepath.Join(dir, "a.lz4"))
	b, _ := os.ReadFile(filepath.Join(dir, "b.lz4"))
	if len(a) == 0 || string(a) != string(b) {
		t.Fatal("same seed and spacing, different traces")
	}
	r := replay(t, dir, "info", "a.lz4")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "after every 4th event of each node") {
		t.Fatalf("info does not say how hashes are spaced:\n%s", r.stdout)
	}
	mustOK(t, replay(t, dir, "verify", "a.lz4"))
	mustOK(t, replay(t, dir, "schedule", "a.lz4", "-o", "a.schedule"))
	sched, _ := os.ReadFile(filepath.Join(dir, "a.schedule"))
	if !strings.Contains(string(sched), "state-hashes every 4") {
		t.Fatalf("the schedule does not keep the spacing:\n%.400s", sched)
	}
	mustOK(t, replay(t, dir, "sim", "raftkv", "--schedule", "a.schedule", "-o", "c.lz4"))
	// The re-run's header names its chooser; its events and hashes are
	// the original's.
	ea, ec := replay(t, dir, "events", "a.lz4"), replay(t, dir, "events", "c.lz4")
	va, vc := replay(t, dir, "verify", "a.lz4"), replay(t, dir, "verify", "c.lz4")
	mustOK(t, vc)
	hashes := func(s string) string { return strings.Fields(s[strings.Index(s, "divergences"):])[1] }
	if ea.stdout != ec.stdout || hashes(va.stdout) != hashes(vc.stdout) {
		t.Fatalf("re-running the schedule changed the run:\n%s\n%s", va.stdout, vc.stdout)
	}
	for _, bad := range [][]string{{"--hash-every", "0"}, {"--hash-bytes", "-3"}, {"--hash-every", "2", "--hash-bytes", "9"}, {"--hash-every", "2", "--no-state-hashes"}} {
		r := replay(t, dir, append([]string{"sim", "raftkv", "-o", "x.lz4"}, bad...)...)
		if r.code != 2 || !strings.Contains(r.stderr, "--hash-") {
			t.Fatalf("%v: exit %d, %q", bad, r.code, r.stderr)
		}
	}
}

// --cpuprofile writes a profile go tool pprof reads; an unwritable path
// is bad input.
func TestCPUProfileFlag(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "p.lz4", "--cpuprofile", "cpu.prof"))
	if st, err := os.Stat(filepath.Join(dir, "cpu.prof")); err != nil || st.Size() == 0 {
		t.Fatalf("no profile written: %v", err)
	}
	r := replay(t, dir, "info", "p.lz4", "--cpuprofile", filepath.Join(dir, "nodir", "cpu.prof"))
	if r.code != 2 || !strings.Contains(r.stderr, "--cpuprofile") {
		t.Fatalf("unwritable profile: exit %d, %q", r.code, r.stderr)
	}
}

// --starlark-profile writes a pprof profile of the script's own functions:
// the named helpers of the predicates appear in it by name.
func TestStarlarkProfileFlag(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "p.lz4"))
	script := filepath.Join(dir, "p.star")
	if err := os.WriteFile(script, []byte(`
def slow_helper(n):
    total = 0
    for i in range(20000):
        total += i
    return total >= 0

Agent = table("paxos.Agent")
safety("Slow", lambda: forall(Agent, slow_helper))
`), 0o644); err != nil {
		t.Fatal(err)
	}
	mustOK(t, replay(t, dir, "check", "p.lz4", script, "--starlark-profile", "sl.prof"))
	raw, err := os.ReadFile(filepath.Join(dir, "sl.prof"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the profile is not gzipped pprof: %v", err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte("slow_helper")) {
		t.Fatalf("the profile does not name the script's function (%d bytes)", len(body))
	}
	r := replay(t, dir, "check", "p.lz4", script, "--starlark-profile", filepath.Join(dir, "nodir", "sl.prof"))
	if r.code != 2 || !strings.Contains(r.stderr, "--starlark-profile") {
		t.Fatalf("unwritable profile: exit %d, %q", r.code, r.stderr)
	}
	r = replay(t, dir, "check", "p.lz4", script, "--starlark-profile", "x.prof", "--cpuprofile", "./x.prof")
	if r.code != 2 || !strings.Contains(r.stderr, "both name") {
		t.Fatalf("both profiles to one file: exit %d, %q", r.code, r.stderr)
	}
	// A profile naming an input or an output would empty the one or be
	// lost under the other: refused, and the input is intact.
	before, _ := os.ReadFile(filepath.Join(dir, "p.lz4"))
	for _, args := range [][]string{
		{"check", "p.lz4", script, "--starlark-profile", "p.lz4"},
		{"check", "p.lz4", script, "--cpuprofile", script},
		{"sim", "paxos", "-o", "out.lz4", "--cpuprofile", "out.lz4"},
	} {
		r = replay(t, dir, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "also an argument") {
			t.Fatalf("%v: exit %d, %q", args, r.code, r.stderr)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "p.lz4")); !bytes.Equal(before, after) {
		t.Fatal("a refused profile changed the trace")
	}
	// Nor may it replace a trace or a script the command does not name
	// (both were overwritten with a gzip profile).
	os.WriteFile(filepath.Join(dir, "keep.lz4"), before, 0o644)
	os.WriteFile(filepath.Join(dir, "mine.star"), []byte("safety(\"P\", lambda: True)\n"), 0o644)
	for _, c := range []struct{ flag, path, want string }{
		{"--cpuprofile", "keep.lz4", "keep.lz4 is a trace"},
		{"--starlark-profile", "mine.star", "mine.star is a predicates script"},
	} {
		r = replay(t, dir, "check", "p.lz4", script, c.flag, c.path)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Fatalf("%s %s: exit %d, %q", c.flag, c.path, r.code, r.stderr)
		}
	}
	if kept, _ := os.ReadFile(filepath.Join(dir, "keep.lz4")); !bytes.Equal(before, kept) {
		t.Fatal("a refused profile replaced a trace")
	}
	if kept, _ := os.ReadFile(filepath.Join(dir, "mine.star")); !bytes.HasPrefix(kept, []byte("safety(")) {
		t.Fatal("a refused profile replaced a script")
	}
	// A word of the command that names no file (the system) is no input
	// to keep: the profile may take that name.
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "4", "-o", "p4.lz4", "--cpuprofile", "paxos"))
	if st, err := os.Stat(filepath.Join(dir, "paxos")); err != nil || st.Size() == 0 {
		t.Fatalf("no profile under the system's name: %v", err)
	}
	// An output named by default (sim's SYSTEM-SEED.lz4) is not among the
	// arguments: the profile written under it is lost, and that is said.
	r = replay(t, dir, "sim", "paxos", "--seed", "3", "--cpuprofile", "paxos-3.lz4")
	if r.code != 2 || !strings.Contains(r.stderr, "--cpuprofile paxos-3.lz4: the profile was lost") {
		t.Fatalf("a profile under the default output: exit %d, %q", r.code, r.stderr)
	}
	mustOK(t, replay(t, dir, "verify", "paxos-3.lz4"))
	// A profile that could not be written (a full disk) is an error, not
	// an empty file and exit 0.
	if _, err := os.Stat("/dev/full"); err == nil {
		for _, flag := range []string{"--cpuprofile", "--starlark-profile"} {
			r = replay(t, dir, "check", "p.lz4", script, flag, "/dev/full")
			if r.code != 2 || !strings.Contains(r.stderr, flag+" /dev/full: write") {
				t.Errorf("%s on a full device: exit %d, %q", flag, r.code, r.stderr)
			}
		}
		// Said too when the command fails on its own (here a violation,
		// whose exit it keeps).
		r = replay(t, dir, "sim", "paxos", "--bug", "spec", "--seeds", "1-40", "--check", "builtin:paxos", "-o", "hunt.lz4", "--cpuprofile", "/dev/full")
		if r.code != 1 || !strings.Contains(r.stderr, "--cpuprofile /dev/full: write") {
			t.Errorf("a failing hunt with a profile on a full device: exit %d, %q", r.code, r.stderr)
		}
		// A result file that cannot be written names it once.
		r = replay(t, dir, "sim", "paxos", "--seeds", "1-2", "--check", "builtin:paxos", "--results", "/dev/full")
		if r.code != 2 || !strings.Contains(r.stderr, "write /dev/full: no space left") || strings.Count(r.stderr, "/dev/full") != 1 {
			t.Errorf("results on a full device: exit %d, %q", r.code, r.stderr)
		}
	}
}

func TestBenchOnlyRefusesUnknownMeasurements(t *testing.T) {
	r := replay(t, t.TempDir(), "bench", "--only", "nodes,bogus")
	if r.code != 2 || !strings.Contains(r.stderr, "--only bogus") || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// Predicates can select a task's resumes: event.task and event.woken_by.
func TestEventsMatchTaskResumes(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "lockserver", "--bug", "deadlock", "--seed", "1", "-o", "dl.lz4"))
	r := replay(t, dir, "events", "dl.lz4", "--match", `event.task == "worker3" and event.woken_by != None`)
	mustOK(t, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 4 {
		t.Fatalf("too few resumes of worker3:\n%s", r.stdout)
	}
	for _, l := range lines {
		if !strings.Contains(l, " task worker3 ") {
			t.Fatalf("not a resume of worker3: %s", l)
		}
	}
	// A violation at a task's resume names the task.
	if err := os.WriteFile(filepath.Join(dir, "t.star"), []byte(`safety("NoWorker3", lambda: event.task != "worker3")`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = replay(t, dir, "check", "dl.lz4", "t.star", "--stop-at-first")
	if r.code != 1 || !strings.Contains(r.stdout, "task worker3") {
		t.Fatalf("exit %d:\n%s", r.code, r.stdout)
	}
}
