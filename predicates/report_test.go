package predicates_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/system"
)

func checkPaxos(t *testing.T, src string, opts predicates.RunOptions) *predicates.Report {
	t.Helper()
	script := filepath.Join(t.TempDir(), "p.star")
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(paxosTrace(t, 1, "none"), system.NewRegistry(paxos.System), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := predicates.Load(script, r, predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Run(opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestReportShape: in JSON a safety violation carries no alarm (a liveness
// notion); screened intervals are listed as screened, not as violations;
// each entry says what it is.
func TestReportShape(t *testing.T) {
	rep := checkPaxos(t, `
safety("Breaks", lambda: event.step != 40)
liveness("Blip", lambda: event.step != 50)
`, predicates.RunOptions{})
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Violations []map[string]any `json:"violations"`
		Screened   []map[string]any `json:"screened"`
		Complete   bool             `json:"complete"`
		Predicates map[string]map[string]any
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Violations) != 1 || out.Violations[0]["predicate"] != "Breaks" || out.Violations[0]["status"] != "violation" {
		t.Fatalf("violations: %s", b)
	}
	for _, k := range []string{"alarm", "alarm_step", "end_step"} {
		if _, ok := out.Violations[0][k]; ok {
			t.Errorf("a safety violation carries %q: %s", k, b)
		}
	}
	if len(out.Screened) != 1 || out.Screened[0]["predicate"] != "Blip" || out.Screened[0]["status"] != "screened" || out.Screened[0]["alarm"] != false {
		t.Fatalf("screened: %s", b)
	}
	if !out.Complete || out.Predicates["Blip"]["screened"] != float64(1) || out.Predicates["Blip"]["violations"] != float64(0) {
		t.Fatalf("summary: %s", b)
	}
}

// TestStoppedEarlyIsNotTheEnd: when checking stops at the first finding,
// an interval still open there is open where checking stopped, not at the
// end of the run; one without an alarm yet is not judged.
func TestStoppedEarlyIsNotTheEnd(t *testing.T) {
	rep := checkPaxos(t, `
liveness("Late", lambda: event.step < 100, alarm = lambda aux: True)
liveness("Pending", lambda: event.step < 90, alarm = lambda aux: event.step > 1000000)
`, predicates.RunOptions{StopAtFirst: true})
	var b strings.Builder
	rep.WriteText(&b, time.Second)
	text := b.String()
	if strings.Contains(text, "at the end") || !strings.Contains(text, "still open when checking stopped at #100") {
		t.Fatalf("report:\n%s", text)
	}
	if !strings.Contains(text, "1 still open when checking stopped (not judged)") {
		t.Fatalf("the unjudged interval is not said to be unjudged:\n%s", text)
	}
	js, _ := json.Marshal(rep)
	if !strings.Contains(string(js), `"status":"unjudged"`) || !strings.Contains(string(js), `"complete":false`) {
		t.Fatalf("json: %s", js)
	}
}

// TestReportRateNeedsATime: a report written without a measured time
// (simtest passes none) states no rate, rather than billions of steps/s.
func TestReportRateNeedsATime(t *testing.T) {
	rep := checkPaxos(t, "A = table(\"paxos.Agent\")\nsafety(\"Any\", lambda: len(A) >= 0)\n", predicates.RunOptions{})
	var b strings.Builder
	rep.WriteText(&b, 0)
	if strings.Contains(b.String(), "steps/s") {
		t.Fatalf("a rate over no time: %s", b.String())
	}
	b.Reset()
	rep.WriteText(&b, time.Second)
	if !strings.Contains(b.String(), "steps/s") {
		t.Fatalf("no rate over a measured second: %s", b.String())
	}
}

// TestClosedIntervalsAreNotSaidScreened: the summary says an alarm
// function screened intervals only when there is one; without it, the
// intervals that closed were simply not raised.
func TestClosedIntervalsAreNotSaidScreened(t *testing.T) {
	rep := checkPaxos(t, `
liveness("Plain", lambda: event.step < 10 or event.step > 20)
liveness("Judged", lambda: event.step < 10 or event.step > 20, alarm = lambda aux: False)
`, predicates.RunOptions{})
	var b strings.Builder
	rep.WriteText(&b, time.Second)
	text := b.String()
	for _, want := range []string{
		"Plain                            liveness  0 alarm(s), 1 interval(s) that closed\n",
		"Judged                           liveness  0 alarm(s), 1 interval(s) screened by its alarm function\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the summary does not say %q:\n%s", want, text)
		}
	}
}

// TestColumnMistakeBeforeNoPredicates: a script still being written, with
// a table but no predicate yet, hears about its mistyped column first.
func TestColumnMistakeBeforeNoPredicates(t *testing.T) {
	script := filepath.Join(t.TempDir(), "p.star")
	if err := os.WriteFile(script, []byte(`A = table("paxos.Agent", columns = ["Nope"])`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(paxosTrace(t, 1, "none"), system.NewRegistry(paxos.System), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = predicates.Load(script, r, predicates.Options{To: -1})
	if err == nil || !strings.Contains(err.Error(), `column "Nope" is not an observed field of paxos.Agent`) {
		t.Fatalf("load: %v", err)
	}
}

// TestAuxSaysWhenItWasComputed: an interval's aux is recomputed while it
// is open, so the report says it is the alarm's, not the opening step's.
func TestAuxSaysWhenItWasComputed(t *testing.T) {
	rep := checkPaxos(t, `
liveness("Late", lambda: event.step < 5 or event.step > 40,
         aux = lambda: {"at": event.step}, alarm = lambda aux: aux["at"] >= 30)
`, predicates.RunOptions{})
	var b strings.Builder
	rep.WriteText(&b, time.Second)
	if !strings.Contains(b.String(), `aux:     {"at": 30} (at the alarm, #30)`) {
		t.Fatalf("report:\n%s", b.String())
	}
}

// A long aux (a linearizability report lists every operation of its
// window) was one line of thousands of characters: a dict over a line's
// length is written a key per line, and a long list in it an element per
// line; a string that would break the line stays quoted.
func TestLongAuxIsWrittenAKeyPerLine(t *testing.T) {
	rep := checkPaxos(t, `
def _aux():
    return {"model": "kv", "window": ["c%d #%d..#%d (\"put\", \"k3\", \"v%d\") -> None" % (i, i, i + 5, i) for i in range(12)] + ["forged\nline"]}
safety("Long", lambda: event.step < 5, aux = _aux)
`, predicates.RunOptions{StopAtFirst: true})
	var b strings.Builder
	rep.WriteText(&b, time.Second)
	for _, want := range []string{"\n  aux:\n    model: \"kv\"\n    window: (13)\n      c0 #0..#5 (\"put\", \"k3\", \"v0\") -> None\n",
		"\n      c11 #11..#16 (\"put\", \"k3\", \"v11\") -> None\n      \"forged\\nline\"\n"} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("report lacks %q:\n%s", want, b.String())
		}
	}
}
