package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The lock service runs on tasks: these go through the CLI the way a user
// would, from simulation to the predicates that catch its seeded bugs.

func TestLockserverDeadlockCaughtWithTasksShown(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "lockserver", "--bug", "deadlock", "--seed", "1", "-o", "a.lz4"))
	mustOK(t, replay(t, dir, "sim", "lockserver", "--bug", "deadlock", "--seed", "1", "-o", "b.lz4"))
	a, _ := os.ReadFile(filepath.Join(dir, "a.lz4"))
	b, _ := os.ReadFile(filepath.Join(dir, "b.lz4"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatal("same seed, different traces: task scheduling is not deterministic")
	}
	mustOK(t, replay(t, dir, "verify", "a.lz4"))
	r := replay(t, dir, "check", "a.lz4", "lockserver.star")
	if r.code != 1 {
		t.Fatalf("check exit %d, want 1 (violations)\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The alarm names the stuck queue and what the clerks' tasks wait for:
	// workers in calls holding the only socket, a revoker waiting for it.
	for _, want := range []string{"PendingQueueDrains (liveness)", "alarm at", "call server lockserver.Acquire", "revoke ", "acquire sockets"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("check output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = replay(t, dir, "events", "a.lz4", "--kind", "task", "--json", "--limit", "40")
	mustOK(t, r)
	woken := 0
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev struct {
			Kind string `json:"kind"`
			Task *struct {
				Name    string `json:"name"`
				WokenBy string `json:"woken_by"`
				WokenAt *int   `json:"woken_at"`
			} `json:"task"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Kind != "task" || ev.Task == nil || ev.Task.Name == "" || ev.Task.WokenAt == nil {
			t.Fatalf("task event line %q: %v", l, err)
		}
		if strings.HasPrefix(ev.Task.WokenBy, "msg ") {
			woken++
		}
	}
	if woken == 0 {
		t.Fatalf("no task resume was woken by a message:\n%s", r.stdout)
	}
}

func TestLockserverBugsCaughtWithin100Seeds(t *testing.T) {
	if testing.Short() {
		t.Skip("sweeps up to 100 seeds")
	}
	dir := t.TempDir()
	for _, bug := range []string{"livelock", "deadlock"} {
		r := replay(t, dir, "sim", "lockserver", "--bug", bug, "--seeds", "1-100", "--check", "lockserver.star")
		if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "PendingQueueDrains alarm") {
			t.Fatalf("%s: exit %d, want a PendingQueueDrains alarm\n%s%s", bug, r.code, r.stdout, r.stderr)
		}
	}
	r := replay(t, dir, "sim", "lockserver", "--seeds", "1-100", "--check", "lockserver.star")
	mustOK(t, r)
	if !strings.Contains(r.stdout+r.stderr, "100 runs") || !strings.Contains(r.stdout+r.stderr, "no violation") {
		t.Fatalf("correct variant:\n%s%s", r.stdout, r.stderr)
	}
}

// TestWhyFollowsATaskToTheMessageThatWokeIt: a clerk's cached mode is
// written by a worker task after its call returned the server's Grant;
// replay why goes from the task's resume to the receive that woke it and
// on to the server's send.
func TestWhyFollowsATaskToTheMessageThatWokeIt(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "lockserver", "--seed", "1", "--time", "1s", "-o", "t.lz4"))
	r := replay(t, dir, "history", "t.lz4", "--node", "c1", "--field", "Entries[0].Held", "--json")
	mustOK(t, r)
	var h struct {
		Versions []struct {
			Step  int    `json:"step"`
			Value string `json:"value"`
		} `json:"versions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &h); err != nil {
		t.Fatal(err)
	}
	at := -1
	for _, v := range h.Versions {
		if v.Value != "0 (none)" { // lockserver.Mode shows its name
			at = v.Step
			break
		}
	}
	if at < 0 {
		t.Fatalf("c1 never cached lock a:\n%s", r.stdout)
	}
	r = replay(t, dir, "why", "t.lz4", "--at", fmt.Sprint(at), "--node", "c1", "--field", "Entries[0].Held")
	mustOK(t, r)
	for _, want := range []string{"task worker", "woken at #", "by message lockserver.Grant from server", "sent by server at #"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("why lacks %q:\n%s", want, r.stdout)
		}
	}
}
