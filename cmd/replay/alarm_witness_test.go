package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A liveness alarm whose failing row changed between the interval's start
// and the alarm (chord finger-slow, seed 1: n1's fingers when it began,
// n2's at the alarm) names both wherever a finding is written: in a seed
// hunt's result file and what results merge prints, in the HTML report,
// and in a Perfetto export. They named only the row of the start, which
// may have recovered long before.
func TestAlarmWitnessReachesEveryOutput(t *testing.T) {
	dir := t.TempDir()
	sim := replay(t, dir, "sim", "chord", "--bug", "finger-slow", "--seed", "1", "-o", "c.lz4")
	if sim.code != 0 {
		t.Fatalf("sim: exit %d %s", sim.code, sim.stderr)
	}
	chk := replay(t, dir, "check", "c.lz4", "builtin:chord", "--json")
	var rep struct {
		Violations []struct {
			Predicate    string `json:"predicate"`
			Witness      string `json:"witness"`
			AlarmWitness string `json:"alarm_witness"`
			AlarmStep    int    `json:"alarm_step"`
		} `json:"violations"`
	}
	if err := json.Unmarshal([]byte(chk.stdout), &rep); err != nil || len(rep.Violations) == 0 {
		t.Fatalf("check --json: exit %d %v\n%s", chk.code, err, chk.stderr)
	}
	v := rep.Violations[0]
	if v.AlarmWitness == "" || v.AlarmWitness == v.Witness {
		t.Fatalf("the test wants an alarm whose witness changed; got %+v", v)
	}

	hunt := replay(t, dir, "sim", "chord", "--bug", "finger-slow", "--seeds", "1-1", "--check", "builtin:chord", "--results", "r.json", "-o", "h.lz4")
	if hunt.code != 1 {
		t.Fatalf("hunt: exit %d %s", hunt.code, hunt.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Failures []struct {
			Witness      string `json:"witness"`
			AlarmWitness string `json:"alarm_witness"`
		} `json:"failures"`
	}
	if err := json.Unmarshal(b, &file); err != nil || len(file.Failures) != 1 {
		t.Fatalf("result file: %v\n%s", err, b)
	}
	if f := file.Failures[0]; f.Witness != v.Witness || f.AlarmWitness != v.AlarmWitness {
		t.Fatalf("result file witnesses %+v, want %s and %s", f, v.Witness, v.AlarmWitness)
	}
	merge := replay(t, dir, "results", "merge", "r.json")
	if want := "witness:   " + v.AlarmWitness + " at the alarm; " + v.Witness + " when it began"; !strings.Contains(merge.stdout, want) {
		t.Fatalf("results merge should say %q:\n%s", want, merge.stdout)
	}

	report := replay(t, dir, "report", "c.lz4", "builtin:chord", "-o", "r.html")
	if report.code != 1 && report.code != 0 || !strings.Contains(report.stdout, "wrote r.html (") {
		t.Fatalf("report: exit %d, stdout %q, stderr %s", report.code, report.stdout, report.stderr)
	}
	page, err := os.ReadFile(filepath.Join(dir, "r.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `witness at the alarm</td><td class="mono alarm-witness">`+v.AlarmWitness) {
		t.Fatalf("the report does not name the alarm's witness %s", v.AlarmWitness)
	}

	exp := replay(t, dir, "export", "c.lz4", "--format", "perfetto", "--preds", "builtin:chord", "-o", "c.json")
	if exp.code != 0 || !strings.Contains(exp.stdout, "wrote c.json (") {
		t.Fatalf("export: exit %d, stdout %q, stderr %s", exp.code, exp.stdout, exp.stderr)
	}
	trace, err := os.ReadFile(filepath.Join(dir, "c.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(trace), `"alarm_witness":"`+v.AlarmWitness+`"`) {
		t.Fatalf("the Perfetto export does not name the alarm's witness %s", v.AlarmWitness)
	}
	// The mark sits at the interval's first step: its alarm step is
	// among its arguments (a new user looked for it).
	if !strings.Contains(string(trace), fmt.Sprintf(`"alarm_step":%d`, v.AlarmStep)) {
		t.Fatalf("the Perfetto export does not give the alarm's step #%d", v.AlarmStep)
	}
}
