package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
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
