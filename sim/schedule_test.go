package sim_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

func simulate(t *testing.T, sys *system.System, cfg sim.Config) *record.File {
	t.Helper()
	var buf bytes.Buffer
	if _, err := sim.Run(sys, cfg.WithDefaults(sys), &buf); err != nil {
		t.Fatalf("%s: %v", sys.Name, err)
	}
	f, err := record.Read(bytes.NewReader(buf.Bytes()), sys.Name+".lz4", int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// sameEvents compares two runs event by event: identity, time, inputs,
// drawn values and effects (log lines are regenerated, not recorded).
func sameEvents(t *testing.T, what string, want, got []*node.Event) {
	t.Helper()
	for i := range min(len(want), len(got)) {
		w, g := *want[i], *got[i]
		w.Logs, g.Logs = nil, nil
		if !reflect.DeepEqual(w, g) {
			t.Fatalf("%s: event %d differs:\nwant %+v\ngot  %+v", what, i, w, g)
		}
	}
	if len(want) != len(got) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
}

// TestScheduleReplaysEveryBundledSystem: the schedule read from a seeded
// trace, written as text and read back, re-runs exactly that execution
// (faults, duplicates and losses included, and its Lamport clocks: every
// other system records causal clocks) under the Schedule chooser.
func TestScheduleReplaysEveryBundledSystem(t *testing.T) {
	reg := examples.Registry()
	for i, name := range reg.Names() {
		sys, _ := reg.Lookup(name)
		t.Run(name, func(t *testing.T) {
			cfg := sim.DefaultConfig()
			cfg.Seed, cfg.Steps, cfg.Churn, cfg.Dup, cfg.Drop = 7, 1500, 0.5, 0.05, 0.05
			cfg.CausalClocks = i%2 == 1
			if len(sys.Bugs) > 0 {
				cfg.Bug = sys.Bugs[0].Name
			}
			orig := simulate(t, sys, cfg)
			sc, err := sim.ScheduleOf(orig)
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			if err := sc.Format(&text); err != nil {
				t.Fatal(err)
			}
			back, err := sim.ParseSchedule(bytes.NewReader(text.Bytes()), "s.schedule")
			if err != nil {
				t.Fatalf("%v\n%s", err, head(text.String(), 20))
			}
			if err := back.Check(sys); err != nil {
				t.Fatal(err)
			}
			again := simulate(t, sys, back.Config())
			sameEvents(t, name, orig.Events, again.Events)
			if got := again.Header.Run["chooser"]; !strings.HasPrefix(got, "schedule of") {
				t.Errorf("the replayed trace names its chooser %q", got)
			}
			// And its own schedule is the same text, but for the origin.
			sc2, err := sim.ScheduleOf(again)
			if err != nil {
				t.Fatal(err)
			}
			sc2.Origin = sc.Origin
			var text2 bytes.Buffer
			sc2.Format(&text2)
			if text2.String() != text.String() {
				t.Errorf("the replay's schedule differs from the original's")
			}
		})
	}
}

func head(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// TestEditedScheduleSaysWhichLine: a schedule whose event cannot happen
// (a delivery of a message never sent) stops the run with an error
// naming the line, not a silently different run.
func TestEditedScheduleSaysWhichLine(t *testing.T) {
	sys, _ := examples.Registry().Lookup("paxos")
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps = 3, 200
	sc, err := sim.ScheduleOf(simulate(t, sys, cfg))
	if err != nil {
		t.Fatal(err)
	}
	for i := range sc.Events {
		if sc.Events[i].Kind == node.KindRecv {
			sc.Events[i].Msg.Seq += 1000
			break
		}
	}
	var buf bytes.Buffer
	_, err = sim.Run(sys, sc.Config().WithDefaults(sys), &buf)
	if err == nil || !strings.Contains(err.Error(), "is not pending") || !strings.Contains(err.Error(), "schedule event") {
		t.Fatalf("an impossible schedule ran: %v", err)
	}
}

func TestParseScheduleErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"", "empty file"},
		{"hello\n", "not a replaycheck schedule"},
		{sim.ScheduleMagic + "\nsystem paxos\n", `no "nodes" line`},
		{sim.ScheduleMagic + "\nsystem paxos\nnodes 0\n", "nodes"},
		{sim.ScheduleMagic + "\nsystem paxos\nsystem paxos\n", "given twice"},
		{sim.ScheduleMagic + "\nsystem paxos\nnodes 3\nseed 1\nlatency 1ms-2ms\n1ms recv n1 n2/x/0 T\n", "FROM/SEQ/INDEX"},
		{sim.ScheduleMagic + "\nsystem paxos\nnodes 3\nseed 1\nlatency 1ms-2ms\n2ms init n1\n1ms init n2\n", "before the previous line"},
		{sim.ScheduleMagic + "\nsystem paxos\nnodes 3\nseed 1\nlatency 1ms-2ms\n1ms bogus n1\n", "bogus"},
		{sim.ScheduleMagic + "\nsystem paxos\nnodes 3\nseed 1\nlatency 1ms-2ms\n1ms init n1 extra\n", "extra"},
		{sim.ScheduleMagic + "\nsystem paxos\nnodes 3\nseed 1\nlatency 2ms-1ms\n", "latency"},
		{sim.ScheduleMagic + "\nsystem paxos\nnodes 3\nclocks lamport\n", `clocks "lamport"`},
		// A line over the bound said "bufio.Scanner: token too long".
		{sim.ScheduleMagic + "\nsystem paxos\n# " + strings.Repeat("x", sim.MaxScheduleLine) + "\n", "x.schedule:3: a line longer than 1048576 bytes"},
	} {
		_, err := sim.ParseSchedule(strings.NewReader(tc.text), "x.schedule")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSchedule(%q) = %v, want an error mentioning %q", tc.text, err, tc.want)
		}
	}
}

// TestImpossibleFaultSaysWhichLine: a crash of a node that is down (or
// not started) and a restart of one that is up are schedule lines that
// cannot happen, told as other impossible lines are (the simulator's
// refusal named no line, and the command line took it for a failed run).
func TestImpossibleFaultSaysWhichLine(t *testing.T) {
	sys, _ := examples.Registry().Lookup("paxos")
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Steps, cfg.Churn = 3, 200, 0
	base, err := sim.ScheduleOf(simulate(t, sys, cfg))
	if err != nil {
		t.Fatal(err)
	}
	// After every node's init, n3 is up.
	after := 0
	for i, e := range base.Events {
		if e.Kind == node.KindInit {
			after = i + 1
		}
	}
	at := base.Events[after].At
	fault := func(kind node.Kind) sim.ScheduledEvent {
		return sim.ScheduledEvent{At: at, Pending: sim.Pending{Kind: kind, Node: "n3"}}
	}
	early := sim.ScheduledEvent{At: 0, Pending: sim.Pending{Kind: node.KindRestart, Node: "n3"}}
	for _, tc := range []struct {
		name   string
		pos    int
		insert []sim.ScheduledEvent
		want   string
	}{
		{"crash of a down node", after, []sim.ScheduledEvent{fault(node.KindCrash), fault(node.KindCrash)}, "schedule event " + fmt.Sprint(after+2) + ", "},
		{"restart of an up node", after, []sim.ScheduledEvent{fault(node.KindRestart)}, "schedule event " + fmt.Sprint(after+1) + ", "},
		{"restart before the init", 0, []sim.ScheduledEvent{early}, "schedule event 1, 0s restart n3: the node has not started"},
	} {
		sc := *base
		sc.Events = slices.Concat(base.Events[:tc.pos], tc.insert, base.Events[tc.pos:])
		var buf bytes.Buffer
		_, err := sim.Run(sys, sc.Config().WithDefaults(sys), &buf)
		var mm *sim.ScheduleMismatch
		if !errors.As(err, &mm) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v, want a ScheduleMismatch naming %q", tc.name, err, tc.want)
		}
	}
}
