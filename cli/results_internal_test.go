package cli

import (
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
