package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A shard count from a typo or a hostile file is refused before a merge
// lists a trillion missing shards or a shard skips a trillion runs.
func TestShardCountsAreBounded(t *testing.T) {
	for _, spec := range []string{"0/1000000000000", "2999999999/3000000000", "5/100001"} {
		if _, err := parseShard(spec); err == nil || !strings.Contains(err.Error(), "at most 100000 shards") {
			t.Errorf("--shard %s: %v, want refused", spec, err)
		}
	}
	if s, err := parseShard("99999/100000"); err != nil || s.Count != 100000 {
		t.Errorf("--shard 99999/100000: %+v, %v", s, err)
	}
}

// Lists of shards are ranges, and bounded.
func TestIntListIsRangesAndBounded(t *testing.T) {
	if got := intList([]int{0, 1, 2, 5, 7, 8}); got != "0-2, 5, 7-8" {
		t.Errorf("intList = %q", got)
	}
	var many []int
	for i := range 100 {
		many = append(many, 2*i)
	}
	if got := intList(many); !strings.HasSuffix(got, ", 38, and 80 more") || strings.Count(got, ",") != 20 {
		t.Errorf("intList of 100 = %q", got)
	}
}

// A result file comes from another machine: what follows its JSON,
// negative counts are refused, and its text is escaped when printed.
func TestHostileResultFiles(t *testing.T) {
	dir := t.TempDir()
	rf := &resultFile{Hunt: huntID{Kind: "sim", System: "paxos", Command: "replay sim paxos"}, Shard: shardSpec{Index: 0, Count: 1}, Runs: 3,
		Failures: []huntFailure{{Kind: "violation", Headline: "\x1b]0;pwned\x07\x1b[2J evil\nsecond line"}}}
	good := filepath.Join(dir, "good.json")
	if err := writeResults(good, rf); err != nil {
		t.Fatal(err)
	}
	if _, err := readResults(good); err != nil {
		t.Fatalf("a result file as written: %v", err)
	}
	b, _ := os.ReadFile(good)
	trailing := filepath.Join(dir, "trailing.json")
	os.WriteFile(trailing, append(b, "garbage"...), 0o644)
	if _, err := readResults(trailing); err == nil || !strings.Contains(err.Error(), "more follows") {
		t.Errorf("trailing garbage: %v", err)
	}
	rf.Runs = -5
	negative := filepath.Join(dir, "negative.json")
	writeResults(negative, rf)
	if _, err := readResults(negative); err == nil || !strings.Contains(err.Error(), "cannot be negative") {
		t.Errorf("negative runs: %v", err)
	}
	var out strings.Builder
	writeMerged(&out, &mergedResults{Shards: 1, Merged: []int{0}, Failures: rf.Failures})
	if strings.ContainsAny(out.String(), "\x1b\x07") || !strings.Contains(out.String(), `\x1b]0;pwned`) {
		t.Errorf("control characters printed as is:\n%q", out.String())
	}
}
