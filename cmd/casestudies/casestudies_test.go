package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
)

// TestDocumentedCaseStudiesHold re-runs every bug of docs/case-studies.md
// at the first seed the document gives and checks that the predicate it
// names is violated (a safety violation or a liveness alarm), and that the
// correct systems stay clean on the first seeds. The full 1-100 sweep is
// what the generator runs; this keeps the document honest in CI.
func TestDocumentedCaseStudiesHold(t *testing.T) {
	f, err := os.Open("../../docs/case-studies.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reg := examples.Registry()
	scripts := map[string]string{}
	for _, st := range studies {
		scripts[st.system] = "../../" + st.script
	}
	rows, cleanRows := 0, 0
	sc := bufio.NewScanner(f)
	section := ""
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			section = line
			continue
		}
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| system") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		sys, err := reg.Lookup(cells[0])
		if err != nil {
			t.Fatalf("docs/case-studies.md names %q: %v", cells[0], err)
		}
		switch section {
		case "## Bugs":
			bug, want := cells[1], cells[2]
			seed, err := strconv.ParseUint(cells[3], 10, 64)
			if err != nil {
				t.Fatalf("%s --bug %s: the document records no failing seed (%q)", sys.Name, bug, cells[3])
			}
			cfg := sim.DefaultConfig()
			cfg.Seed, cfg.Bug = seed, bug
			res, err := simtest.Run(sys, cfg, scripts[sys.Name], simtest.Options{Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, v := range res.Failing {
				found = found || v.Predicate == want
			}
			if !found {
				t.Errorf("%s --bug %s seed %d: %s not violated, as docs/case-studies.md says", sys.Name, bug, seed, want)
			}
			rows++
		case "## Correct systems":
			for seed := uint64(1); seed <= 3; seed++ {
				cfg := sim.DefaultConfig()
				cfg.Seed = seed
				res, err := simtest.Run(sys, cfg, scripts[sys.Name], simtest.Options{Registry: reg})
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range res.Failing {
					t.Errorf("%s (correct) seed %d: %s", sys.Name, seed, v.Headline())
				}
			}
			cleanRows++
		}
	}
	if rows == 0 || cleanRows == 0 {
		t.Fatalf("docs/case-studies.md has %d bug rows and %d correct-system rows", rows, cleanRows)
	}
}
