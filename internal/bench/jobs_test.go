package bench

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckJobsGivesItsCeiling: the --jobs measurement comes with the
// ceiling measured in the same run, so that a reader can tell the split's
// cost from the machine's; the ceiling has no target of its own.
func TestCheckJobsGivesItsCeiling(t *testing.T) {
	if testing.Short() {
		t.Skip("checks a chord trace nine times")
	}
	rs, err := CheckJobs(filepath.Join("..", "..", "scripts", "chord.star"), 3000)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("%d results, want --jobs 2 and its ceiling: %+v", len(rs), rs)
	}
	jobs, ceiling := rs[0], rs[1]
	if jobs.Met == nil || !strings.Contains(jobs.Target, "1.6x") || !strings.Contains(jobs.Baseline, "of the ceiling") {
		t.Errorf("--jobs 2 result: %+v", jobs)
	}
	if ceiling.Met != nil || ceiling.Target != "" || !strings.Contains(ceiling.Name, "ceiling") {
		t.Errorf("the ceiling is a measurement, not a target: %+v", ceiling)
	}
	for _, r := range rs {
		if !(r.Value > 0 && r.Ratio > 0) || math.IsInf(r.Ratio, 0) {
			t.Errorf("%s: value %v, ratio %v", r.Name, r.Value, r.Ratio)
		}
	}
}
