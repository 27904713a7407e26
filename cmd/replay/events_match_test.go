package main

import (
	"strings"
	"testing"
)

// TestEventsMatchAndLostMessages: --match filters by a Starlark expression
// over event (event.msg decoded), bad expressions exit 2 with one line,
// and lost messages are shown with their fields and their fate.
func TestEventsMatchAndLostMessages(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "raftkv", "--seed", "2", "--steps", "400", "-o", "r.lz4"))

	r := replay(t, dir, "events", "r.lz4", "--match", `event.kind == "input" and event.msg.Key == "k01"`)
	mustOK(t, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "input raftkv.Put{Req:2 Key:k01") {
		t.Fatalf("--match on event.msg.Key: want the one Put of k01, got:\n%s", r.stdout)
	}

	// A comparison with a short type name matches nothing: said, with
	// the full names (it printed nothing without a word).
	none := replay(t, dir, "events", "r.lz4", "--match", `event.msg_type == "Put"`)
	mustOK(t, none)
	if none.stdout != "" || !strings.Contains(none.stderr, "no event matched --match (event.msg_type is a full type name: ") || !strings.Contains(none.stderr, "raftkv.Put") {
		t.Fatalf("a --match of nothing:\nstdout %s\nstderr %s", none.stdout, none.stderr)
	}
	// Where the other filters left nothing, --match is not to blame.
	if other := replay(t, dir, "events", "r.lz4", "--kind", "crash", "--match", `event.msg_type == "Put"`); other.stderr != "" && strings.Contains(other.stderr, "--match") {
		t.Fatalf("--kind crash left nothing, and the note blames --match:\n%s", other.stderr)
	}

	all := replay(t, dir, "events", "r.lz4")
	mustOK(t, all)
	// Seed 2 drops one message and the run stops with heartbeats in
	// flight: both show their fields and why they were not received, and
	// a message nobody received still names whom it was sent to.
	for _, want := range []string{"MsgAppResp to:2 from:3 term:2 index:27} to 2 (never received: 2 (dropped))", "to 1 (never received: 1 (in flight))"} {
		if !strings.Contains(all.stdout, want) {
			t.Errorf("events lacks %q", want)
		}
	}
	if strings.Contains(all.stdout, " to nobody") {
		t.Errorf("a send reads as sent to nobody:\n%s", all.stdout)
	}
	js := replay(t, dir, "events", "r.lz4", "--json", "--match", `event.step == 372`)
	mustOK(t, js)
	if !strings.Contains(js.stdout, `"fate":"dropped"`) || !strings.Contains(js.stdout, `"message":"raftpb.Message{M:type:MsgAppResp`) {
		t.Errorf("--json lacks the lost message's fate and fields:\n%s", js.stdout)
	}
	// --json gives a message's fields as JSON too, not only its line cut
	// at 120 characters (a new user's view change, its log in a message).
	put := replay(t, dir, "events", "r.lz4", "--json", "--match", `event.kind == "input" and event.msg.Key == "k01"`)
	mustOK(t, put)
	if !strings.Contains(put.stdout, `"msg":{"Req":2,"Key":"k01"`) {
		t.Errorf("--json lacks the input's fields as JSON:\n%s", put.stdout)
	}

	for _, c := range []struct{ expr, want string }{
		{`event.kind ==`, "--match: expression:1:"},
		{`event.msg.Key`, "NoneType has no .Key"},
		{`event.step`, "not a bool"},
		{`event.nosuch`, "no .nosuch"},
	} {
		badInput(t, replay(t, dir, "events", "r.lz4", "--match", c.expr), c.want)
	}
}

// print() in a --match expression wrote without end: 1.8 GB on stderr
// from a trace of 1,795 events. It is bounded as a script's print is
// (1 MiB, then one line that says the rest is dropped).
func TestEventsMatchPrintIsBounded(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "--steps", "1000", "-o", "p.lz4"))
	r := replay(t, dir, "events", "p.lz4", "--match", `print("x" * 10000) or True`)
	mustOK(t, r)
	if len(r.stderr) > 1<<20+4096 || !strings.Contains(r.stderr, "is dropped") {
		t.Fatalf("--match's print wrote %d bytes on stderr, ending %q", len(r.stderr), r.stderr[max(0, len(r.stderr)-200):])
	}
}
