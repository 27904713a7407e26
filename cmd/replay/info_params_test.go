package main

import (
	"strings"
	"testing"
)

// A run's --param settings were in info --json only: the text listed
// every other setting of the run and not them (a new user's VR run with
// partitions=1), and a run is not re-made without them.
func TestInfoShowsParams(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "chord", "--param", "bits=12", "--steps", "100", "-o", "c.lz4"))
	r := replay(t, dir, "info", "c.lz4")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "\nparams       bits=12\n") {
		t.Fatalf("info does not show the run's params:\n%s", r.stdout)
	}
}

// history of a struct (a map entry whose value is one) said "no such
// field" while state listed its fields (a new user's gossip store): it
// says the path holds fields and names some.
func TestHistoryOfAStructNamesItsFields(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "-o", "p.lz4"))
	badInput(t, replay(t, dir, "history", "p.lz4", "--node", "n1", "--field", "Leader"), "holds fields, not a value of its own", "Leader.Round")
}

// events has --to beside --from (a new user guessed it and got "unknown
// flag").
func TestEventsTo(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "-o", "p.lz4"))
	r := replay(t, dir, "events", "p.lz4", "--from", "10", "--to", "12")
	mustOK(t, r)
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "#10 ") || !strings.HasPrefix(lines[2], "#12 ") {
		t.Fatalf("events --from 10 --to 12:\n%s", r.stdout)
	}
	badInput(t, replay(t, dir, "events", "p.lz4", "--from", "10", "--to", "5"), "--to 5")
}
