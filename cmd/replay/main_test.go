package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

var replayBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "replay-e2e")
	if err != nil {
		panic(err)
	}
	replayBin = filepath.Join(dir, "replay")
	if out, err := exec.Command("go", "build", "-o", replayBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build replay: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

func replay(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(replayBin, args...)
	cmd.Dir = dir
	return runCmd(t, cmd)
}

// replayInterrupted starts replay with args in dir, sends it sig after
// wait (the verb well under way), and collects its output and exit code.
func replayInterrupted(t *testing.T, dir string, wait time.Duration, sig os.Signal, args ...string) result {
	t.Helper()
	return replaySignalled(t, dir, wait, func(p *os.Process) { p.Signal(sig) }, args...)
}

// replaySignalled is replayInterrupted signalling as signal does.
func replaySignalled(t *testing.T, dir string, wait time.Duration, signal func(*os.Process), args ...string) result {
	t.Helper()
	cmd := exec.Command(replayBin, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(wait)
	signal(cmd.Process)
	// A verb that does not end on the signal fails the test, not hangs it.
	stuck := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
	defer stuck.Stop()
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return result{out.String(), errb.String(), code}
}

// runCmd runs cmd and collects its output and exit code; only a failure
// to start it fails the test.
func runCmd(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

func mustOK(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// badInput asserts exit 2 with one line on stderr containing every want.
func badInput(t *testing.T, r result, wants ...string) {
	t.Helper()
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if lines := strings.Count(strings.TrimRight(r.stderr, "\n"), "\n"); lines != 0 || r.stderr == "" {
		t.Fatalf("stderr is not one line: %q", r.stderr)
	}
	for _, w := range wants {
		if !strings.Contains(r.stderr, w) {
			t.Fatalf("stderr %q does not mention %q", r.stderr, w)
		}
	}
	if strings.Contains(r.stderr+r.stdout, "goroutine ") {
		t.Fatalf("panic output: %s", r.stderr)
	}
}

func TestSimInfoEvents(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "t.lz4"))
	r := replay(t, dir, "info", "t.lz4")
	mustOK(t, r)
	for _, want := range []string{"paxos (bug none)", "nodes        7: n1 n2 n3 n4 n5 n6 n7", "init", "recv", "timer", "crash", "restart", "bytes/event", "compression", "status       complete"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("info output lacks %q:\n%s", want, r.stdout)
		}
	}
	var info struct {
		Nodes  []string       `json:"nodes"`
		Events int            `json:"events"`
		ByKind map[string]int `json:"events_by_kind"`
		Ended  bool           `json:"ended"`
	}
	r = replay(t, dir, "info", "--json", "t.lz4")
	mustOK(t, r)
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil {
		t.Fatalf("info --json: %v\n%s", err, r.stdout)
	}
	sum := 0
	for _, n := range info.ByKind {
		sum += n
	}
	if len(info.Nodes) != 7 || info.Events == 0 || sum != info.Events || info.ByKind["init"] != 7 || !info.Ended {
		t.Fatalf("info --json: %+v", info)
	}

	r = replay(t, dir, "events", "t.lz4", "--limit", "20")
	mustOK(t, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 20 {
		t.Fatalf("--limit 20 printed %d lines", len(lines))
	}
	lineRE := regexp.MustCompile(`^#(\d+) L=\d+ t=\S+ n\d (init|recv|timer|input|restart|crash)`)
	for i, l := range lines {
		m := lineRE.FindStringSubmatch(l)
		if m == nil || m[1] != fmt.Sprint(i) {
			t.Fatalf("line %d does not read #%d L=.. t=.. NODE KIND: %q", i, i, l)
		}
	}
	// Receives name the message, its sender and the sending step.
	r = replay(t, dir, "events", "t.lz4", "--kind", "recv", "--node", "n3", "--limit", "5")
	mustOK(t, r)
	recvRE := regexp.MustCompile(`n3 recv paxos\.\w+\{.*\} from n\d \(sent #\d+\)`)
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if !recvRE.MatchString(l) {
			t.Fatalf("receive line lacks message, sender or send step: %q", l)
		}
	}
	r = replay(t, dir, "events", "t.lz4", "--type", "Collect", "--json", "--limit", "3")
	mustOK(t, r)
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev struct {
			Kind     string `json:"kind"`
			MsgType  string `json:"msg_type"`
			SentStep *int   `json:"sent_step"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.MsgType != "paxos.Collect" || ev.SentStep == nil {
			t.Fatalf("events --json line %q: %v", l, err)
		}
	}
}

func TestSimDeterministicThroughCLI(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "5", "--bug", "spec", "-o", "a.lz4"))
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "5", "--bug", "spec", "-o", "b.lz4"))
	a, _ := os.ReadFile(filepath.Join(dir, "a.lz4"))
	b, _ := os.ReadFile(filepath.Join(dir, "b.lz4"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatal("same seed and flags, different trace files")
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	badInput(t, replay(t, dir, "sim", "nosuch", "-o", "x.lz4"), "unknown system", "paxos")
	badInput(t, replay(t, dir, "sim", "paxos", "--bug", "nosuch", "-o", "x.lz4"), "no bug", "latest-response", "spec", "no-persist")
	badInput(t, replay(t, dir, "sim", "paxos", "--drop", "1.5", "-o", "x.lz4"), "--drop")
	badInput(t, replay(t, dir, "sim", "paxos", "--latency", "9ms-1ms", "-o", "x.lz4"), "--latency")
	badInput(t, replay(t, dir, "sim", "paxos", "--frobnicate"), "unknown flag", "--frobnicate")
	badInput(t, replay(t, dir, "frobnicate"), "unknown command")
	badInput(t, replay(t, dir, "sim"), "missing SYSTEM")
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("failed runs left files behind: %v", entries)
	}

	badInput(t, replay(t, dir, "info", "missing.lz4"), "missing.lz4")
	os.WriteFile(filepath.Join(dir, "garbage.lz4"), []byte("this is not a trace at all"), 0o644)
	badInput(t, replay(t, dir, "info", "garbage.lz4"), "garbage.lz4", "not a replaycheck trace")
	badInput(t, replay(t, dir, "events", "garbage.lz4"), "garbage.lz4", "not a replaycheck trace")

	mustOK(t, replay(t, dir, "sim", "paxos", "-o", "t.lz4"))
	badInput(t, replay(t, dir, "events", "t.lz4", "--node", "n99"), "n99", "n1 n2")
	badInput(t, replay(t, dir, "events", "t.lz4", "--kind", "bogus"), "bogus", "recv")
	badInput(t, replay(t, dir, "events", "t.lz4", "--from", "99999999"), "--from")
}

// A report, an export with --preds and an index with --preds of a trace
// that lost its tail write their files and exit as check does: 2, with
// the loss named, not "replay diverged" (3) over a page that said every
// predicate held (found by a hostile pass); --allow-damaged exits 0.
func TestOutputsOfADamagedTraceSaySo(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "2", "--time", "30s", "-o", "full.lz4"))
	data, _ := os.ReadFile(filepath.Join(dir, "full.lz4"))
	os.WriteFile(filepath.Join(dir, "cut.lz4"), data[:len(data)*2/3], 0o644)
	for _, args := range [][]string{
		{"report", "cut.lz4", "builtin:paxos", "-o", "r.html"},
		{"export", "cut.lz4", "--format", "jsonl", "--preds", "builtin:paxos", "-o", "e.jsonl"},
		{"index", "cut.lz4", "--preds", "builtin:paxos"},
	} {
		r := replay(t, dir, args...)
		if r.code != 2 || strings.Contains(r.stderr, "diverged") || !strings.Contains(r.stderr, "only what was recorded and recovered was checked") {
			t.Errorf("%v: exit %d, want 2 naming the loss\nstderr: %s", args, r.code, r.stderr)
		}
		if r = replay(t, dir, append(args, "--allow-damaged")...); r.code != 0 {
			t.Errorf("%v --allow-damaged: exit %d, want 0\nstderr: %s", args, r.code, r.stderr)
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, "r.html"))
	if !strings.Contains(string(page), "Not fully checked") || !strings.Contains(string(page), "only what was recorded and recovered was checked") {
		t.Errorf("the report of a cut trace does not say it was not fully checked")
	}
	mustOK(t, replay(t, dir, "report", "full.lz4", "builtin:paxos", "-o", "whole.html"))
	if page, _ := os.ReadFile(filepath.Join(dir, "whole.html")); strings.Contains(string(page), "Not fully checked") {
		t.Errorf("the report of the whole trace says it was not fully checked")
	}
}

// An export to a device writes only the output there: "wrote
// /dev/stdout (0 B)" after the last line of a jsonl export made it not
// JSON (found by a hostile pass). And sim of a system this binary does
// not register says where a system of one's own runs (a new user pasted
// simtest's "replay sim" line).
func TestExportToADeviceAndAnUnknownSystem(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "-o", "t.lz4"))
	r := replay(t, dir, "export", "t.lz4", "--format", "jsonl", "--to", "5", "-o", "/dev/stdout")
	mustOK(t, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("export -o /dev/stdout: a line that is not JSON: %q", l)
		}
	}
	if len(lines) != 6 {
		t.Fatalf("export -o /dev/stdout --to 5: %d lines, want 6", len(lines))
	}
	badInput(t, replay(t, dir, "sim", "myown", "-o", "x.lz4"), `unknown system "myown"`, "cli.Main")

	// Nor does an export replace a predicates script that is not among
	// its inputs.
	script := []byte("safety(\"True\", lambda: True)\n")
	os.WriteFile(filepath.Join(dir, "mine.star"), script, 0o644)
	badInput(t, replay(t, dir, "export", "t.lz4", "--format", "jsonl", "-o", "mine.star"), "mine.star", "predicates script")
	if got, _ := os.ReadFile(filepath.Join(dir, "mine.star")); string(got) != string(script) {
		t.Fatalf("export -o mine.star changed the script: %q", got)
	}
}

func TestTruncatedTrace(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "2", "--time", "30s", "-o", "full.lz4"))
	data, _ := os.ReadFile(filepath.Join(dir, "full.lz4"))
	cut := len(data) * 2 / 3
	os.WriteFile(filepath.Join(dir, "cut.lz4"), data[:cut], 0o644)
	r := replay(t, dir, "info", "cut.lz4")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "DAMAGED") || !strings.Contains(r.stdout, "truncated") || !strings.Contains(r.stdout, "byte offset") {
		t.Fatalf("info on a truncated trace:\n%s", r.stdout)
	}
	r = replay(t, dir, "events", "cut.lz4")
	mustOK(t, r)
	if !strings.Contains(r.stderr, "warning: cut.lz4: trace truncated") {
		t.Fatalf("events did not warn about the truncation: %q", r.stderr)
	}
	if n := strings.Count(r.stdout, "\n"); n < 100 {
		t.Fatalf("only %d events recovered from two thirds of the file", n)
	}

	// A liveness interval open where the file was cut is not judged:
	// the lost tail might have closed it. The check says it was not
	// complete and exits 2; --allow-damaged judges the recovered part
	// as the whole run (an alarm, exit 1).
	os.WriteFile(filepath.Join(dir, "never.star"), []byte(`liveness("Never", lambda: False)`+"\n"), 0o644)
	whole := replay(t, dir, "check", "--json", "full.lz4", "never.star")
	if whole.code != 1 || !strings.Contains(whole.stdout, `"complete": true`) || strings.Contains(whole.stdout, `"damaged"`) {
		t.Fatalf("check of the whole trace: exit %d\n%s", whole.code, whole.stdout)
	}
	for _, jobs := range []string{"1", "2"} {
		r = replay(t, dir, "check", "--json", "--jobs", jobs, "cut.lz4", "never.star")
		var rep struct {
			Complete   bool
			Damaged    []string
			Violations []json.RawMessage
			Unjudged   []json.RawMessage
			Unknown    map[string][]string `json:"state_unknown"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("--jobs %s: %v\n%s", jobs, err, r.stdout)
		}
		if r.code != 2 || rep.Complete || len(rep.Damaged) != 1 || !strings.Contains(rep.Damaged[0], "cut.lz4: trace truncated") || len(rep.Unknown) == 0 ||
			len(rep.Violations) != 0 || len(rep.Unjudged) != 1 || !strings.Contains(r.stderr, "cut.lz4 is damaged") {
			t.Fatalf("--jobs %s: check of the cut trace: exit %d, %+v\nstderr: %s", jobs, r.code, rep, r.stderr)
		}
	}
	// The text report lists where each node's state became unknown, as
	// verify does: the predicates judged without those rows from there.
	r = replay(t, dir, "check", "--allow-damaged", "cut.lz4", "never.star")
	if r.code != 1 || !strings.Contains(r.stdout, "1 alarm(s)") || strings.Contains(r.stderr, "is damaged") ||
		!regexp.MustCompile(`(?m)^\d+ nodes: state unknown until the end: cut.lz4: trace truncated.*\n  n\d+ after (its crash at )?#\d+, n\d+ after (its crash at )?#\d+`).MatchString(r.stdout) ||
		strings.Count(r.stdout, "trace truncated") != 1 {
		t.Fatalf("--allow-damaged: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	r = replay(t, dir, "verify", "--json", "cut.lz4")
	if r.code != 2 || !strings.Contains(r.stdout, `"damaged": [`) || !strings.Contains(r.stdout, `"complete": false`) {
		t.Fatalf("verify of the cut trace: exit %d\n%s", r.code, r.stdout)
	}

	// A check that stops before the damage checked all it was asked to,
	// and a violation found is a violation whatever the lost tail held.
	r = replay(t, dir, "check", "--to", "100", "cut.lz4", "never.star")
	if r.code != 0 || strings.Contains(r.stderr, "is damaged") {
		t.Fatalf("--to 100 on the cut trace: exit %d, want 0\n%s", r.code, r.stderr)
	}
	os.WriteFile(filepath.Join(dir, "early.star"), []byte(`safety("Early", lambda: event.step < 50)`+"\n"), 0o644)
	for _, args := range [][]string{{"check", "cut.lz4", "early.star"}, {"check", "--stop-at-first", "cut.lz4", "early.star"}} {
		if r = replay(t, dir, args...); r.code != 1 || !strings.Contains(r.stdout, "Early (safety) violated at step #50") {
			t.Fatalf("%v: exit %d, want 1 and the violation\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}

	// No end record in any file (killed, or still recording: a file can
	// be checked while its node runs): the run went on past the end, so
	// an interval open there is not judged; the files are not damaged.
	os.WriteFile(filepath.Join(dir, "open.lz4"), unclosed(t, filepath.Join(dir, "full.lz4")), 0o644)
	r = replay(t, dir, "check", "--json", "open.lz4", "never.star")
	if r.code != 0 || !strings.Contains(r.stdout, `"no_end_record": true`) || !strings.Contains(r.stdout, `"complete": false`) ||
		!strings.Contains(r.stdout, `"status": "unjudged"`) || !strings.Contains(r.stderr, "warning: no trace file has an end record") {
		t.Fatalf("check of a recording without end records: exit %d\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r = replay(t, dir, "check", "--allow-damaged", "open.lz4", "never.star"); r.code != 1 {
		t.Fatalf("--allow-damaged on a recording without end records: exit %d, want the alarm (1)\n%s", r.code, r.stdout)
	}
}

func TestHelpExplainsEveryFlag(t *testing.T) {
	dir := t.TempDir()
	r := replay(t, dir, "--help")
	mustOK(t, r)
	for _, verb := range []string{"sim", "info", "events", "verify", "merge", "check", "demo", "index", "debug"} {
		if !strings.Contains(r.stdout, verb) {
			t.Fatalf("replay --help does not list %s", verb)
		}
	}
	wants := map[string][]string{
		"sim":    {"--seed", "--nodes", "--steps", "--time", "--drop", "--bug", "--output", "--churn", "--dup", "--latency", "--seeds", "--check", "--fail-on", "paxos", "latest-response"},
		"info":   {"--json"},
		"events": {"--node", "--kind", "--from", "--limit", "--json", "#STEP L=LAMPORT"},
		"verify": {"--nodes", "--no-state-hashes", "--json", "0 divergences", "exits 3"},
		"merge":  {"--output", "causal order", "gap records"},
		"check":  {"--json", "--from", "--to", "--stop-at-first", "--fail-on", "--nodes", "--max-steps", "--jobs", "--warmup", "Exit codes"},
		"demo":   {"--output", "latest-response"},
		"index":  {"--preds", "--db", "--force", "FILE.db", "fingerprint", "Exit codes"},
		"debug":  {"--preds", "--at", "--db", "docs/debugger.md", "follow a", "re-check"},
	}
	for verb, ws := range wants {
		r := replay(t, dir, verb, "--help")
		mustOK(t, r)
		for _, w := range ws {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("replay %s --help lacks %q", verb, w)
			}
		}
	}
}

// rewriteTrace writes f's events, as a test changed them, to path under
// f's first header and end record.
func rewriteTrace(t *testing.T, f *record.File, path string, gapsAfter ...record.Gap) {
	t.Helper()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := record.NewWriter(out, *f.Header, record.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range f.Events {
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range gapsAfter {
		if err := w.Gap(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(f.Ends[0]); err != nil {
		t.Fatal(err)
	}
}

// tamperedPaxos simulates paxos (seed 4) into dir/t.lz4 and reads it
// back with its 60th random seed changed: a replay of it diverges.
func tamperedPaxos(t *testing.T, dir string) *record.File {
	t.Helper()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "4", "-o", "t.lz4"))
	f, err := record.ReadFile(filepath.Join(dir, "t.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	tamperSeed(f, 60)
	return f
}

// tamperSeed changes the nth random seed the trace's events drew, so
// that replay diverges there.
func tamperSeed(f *record.File, nth int) {
	seen := 0
	for _, ev := range f.Events {
		for i := range ev.Nondet {
			if ev.Nondet[i].Kind == node.NondetSeed {
				if seen++; seen == nth {
					ev.Nondet[i].Int ^= 0x5a5a
				}
			}
		}
	}
}

// TestDamagedNodeFile: in a trace of one file per node, one node's file
// cut short matters to a check only once the check reached that node's
// last recovered step (its lost events may belong anywhere after), and
// not at all to a check of the other nodes (--nodes). The files record
// causal clocks, as separate processes do.
func TestDamagedNodeFile(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "2", "--steps", "60000", "--time", "100h", "--clocks", "causal", "-o", "all.lz4"))
	f, err := record.ReadFile(filepath.Join(dir, "all.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, id := range f.Header.Nodes {
		h := *f.Header
		h.Recorded = []node.ID{id}
		part := &record.File{Header: &h, Ends: f.Ends}
		for _, ev := range f.Events {
			if ev.Node == id {
				part.Events = append(part.Events, ev)
			}
		}
		name := string(id) + ".lz4"
		rewriteTrace(t, part, filepath.Join(dir, name))
		files = append(files, name)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "n2.lz4"))
	os.WriteFile(filepath.Join(dir, "n2.lz4"), data[:len(data)*3/5], 0o644)
	r := replay(t, dir, "events", "n2.lz4", "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var lastN2 struct{ Step int }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &lastN2); err != nil || !strings.Contains(r.stderr, "n2.lz4: trace truncated") {
		t.Fatalf("n2's recovered events: %v\n%s", err, r.stderr)
	}
	// Its steps in the merged trace: the last one recovered.
	r = replay(t, dir, append(append([]string{"events"}, files...), "--node", "n2", "--json")...)
	lines = strings.Split(strings.TrimSpace(r.stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &lastN2); err != nil {
		t.Fatal(err)
	}
	// history says where n2's state stops being known, not only its
	// last version (it read as if n2 held it to the end).
	r = replay(t, dir, append(append([]string{"history"}, files...), "--node", "n2", "--field", "@status")...)
	if want := fmt.Sprintf("after #%d unknown until the end: n2.lz4: trace truncated", lastN2.Step); r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Fatalf("history of n2: exit %d, want %q\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	os.WriteFile(filepath.Join(dir, "any.star"), []byte(`safety("Any", lambda: True)`+"\n"), 0o644)
	check := func(extra ...string) result {
		return replay(t, dir, append(append(append([]string{"check"}, extra...), files...), "any.star")...)
	}
	if r = check("--to", strconv.Itoa(lastN2.Step-1)); r.code != 0 {
		t.Fatalf("--to before n2's last recovered step: exit %d, want 0\n%s", r.code, r.stderr)
	}
	if r = check("--to", strconv.Itoa(lastN2.Step+1)); r.code != 2 || !strings.Contains(r.stderr, "n2.lz4 is damaged") {
		t.Fatalf("--to past n2's last recovered step: exit %d, want 2\n%s", r.code, r.stderr)
	}
	if r = check("--json", "--nodes", "n1,n3"); r.code != 0 || strings.Contains(r.stdout, `"damaged"`) || !strings.Contains(r.stdout, `"complete": true`) {
		t.Fatalf("--nodes n1,n3 (n2's file left out): exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// A violation decided before the loss stands (exit 1); one after it
	// may be the loss's doing (exit 2).
	for _, tc := range []struct {
		at   int
		code int
	}{{lastN2.Step - 5, 1}, {lastN2.Step + 5, 2}} {
		os.WriteFile(filepath.Join(dir, "at.star"), []byte(fmt.Sprintf("safety(\"At\", lambda: event.step != %d)\n", tc.at)), 0o644)
		r = replay(t, dir, append(append([]string{"check"}, files...), "at.star")...)
		if r.code != tc.code || !strings.Contains(r.stdout, fmt.Sprintf("At (safety) violated at step #%d", tc.at)) {
			t.Fatalf("a violation at #%d, n2's file cut after #%d: exit %d, want %d\n%s%s", tc.at, lastN2.Step, r.code, tc.code, r.stdout, r.stderr)
		}
	}
	// A node's file left behind: its state is unknown throughout, and
	// neither verify nor check passes (it did before, and check raised
	// alarms of a cluster without that node).
	var others []string
	for _, name := range files {
		if name != "n2.lz4" {
			others = append(others, name)
		}
	}
	for _, verb := range [][]string{{"verify", "--json"}, {"check", "--json", "any.star"}} {
		args := append(append([]string{verb[0]}, others...), verb[1:]...)
		r = replay(t, dir, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "warning: no trace file records node n2") || !strings.Contains(r.stdout, `"missing_nodes": [`) {
			t.Fatalf("%s without n2's file: exit %d, want 2\n%s\n%s", verb[0], r.code, r.stdout, r.stderr)
		}
	}
	if r = replay(t, dir, append(append([]string{"verify"}, others...), "--nodes", "n1,n3")...); r.code != 0 {
		t.Fatalf("verify --nodes n1,n3 without n2's file: exit %d\n%s", r.code, r.stderr)
	}
	// The check reached the end of what was recorded: the trace is
	// incomplete, checking did not stop early. Merged, the two files say
	// so too (merge warned of nothing, and the check of its output took
	// n2's gap for a recording without an end).
	r = replay(t, dir, append(append([]string{"check"}, others...), "any.star")...)
	if r.code != 2 || !strings.Contains(r.stdout, "the trace is incomplete") || strings.Contains(r.stdout, "stopped early") {
		t.Fatalf("check without n2's file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = replay(t, dir, append(append([]string{"merge"}, others...), "-o", "n13.lz4")...)
	if r.code != 0 || !strings.Contains(r.stderr, "warning: no trace file records node n2") {
		t.Fatalf("merge without n2's file: exit %d, stderr %q", r.code, r.stderr)
	}
	r = replay(t, dir, "check", "n13.lz4", "any.star")
	if r.code != 2 || strings.Contains(r.stderr, "end record") || !strings.Contains(r.stdout, "the trace is incomplete") {
		t.Fatalf("check of the merge without n2: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Served from a trace database, state and history warn as a load
	// does (they said nothing once the database existed).
	mustOK(t, replay(t, dir, append([]string{"index"}, files...)...))
	for _, verb := range []string{"state", "history"} {
		args := append(append([]string{verb}, files...), "--node", "n2")
		if verb == "state" {
			args = append(args, "--at", "0")
		} else {
			args = append(args, "--field", "@status")
		}
		r = replay(t, dir, args...)
		if r.code != 0 || !strings.Contains(r.stderr, "warning: ") || !strings.Contains(r.stderr, "n2.lz4: trace truncated") {
			t.Fatalf("%s from the database: exit %d, stderr %q", verb, r.code, r.stderr)
		}
	}
}
