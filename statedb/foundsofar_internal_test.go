package statedb

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/replaycheck/replaycheck/predicates"
)

// The findings kept while indexing follow a raised alarm to the end of
// its interval: the debugger said "still open at the end" of an alarm
// whose interval had closed (a new user's re-check).
func TestFoundSoFarClosesRaisedAlarms(t *testing.T) {
	dir := t.TempDir()
	trace := simulate(t, dir, "t.lz4", "", 1, nil)
	script := filepath.Join(dir, "w.star")
	src := `liveness("Window", lambda: now() < 100 * MILLISECOND or now() > 300 * MILLISECOND, alarm = lambda aux: True)
safety("Early", lambda: now() < 400 * MILLISECOND)
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, r := replayerOf(t, trace, registry)
	c, err := predicates.Load(script, r, predicates.Options{To: -1})
	if err != nil {
		t.Fatal(err)
	}
	pc := newPredCollector(c)
	for step := range tr.Len() {
		if err := r.Next(); err != nil {
			t.Fatal(err)
		}
		if err := pc.observe(step); err != nil {
			t.Fatal(err)
		}
	}
	var alarm, safety *Violation
	found := pc.found()
	for i := range found {
		switch found[i].Predicate {
		case "Window":
			alarm = &found[i]
		case "Early":
			safety = &found[i]
		}
	}
	if alarm == nil || !alarm.Alarm || alarm.EndStep < 0 || safety == nil {
		t.Fatalf("found so far %+v: want the raised alarm with its interval's end, and the safety violation", found)
	}
}
