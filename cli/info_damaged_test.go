package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples/paxos"
)

// Of a truncated trace, info's ratios are of the bytes decoded: it said
// "compression 1.0x" and twice the bytes per event, counting the tail it
// could not decode as if stored raw.
func TestInfoOfATruncatedTraceCountsWhatWasDecoded(t *testing.T) {
	dir := t.TempDir()
	run := replayOf(paxos.System)
	whole := filepath.Join(dir, "whole.lz4")
	if code, _, errs := run("sim", "paxos", "--steps", "20000", "--time", "1000h", "-o", whole); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	info := func(file string) (compression float64, damage string) {
		t.Helper()
		code, out, errs := run("info", file, "--json")
		if code != 0 {
			t.Fatalf("info %s: exit %d: %s", file, code, errs)
		}
		var in struct {
			Compression float64 `json:"compression_ratio"`
			Damage      string  `json:"damage"`
		}
		if err := json.Unmarshal([]byte(out), &in); err != nil {
			t.Fatalf("info %s: %v\n%s", file, err, out)
		}
		return in.Compression, in.Damage
	}
	full, _ := info(whole)
	cut := filepath.Join(dir, "cut.lz4")
	if err := os.WriteFile(cut, data[:len(data)*3/5], 0o644); err != nil {
		t.Fatal(err)
	}
	got, damage := info(cut)
	if damage == "" || got < full*0.95 || got > full*1.05 {
		t.Errorf("compression of the whole trace %.2fx, of its first 3/5 %.2fx (damage %q): want the same within 5%%", full, got, damage)
	}
}

// A node that had crashed before the cut of a truncated trace was down,
// not running unrecorded: check's list of unknown stretches said "n1
// after #7642" for it, as for a node whose events were lost.
func TestCheckOfATruncatedTraceNamesTheCrashOfADownNode(t *testing.T) {
	dir := t.TempDir()
	run := replayOf(paxos.System)
	crashAt := regexp.MustCompile(`n\d+ after its crash at #(\d+)`)
	for seed := 4; seed < 12; seed++ {
		whole := filepath.Join(dir, "whole.lz4")
		if code, _, errs := run("sim", "paxos", "--seed", strconv.Itoa(seed), "--churn", "0.5", "--steps", "20000", "--time", "1h", "-o", whole); code != 0 {
			t.Fatalf("sim: exit %d: %s", code, errs)
		}
		data, err := os.ReadFile(whole)
		if err != nil {
			t.Fatal(err)
		}
		cut := filepath.Join(dir, "cut.lz4")
		if err := os.WriteFile(cut, data[:len(data)*2/5], 0o644); err != nil {
			t.Fatal(err)
		}
		_, out, _ := run("check", cut, "builtin:paxos")
		m := crashAt.FindStringSubmatch(out)
		if m == nil {
			continue
		}
		code, ev, errs := run("events", cut, "--from", m[1], "--limit", "1")
		if code != 0 || !strings.Contains(ev, " crash") {
			t.Fatalf("check said %q, but step #%s is not a crash (exit %d):\n%s%s", m[0], m[1], code, ev, errs)
		}
		if !regexp.MustCompile(`n\d+ after #\d+`).MatchString(out) {
			t.Fatalf("no running node's stretch listed beside the crashed one:\n%s", out)
		}
		return
	}
	t.Fatal("no cut of seeds 4-11 left a node down")
}
