package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
)

// TestDocumentedExplorationTableHolds re-runs, for every row of the
// exploration table in docs/exploration.md, the fastest try of the
// strategies' cells: the same strategy and exploration seed, with the
// documented number of runs as the budget, must find its first violation
// at exactly that run. The whole table is what -explore regenerates; this
// keeps the document honest in CI at a budget of a few runs per bug.
func TestDocumentedExplorationTableHolds(t *testing.T) {
	if raceDetector && testing.Short() {
		// It runs in the full suite (go test ./...); under -race -short
		// its dozens of full-length runs of every bundled system exceed
		// the test binary's timeout, and they race nothing: one goroutine.
		t.Skip("the full suite runs it; too slow under the race detector")
	}
	f, err := os.Open("../../docs/exploration.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reg := examples.Registry()
	all, err := exploreStudies(reg)
	if err != nil {
		t.Fatal(err)
	}
	byBug := map[string]exploreStudy{}
	for _, st := range all {
		st.script = "../../" + st.script
		byBug[st.system+" "+st.bug] = st
	}
	in, rows := false, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, tableBegin):
			in = true
			continue
		case strings.HasPrefix(line, tableEnd):
			in = false
		}
		if !in || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| system") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		st, ok := byBug[cells[0]+" "+cells[1]]
		if !ok {
			t.Fatalf("docs/exploration.md has a row for %s --bug %s, which cmd/casestudies does not study", cells[0], cells[1])
		}
		sys, err := reg.Lookup(st.system)
		if err != nil {
			t.Fatal(err)
		}
		rows++
		// The strategy columns follow system, bug, settings and seeds.
		best, bestSeed, bestName := 0, 0, ""
		for c, name := range sampling {
			each := cells[4+c]
			open := strings.Index(each, "(")
			if open < 0 {
				t.Fatalf("%s --bug %s: cell %q has no per-seed counts", st.system, st.bug, each)
			}
			for i, v := range strings.Split(strings.Trim(each[open:], "()"), ",") {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil {
					continue // "-": none within the cap
				}
				if best == 0 || n < best {
					best, bestSeed, bestName = n, i+1, name
				}
			}
		}
		if best == 0 {
			continue // no strategy found it within the cap: nothing quick to re-run
		}
		got, _, err := exploreRuns(sys, reg, st, bestName, uint64(bestSeed), best, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got != best {
			t.Errorf("%s --bug %s --strategy %s --seed %d: first violation at run %d of a budget of %d; docs/exploration.md says run %d",
				st.system, st.bug, bestName, bestSeed, got, best, best)
		}
	}
	if rows == 0 {
		t.Fatal("docs/exploration.md has no exploration table rows")
	}
}
