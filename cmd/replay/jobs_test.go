package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/record"
)

// elapsed matches what differs between two runs of the same check: the
// time it took.
var elapsed = regexp.MustCompile(`(?m)^checked (\d+) steps in .*$|"seconds": [0-9.e+-]+`)

func sameReport(t *testing.T, what string, want, got result) {
	t.Helper()
	if want.code != got.code {
		t.Fatalf("%s: exit %d, --jobs 1 exited %d\nstdout:\n%s\nstderr:\n%s", what, got.code, want.code, got.stdout, got.stderr)
	}
	a := elapsed.ReplaceAllString(want.stdout, "checked $1 steps in T")
	b := elapsed.ReplaceAllString(got.stdout, "checked $1 steps in T")
	if a != b {
		t.Fatalf("%s: the report differs from --jobs 1's\n--jobs 1:\n%s\nparallel:\n%s\nstderr: %s", what, a, b, got.stderr)
	}
	// stderr: the same, after the line saying how the work was split.
	stats := regexp.MustCompile(`(?m)^replay check: checked in \d+ segment\(s\).*\n`)
	if s := stats.ReplaceAllString(got.stderr, ""); s != want.stderr {
		t.Fatalf("%s: stderr differs from --jobs 1's\n--jobs 1:\n%s\nparallel:\n%s", what, want.stderr, got.stderr)
	}
}

// checkJSON is the part of check --json this test looks at.
type checkJSON struct {
	Steps      int       `json:"steps"`
	Violations []finding `json:"violations"`
	Screened   []finding `json:"screened"`
}

type finding struct {
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Step    int    `json:"step"`
	EndStep *int   `json:"end_step"`
}

// TestJobsReportIsTheSequentialOne checks every bundled system, correct
// and with each seeded bug, with --jobs 1, --jobs 4 (borders chosen as the
// work goes) and fixed borders inside the run (--marks, with a short
// warm-up so that seams fall inside intervals and histories), and wants
// the same report byte for byte, as text and as JSON.
func TestJobsReportIsTheSequentialOne(t *testing.T) {
	dir := t.TempDir()
	scripts, err := filepath.Abs("../../scripts")
	if err != nil {
		t.Fatal(err)
	}
	var violations, alarms, crossing, traces int
	for _, sys := range examples.All() {
		bugs := []string{"none"}
		for _, b := range sys.Bugs {
			bugs = append(bugs, b.Name)
		}
		if testing.Short() && len(bugs) > 2 {
			bugs = bugs[:2] // every system, correct and with one bug
		}
		star := []string{sys.Name + ".star"}
		if sys.Name == "raftkv" {
			star = []string{"raft.star", "raftkv-linearizable.star"}
		}
		for _, bug := range bugs {
			trace := fmt.Sprintf("%s-%s.lz4", sys.Name, bug)
			mustOK(t, replay(t, dir, "sim", sys.Name, "--bug", bug, "--seed", "3", "--steps", "4000", "-o", trace))
			traces++
			for _, sc := range star {
				script := filepath.Join(scripts, sc)
				what := fmt.Sprintf("%s --bug %s with %s", sys.Name, bug, sc)
				seq := replay(t, dir, "check", trace, script)
				seqJSON := replay(t, dir, "check", "--json", trace, script)
				var rep checkJSON
				if err := json.Unmarshal([]byte(seqJSON.stdout), &rep); err != nil {
					t.Fatalf("%s: %v\n%s", what, err, seqJSON.stdout)
				}
				n := rep.Steps
				marks := fmt.Sprintf("%d,%d,%d", n/4, n/2, 3*n/4)
				for _, args := range [][]string{{"--jobs", "4", "--warmup", "200"}, {"--marks", marks, "--warmup", "50"}} {
					sameReport(t, what+" "+strings.Join(args, " "), seq, replay(t, dir, append(append([]string{"check"}, args...), trace, script)...))
					sameReport(t, what+" --json "+strings.Join(args, " "), seqJSON, replay(t, dir, append(append([]string{"check", "--json"}, args...), trace, script)...))
				}
				for _, v := range append(rep.Violations, rep.Screened...) {
					switch {
					case v.Kind == "safety":
						violations++
						continue
					case v.Status == "alarm":
						alarms++
					}
					for _, m := range []int{n / 4, n / 2, 3 * n / 4} {
						if v.Step < m && (v.EndStep == nil || *v.EndStep < 0 || *v.EndStep >= m) {
							crossing++
						}
					}
				}
			}
		}
	}
	// The comparison means something only if the reports hold findings,
	// and intervals that cross the borders.
	t.Logf("%d traces: %d safety violations, %d liveness alarms, %d intervals crossing a border", traces, violations, alarms, crossing)
	if violations == 0 || alarms == 0 || crossing == 0 {
		t.Fatalf("the traces hold %d safety violations, %d alarms and %d intervals crossing a border; want some of each", violations, alarms, crossing)
	}
}

// TestJobsSeams checks, with fixed borders, that a seam whose state the
// warm-up cannot reproduce is refused and the report stays the
// sequential one, and that history-like state is carried over a seam.
func TestJobsSeams(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "--steps", "3000", "-o", "p.lz4"))
	write := func(name, src string) string {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	// A predicate disabled by an evaluation error at #300: a segment
	// warmed up later has it enabled, so both seams must be refused and
	// the error reported once, as --jobs 1 does (exit 4).
	fallback := write("fallback.star", `
def flaky():
    if event.step == 300:
        return 1 // 0
    return True
safety("Flaky", flaky)
`)
	seq := replay(t, dir, "check", "p.lz4", fallback)
	if seq.code != 4 {
		t.Fatalf("--jobs 1: exit %d, want 4\n%s%s", seq.code, seq.stdout, seq.stderr)
	}
	par := replay(t, dir, "check", "--marks", "700,1300", "--warmup", "100", "p.lz4", fallback)
	sameReport(t, "a predicate disabled before the warm-up", seq, par)
	if !strings.Contains(par.stderr, "2 seam(s), 2 refused") {
		t.Fatalf("the seams were not refused:\n%s", par.stderr)
	}
	// The refusal says why in words, naming the error behind it.
	if !strings.Contains(par.stderr, "the sequential run has predicate Flaky disabled by an evaluation error where the warm-up has predicate Flaky last evaluated true; Flaky failed at step #300") {
		t.Fatalf("the refusal does not say why:\n%s", par.stderr)
	}

	// Intervals open from #500 to #699 and from #1000 to #1700 over the
	// borders at #650 and #1200 (the warm-ups open them at #550 and
	// #1100); a derived value that changes every 400 steps, its
	// since_change and kept history read after the border by the
	// stability measures of an interval that opens at #660, and read in
	// the warm-up by a safety predicate; an interval the warm-up opens at
	// #1100 that closes at the border #1200, so its stability measures
	// are the warm-up's last ones; an interval raised at #300, which the
	// warm-up raises at #550 with other measures. The warm-up cannot know any of
	// it; the seams hold and the report is the sequential one.
	spans := write("spans.star", `
phase = derived("phase", lambda: event.step // 400, keep = 3)
safety("PhaseHistory", lambda: len(phase.history()) <= 3)
liveness("Window",
         lambda: not (500 <= event.step and event.step < 700),
         aux = lambda: {"step": event.step},
         alarm = lambda aux: aux["step"] >= 680)
liveness("Late",
         lambda: not (660 <= event.step and event.step < 760),
         aux = lambda: {"since": since_change(phase), "phases": phase.history()})
liveness("Quiet", lambda: event.step < 1000 or event.step > 1700)
liveness("Edge",
         lambda: not (1100 <= event.step and event.step < 1200),
         aux = lambda: {"since": since_change(phase)})
liveness("Raised",
         lambda: not (300 <= event.step and event.step < 1000),
         aux = lambda: {"since": since_change(phase)},
         alarm = lambda aux: True)
`)
	for _, args := range [][]string{{"--json"}, {}} {
		seq := replay(t, dir, append(append([]string{"check"}, args...), "p.lz4", spans)...)
		if seq.code != 1 {
			t.Fatalf("--jobs 1: exit %d, want 1 (an alarm)\n%s%s", seq.code, seq.stdout, seq.stderr)
		}
		par := replay(t, dir, append(append([]string{"check"}, args...), "--marks", "650,1200", "--warmup", "100", "p.lz4", spans)...)
		sameReport(t, "intervals and histories across the seams "+strings.Join(args, " "), seq, par)
		if !strings.Contains(par.stderr, "2 seam(s), 0 refused") {
			t.Fatalf("a seam was refused:\n%s", par.stderr)
		}
	}
}

// TestJobsSeamsFunctionValue: a derived value holding a function prints
// the same whatever the function captured. Here it captures how many
// versions another value kept, which the warm-up cannot know; the value
// is not re-evaluated at the seam, so taking it over would report the
// warm-up's count. The seam must be refused.
func TestJobsSeamsFunctionValue(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "--steps", "3000", "-o", "p.lz4"))
	src := `
x = derived("x", lambda: event.step // 100, keep = 1000)
def make():
    n = len(x.history())
    return lambda: n
d = derived("d", make)
safety("Late", lambda: event.step < 1560, aux = lambda: {"kept": d()()})
`
	if err := os.WriteFile(filepath.Join(dir, "fn.star"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	seq := replay(t, dir, "check", "--json", "p.lz4", "fn.star")
	if seq.code != 1 || !strings.Contains(seq.stdout, `"kept": 16`) {
		t.Fatalf("--jobs 1: exit %d, want 1 with 16 versions kept at #1560\n%s%s", seq.code, seq.stdout, seq.stderr)
	}
	par := replay(t, dir, "check", "--json", "--marks", "1550", "--warmup", "100", "p.lz4", "fn.star")
	sameReport(t, "a derived function value across the seam", seq, par)
	if !strings.Contains(par.stderr, "1 seam(s), 1 refused") {
		t.Fatalf("the seam was not refused:\n%s", par.stderr)
	}
}

// TestJobsSeamsOrderedIndex: an ordered index's last change is history
// no warm-up can know; read after the border by a stability measure, it
// is patched at the seam and the report is the sequential one.
func TestJobsSeamsOrderedIndex(t *testing.T) {
	dir := t.TempDir()
	// No churn: agents keep their rows, so the index last changes well
	// before the warm-up, which sees it change when it starts.
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "--steps", "3000", "--churn", "0", "-o", "p.lz4"))
	src := `
Agent = table("paxos.Agent")
by_round = ordered("by_round", Agent, by = lambda a: 1 if a.AcceptedRound > 0 else None)
liveness("Late",
         lambda: not (660 <= event.step and event.step < 900),
         aux = lambda: {"since": since_change(by_round), "first": by_round.first().node if len(by_round) else None},
         alarm = lambda aux: True)
`
	if err := os.WriteFile(filepath.Join(dir, "ord.star"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	seq := replay(t, dir, "check", "--json", "p.lz4", "ord.star")
	if seq.code != 1 {
		t.Fatalf("--jobs 1: exit %d, want 1 (an alarm)\n%s%s", seq.code, seq.stdout, seq.stderr)
	}
	par := replay(t, dir, "check", "--json", "--marks", "650,1000", "--warmup", "100", "p.lz4", "ord.star")
	sameReport(t, "an ordered index's since_change across the seams", seq, par)
	if !strings.Contains(par.stderr, "2 seam(s), 0 refused") {
		t.Fatalf("no seams:\n%s", par.stderr)
	}
}

// TestJobsOptions: --from, --to, --stop-at-first and --nodes give the
// sequential report with --jobs too.
func TestJobsOptions(t *testing.T) {
	dir := t.TempDir()
	script := paxosScript(t)
	mustOK(t, replay(t, dir, "sim", "paxos", "--bug", "latest-response", "--seed", "21", "--drop", "0.3", "-o", "bug.lz4"))
	for _, args := range [][]string{
		{"--stop-at-first"},
		{"--from", "400", "--to", "1500"},
		{"--fail-on", "any", "--stop-at-first"},
		{"--nodes", "n1,n2,n3,n4,n5"},
		{"--json", "--from", "800"},
	} {
		seq := replay(t, dir, append(append([]string{"check"}, args...), "bug.lz4", script)...)
		for _, par := range [][]string{{"--jobs", "2", "--warmup", "100"}, {"--marks", "900,1300", "--warmup", "100"}} {
			got := replay(t, dir, append(append(append([]string{"check"}, args...), par...), "bug.lz4", script)...)
			sameReport(t, strings.Join(append(args, par...), " "), seq, got)
		}
	}
	badInput(t, replay(t, dir, "check", "--jobs", "-1", "bug.lz4", script), "--jobs -1")
	badInput(t, replay(t, dir, "check", "--jobs", "2", "--warmup", "0", "bug.lz4", script), "--warmup 0")
}

// TestCheckToLeavesOpenIntervalsUnjudged: --to stops checking before the
// trace ends, so an interval still open there is not "open at the end"
// and raises no alarm (it closes later in the run): it is unjudged, as
// where any check stops early, with --jobs too.
func TestCheckToLeavesOpenIntervalsUnjudged(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "--steps", "3000", "-o", "p.lz4"))
	if err := os.WriteFile(filepath.Join(dir, "open.star"), []byte(`liveness("Warm", lambda: event.step > 1000)`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	seq := replay(t, dir, "check", "--to", "500", "p.lz4", "open.star")
	if seq.code != 0 || !strings.Contains(seq.stdout, "1 still open when checking stopped (not judged)") {
		t.Fatalf("--to 500: exit %d, want 0 and the interval still open when checking stopped\n%s%s", seq.code, seq.stdout, seq.stderr)
	}
	sameReport(t, "--to 500 --jobs 2", seq, replay(t, dir, "check", "--to", "500", "--marks", "250", "--warmup", "50", "p.lz4", "open.star"))
	whole := replay(t, dir, "check", "p.lz4", "open.star")
	if whole.code != 0 || !strings.Contains(whole.stdout, "0 alarm(s)") {
		t.Fatalf("the whole trace: exit %d, want 0 and no alarm (the interval closes at #1001)\n%s", whole.code, whole.stdout)
	}
}

// TestJobsDivergence: a replay that diverges in the middle gives the
// report and the divergence of --jobs 1 (exit 3), whether the divergence
// falls in a segment's range, in a warm-up or before a checkpoint the
// pass cannot reach.
func TestJobsDivergence(t *testing.T) {
	dir := t.TempDir()
	f := tamperedPaxos(t, dir)
	seq, at, script := checkTampered(t, dir, f)
	seqJSON := replay(t, dir, "check", "--json", "tampered.lz4", script)
	marks := fmt.Sprintf("%d,%d,%d", at/2, at+50, at+400)
	for _, args := range [][]string{{"--marks", marks, "--warmup", "100"}, {"--jobs", "3", "--warmup", "100"}} {
		what := fmt.Sprintf("divergence at #%d %s", at, strings.Join(args, " "))
		sameReport(t, what, seq, replay(t, dir, append(append([]string{"check"}, args...), "tampered.lz4", script)...))
		sameReport(t, what+" --json", seqJSON, replay(t, dir, append(append([]string{"check", "--json"}, args...), "tampered.lz4", script)...))
	}
}

// checkTampered writes f to tampered.lz4 in dir and checks it with
// paxos.star sequentially, which must diverge (exit 3): the report, the
// step of the divergence and the script.
func checkTampered(t *testing.T, dir string, f *record.File) (result, int, string) {
	t.Helper()
	rewriteTrace(t, f, filepath.Join(dir, "tampered.lz4"))
	script := paxosScript(t)
	seq := replay(t, dir, "check", "tampered.lz4", script)
	m := regexp.MustCompile(`replay diverged at step #(\d+)`).FindStringSubmatch(seq.stdout)
	if seq.code != 3 || m == nil {
		t.Fatalf("--jobs 1: exit %d, want 3 and the divergence\n%s%s", seq.code, seq.stdout, seq.stderr)
	}
	at, _ := strconv.Atoi(m[1])
	return seq, at, script
}

// TestJobsStopInALaterSegment: --stop-at-first and --to end the check
// inside a later segment's range, and the report is the sequential one.
func TestJobsStopInALaterSegment(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "--steps", "3000", "-o", "p.lz4"))
	if err := os.WriteFile(filepath.Join(dir, "late.star"), []byte(`
safety("Late", lambda: event.step != 1000 and event.step != 1500)
liveness("Open", lambda: event.step < 950, aux = lambda: {"at": event.step}, alarm = lambda aux: aux["at"] > 1100)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--stop-at-first"},
		{"--stop-at-first", "--fail-on", "alarm"},
		{"--to", "1200"},
		{"--json", "--stop-at-first", "--from", "1001"},
	} {
		seq := replay(t, dir, append(append([]string{"check"}, args...), "p.lz4", "late.star")...)
		if seq.code != 1 {
			t.Fatalf("%v: --jobs 1 exited %d, want 1\n%s%s", args, seq.code, seq.stdout, seq.stderr)
		}
		par := replay(t, dir, append(append([]string{"check", "--marks", "1050,1150", "--warmup", "100"}, args...), "p.lz4", "late.star")...)
		sameReport(t, strings.Join(args, " "), seq, par)
	}
}

// TestCheckFromKeepsDerivedHistories: --from skips evaluating predicates
// before FROM, not derived values: paxos.star's GlobalConsistency reads
// decision.history(), so checking from the step of the violation must
// find it there (it found nothing when the history started at FROM). A
// break found at FROM, the first step evaluated, is said to be possibly
// older, and a later FROM reports the same break there; --jobs gives the
// same report.
func TestCheckFromKeepsDerivedHistories(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--bug", "latest-response", "--seed", "21", "-o", "b.lz4"))
	script := paxosScript(t)
	var whole struct{ Violations []struct{ Step int } }
	r := replay(t, dir, "check", "--json", "b.lz4", script)
	if err := json.Unmarshal([]byte(r.stdout), &whole); err != nil || r.code != 1 || len(whole.Violations) == 0 {
		t.Fatalf("the whole check: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	at := whole.Violations[0].Step
	for _, step := range []int{at, at + 1} {
		from := strconv.Itoa(step)
		seq := replay(t, dir, "check", "--from", from, "b.lz4", script)
		want := fmt.Sprintf("GlobalConsistency (safety) violated at step #%d (the first step checked: it may have begun before)\n", step)
		if seq.code != 1 || !strings.HasPrefix(seq.stdout, want) {
			t.Fatalf("--from %s: exit %d, want 1 and %q first\n%s", from, seq.code, want, seq.stdout)
		}
		sameReport(t, "--from "+from+" --jobs 2", seq, replay(t, dir, "check", "--from", from, "--marks", strconv.Itoa(step+300), "--warmup", "50", "b.lz4", script))
	}
}

// TestJobsStateHashDivergence: a divergence only a state hash shows (the
// effects match), in the range of the segment that takes the pass's
// replayer, is found as --jobs 1 finds it: the pass replays without state
// hashes, and the segment must turn them back on.
func TestJobsStateHashDivergence(t *testing.T) {
	dir := t.TempDir()
	f := paxosFile(t, dir, "20s")
	for i, ev := range f.Events {
		if i >= len(f.Events)*2/3 && ev.HasStateHash {
			ev.StateHash ^= 1
			break
		}
	}
	seq, at, script := checkTampered(t, dir, f)
	par := replay(t, dir, "check", "--marks", strconv.Itoa(at-500), "--warmup", "100", "tampered.lz4", script)
	sameReport(t, fmt.Sprintf("state-hash divergence at #%d", at), seq, par)
}

// TestJobsCryptoRandAfterHandOver: raftkv draws election timeouts from
// crypto/rand, which replay routes to the recording by the goroutine a
// node's events run on. The last segment takes the pass's replay, whose
// nodes ran on the pass's goroutine: reads after the hand-over must still
// reach the recording (they reached the real crypto/rand: a false
// divergence, exit 3, where --jobs 1 is clean; found by a new-user trial
// on a live recording with restarts).
func TestJobsCryptoRandAfterHandOver(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "raftkv", "--seed", "3", "--churn", "2", "--time", "60s", "-o", "rk.lz4"))
	script := "builtin:raft"
	seq := replay(t, dir, "check", "rk.lz4", script)
	mustOK(t, seq)
	for _, mark := range []string{"2000", "4000", "6000"} {
		par := replay(t, dir, "check", "--marks", mark, "--warmup", "1", "rk.lz4", script)
		sameReport(t, "raftkv, seam at #"+mark, seq, par)
		if !strings.Contains(par.stderr, "1 seam(s), 0 refused (seams at #"+mark+")") {
			t.Fatalf("seam at #%s: %s", mark, par.stderr)
		}
	}
}

// TestDivergenceNamesTheRecordingBuild: a live recording names the build
// that made it; when such a trace diverges under a build of other
// sources, verify and check say so beside the divergence (and in
// --json), the likeliest cause being a handler changed between them. A
// trace without a build (every simulation) gets no note, and neither
// does any trace when this binary's own sources cannot be told (a build
// without version control information: GOFLAGS=-buildvcs=false, or a
// checkout without .git), which TestOtherBuilds covers.
func TestDivergenceNamesTheRecordingBuild(t *testing.T) {
	known := replaySourcesKnown(t)
	dir := t.TempDir()
	f := paxosFile(t, dir, "20s")
	for i, ev := range f.Events {
		if i >= len(f.Events)/2 && ev.HasStateHash {
			ev.StateHash ^= 1
			break
		}
	}
	rewriteTrace(t, f, filepath.Join(dir, "nobuild.lz4"))
	const old = otherBuild
	f.Header.Run = map[string]string{record.RunBuild: old, "pid": "42"}
	rewriteTrace(t, f, filepath.Join(dir, "built.lz4"))
	note := "note: the trace was recorded by " + old + "; this binary is "
	for _, verb := range [][]string{{"verify"}, {"check", "builtin:paxos"}} {
		args := func(trace string, more ...string) []string {
			return append(append([]string{verb[0], trace}, verb[1:]...), more...)
		}
		r := replay(t, dir, args("built.lz4")...)
		if r.code != 3 || strings.Contains(r.stdout, note) != known {
			t.Fatalf("%s: exit %d, note on the build %v (this binary's commit known: %v):\n%s", verb[0], r.code, !known, known, r.stdout)
		}
		r = replay(t, dir, args("built.lz4", "--json")...)
		if r.code != 3 || strings.Contains(r.stdout, `"recorded_by_other_builds": [`) != known {
			t.Fatalf("%s --json: exit %d (this binary's commit known: %v):\n%s", verb[0], r.code, known, r.stdout)
		}
		r = replay(t, dir, args("nobuild.lz4")...)
		if r.code != 3 || strings.Contains(r.stdout, "note: the trace was recorded by") {
			t.Fatalf("%s of a trace without a build: exit %d\n%s", verb[0], r.code, r.stdout)
		}
	}
	if r := replay(t, dir, "info", "built.lz4"); !strings.Contains(r.stdout, `build="`+old+`" pid=42`) {
		t.Fatalf("info does not quote the build:\n%s", r.stdout)
	}
}

// TestACleanReplayOfAnotherBuildsTraceWarns: a trace recorded by other
// sources than this binary's replays without a divergence when the
// change altered only state where no hash was recorded, and the verdicts
// are then this binary's. verify and check say so on stderr (a new
// user's check of a live trace lost its violations to a changed Get,
// and said nothing); a trace without a build gets no warning.
func TestACleanReplayOfAnotherBuildsTraceWarns(t *testing.T) {
	// Without VCS information (GOFLAGS=-buildvcs=false) this binary's
	// sources cannot be told, so no build differs from it and nothing
	// is said; TestWarnOtherBuilds covers the text.
	known := replaySourcesKnown(t)
	dir := t.TempDir()
	f := paxosFile(t, dir, "5s")
	f.Header.Run = map[string]string{record.RunBuild: otherBuild, "pid": "42"}
	rewriteTrace(t, f, filepath.Join(dir, "built.lz4"))
	warning := "warning: the trace was recorded by " + otherBuild + "; this binary is "
	for _, args := range [][]string{{"verify", "built.lz4"}, {"check", "built.lz4", "builtin:paxos"}} {
		r := replay(t, dir, args...)
		if r.code != 0 || strings.Contains(r.stderr, warning) != known {
			t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", args[0], r.code, r.stdout, r.stderr)
		}
	}
	if r := replay(t, dir, "verify", "t.lz4"); r.code != 0 || strings.Contains(r.stderr, "warning") {
		t.Fatalf("verify of a trace without a build: exit %d\n%s", r.code, r.stderr)
	}
}

// paxosFile simulates paxos (seed 4) for the virtual time given into
// dir/t.lz4 and reads the file back, for a test to edit and rewrite.
func paxosFile(t *testing.T, dir, virtualTime string) *record.File {
	t.Helper()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "4", "--time", virtualTime, "-o", "t.lz4"))
	f, err := record.ReadFile(filepath.Join(dir, "t.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// otherBuild is a live recording's build that is not this binary's.
const otherBuild = "example.com/kv/cmd/kvd@v0.9.0 commit 0123456789ab go1.25.0"

// replaySourcesKnown reports whether the replay binary under test knows
// its sources (built with VCS information), so that another build's
// trace can be told from its own.
func replaySourcesKnown(t *testing.T) bool {
	t.Helper()
	vcs, err := exec.Command("go", "version", "-m", replayBin).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(vcs), "vcs.revision=")
}

// TestJobsKeptHistoryBound: a derived value kept 10 deep that grows too
// big for its share at some steps fails at the same step, with the same
// report, split or not. A bound on the sum of the kept versions (a
// review's find) failed later in a segment whose warm-up held part of
// the history, and a seam then sliced past the history it had cut.
func TestJobsKeptHistoryBound(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "--steps", "200", "-o", "p.lz4"))
	if err := os.WriteFile(filepath.Join(dir, "big.star"), []byte(`
def big():
    t = ("x",)
    for i in range(20 if event.step >= 100 and event.step <= 103 else 8):
        t = (t, t)
    return (event.step, t)
d = derived("big", big, keep = 10)
safety("P", lambda: d() != None)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	seq := replay(t, dir, "check", "p.lz4", "big.star")
	if seq.code != 4 || !strings.Contains(seq.stderr, "with keep = 10, each value kept may weigh at most") || !strings.Contains(seq.stderr, "#100") {
		t.Fatalf("--jobs 1: exit %d, want 4 and the derived value's failure at #100\n%s%s", seq.code, seq.stdout, seq.stderr)
	}
	for _, args := range [][]string{{"--marks", "100", "--warmup", "2"}, {"--marks", "60,140", "--warmup", "5"}} {
		sameReport(t, strings.Join(args, " "), seq, replay(t, dir, append(append([]string{"check"}, args...), "p.lz4", "big.star")...))
	}
}
