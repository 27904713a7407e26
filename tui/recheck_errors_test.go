package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/statedb"
)

// typoPredicate fails when it is first evaluated (a misspelt column),
// which disables it: the check goes on without it, not fully done.
const typoPredicate = "\nsafety(\"Typo\", lambda: all([a.AcceptedValu == None for a in Agent]))\n"

const agentTable = "Agent = table(\"paxos.Agent\")"

// openWithErrors opens the demo's trace with results that hold a
// predicate error: its script is the Agent table and typoPredicate.
func openWithErrors(t *testing.T) (*Model, string) {
	t.Helper()
	trace, script := demoFiles(t)
	if err := os.WriteFile(script, []byte(agentTable+typoPredicate), 0o644); err != nil {
		t.Fatal(err)
	}
	db, _, err := statedb.Ensure([]string{trace}, "", statedb.Options{Registry: registry, Preds: script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	m, err := New(Config{DB: db, Traces: []string{trace}, Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	return m, script
}

// A re-check whose predicate could not be evaluated is a failed re-check:
// the previous results stay, on the screen and in the database, and the
// error says why (a new user's typo showed "no violations" and stored it).
func TestRecheckWithAPredicateErrorKeepsThePreviousResults(t *testing.T) {
	m, script := openDemo(t, 0)
	before := m.violationCount()
	if before == 0 {
		t.Fatal("the demo's script found nothing to keep")
	}
	u := startUI(t, m)
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, append(append([]byte{}, src...), typoPredicate...), 0o644); err != nil {
		t.Fatal(err)
	}
	u.keys("r")
	u.waitFor("re-check failed")
	if got := m.violationCount(); got != before {
		t.Fatalf("after a re-check with a predicate error: %d violations shown, want the previous %d:\n%s", got, before, u.text())
	}
	if u.row("Typo failed at step") == "" {
		t.Fatalf("the predicate's error is not shown:\n%s", u.text())
	}
	if stored := m.db.Predicates(); stored == nil || len(stored.Errors) > 0 || len(stored.Violations) == 0 {
		t.Fatalf("the database holds the failed re-check's results: %+v", stored)
	}
}

// Results with predicate errors never read as a clean check: not on the
// status line, not from v, not in the Violations panel.
func TestStoredResultsWithErrorsSayNotFullyChecked(t *testing.T) {
	m, _ := openWithErrors(t)
	if m.preds == nil || len(m.preds.Errors) == 0 {
		t.Fatalf("the index kept no predicate error: %+v", m.preds)
	}
	u := startUI(t, m)
	if s := u.statusText(); !strings.Contains(s, "not fully checked") {
		t.Fatalf("the status line reads as a clean check:\n%s", s)
	}
	u.keys("v")
	if s := u.statusText(); !strings.Contains(s, "not fully checked") {
		t.Fatalf("v reads as a clean check:\n%s", s)
	}
	if u.row("no violations in") != "" && !strings.Contains(u.row("no violations in"), "not fully checked") {
		t.Fatalf("the Violations panel reads as a clean check:\n%s", u.text())
	}
}

// When the results shown already hold predicate errors, a re-check that
// still has some is no worse: its results replace them (a user fixing a
// script one typo at a time saw the first typo's results kept forever).
func TestRecheckOverResultsWithErrorsShowsTheNewOnes(t *testing.T) {
	m, script := openWithErrors(t)
	u := startUI(t, m)
	other := strings.ReplaceAll(typoPredicate, "Typo", "Other")
	if err := os.WriteFile(script, []byte(agentTable+other), 0o644); err != nil {
		t.Fatal(err)
	}
	u.keys("r")
	u.waitFor("re-checked")
	if u.row("Other failed at step") == "" {
		t.Fatalf("the new results are not shown:\n%s", u.text())
	}
	s := u.statusText()
	if strings.Count(s, "predicate error(s)") != 1 {
		t.Errorf("the status line should count the errors once:\n%s", s)
	}
	if !strings.Contains(s, "violation(s) (before: ") {
		t.Errorf("the count before should stand beside the violations:\n%s", s)
	}
	stored := m.db.Predicates()
	if stored == nil || len(stored.Errors) != 1 || !strings.Contains(stored.Errors[0], "Other") {
		t.Fatalf("the database does not hold the new results: %+v", stored)
	}
}

// A script the user named otherwise than by its path (builtin:paxos, read
// from a copy in their cache) is named so on the screen and by a
// re-check, also when the database stored its results under another
// spelling of the copy's path (a new user saw the cache path).
func TestTheScriptIsNamedAsTheUserNamedIt(t *testing.T) {
	trace, script := demoFiles(t)
	db, _, err := statedb.Ensure([]string{trace}, "", statedb.Options{Registry: registry, Preds: script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	other := filepath.Dir(script) + string(filepath.Separator) + "." + string(filepath.Separator) + filepath.Base(script)
	m, err := New(Config{DB: db, Traces: []string{trace}, Registry: registry, Preds: other, PredsName: "builtin:mine"})
	if err != nil {
		t.Fatal(err)
	}
	u := startUI(t, m)
	if s := u.text(); !strings.Contains(s, "builtin:mine") || strings.Contains(s, script) {
		t.Fatalf("the screen names the script by its path:\n%s", s)
	}
	u.keys("r")
	u.waitFor("re-checked")
	if s := u.statusText(); !strings.Contains(s, "re-checked builtin:mine") {
		t.Fatalf("the re-check names the script by its path:\n%s", s)
	}
}
