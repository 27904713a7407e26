package predicates_test

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/predicates"
)

// TestMatcherEventMsg: event.msg decodes the received message into a
// struct whose fields read as in Go; None for events without a message;
// errors are one line and non-bool results are refused.
func TestMatcherEventMsg(t *testing.T) {
	tr := paxosTrace(t, 21, "latest-response")
	cases := []struct {
		expr    string
		want    func(i int) bool // which events must match
		wantErr string
	}{
		{expr: `event.msg == None`, want: func(i int) bool { return tr.Event(i).MsgType == "" }},
		{expr: `event.msg_type == "paxos.Collect" and event.msg.Round > 8`, want: func(i int) bool {
			ev := tr.Event(i)
			if ev.MsgType != "paxos.Collect" {
				return false
			}
			m, err := paxos.System.Codec.Decode(ev.MsgType, ev.Payload)
			return err == nil && m.(paxos.Collect).Round > 8
		}},
		{expr: `event.msg.Round`, wantErr: "NoneType has no .Round"},
		{expr: `event.step`, wantErr: "not a bool"},
		{expr: `event.kind ==`, wantErr: "expression:1:"},
		{expr: `x = 1`, wantErr: "expression:1:"},
	}
	for _, c := range cases {
		m, err := predicates.NewMatcher(c.expr, tr, paxos.System.Codec, predicates.Options{})
		if err == nil {
			matched := 0
			for i := range tr.Len() {
				ev := tr.Event(i)
				var ok bool
				ok, err = m.Match(i, ev)
				if err != nil {
					break
				}
				if ok != c.want(i) {
					t.Fatalf("%s at #%d: %v", c.expr, i, ok)
				}
				if ok {
					matched++
				}
			}
			if err == nil && matched == 0 {
				t.Errorf("%s matched nothing: the test proves little", c.expr)
			}
		}
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.expr, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%s: error %v, want one line with %q", c.expr, err, c.wantErr)
		}
	}
}

// TestMatcherBudget: a runaway expression stops at the step budget.
func TestMatcherBudget(t *testing.T) {
	tr := paxosTrace(t, 21, "none")
	m, err := predicates.NewMatcher(`len([x for x in range(1000000)]) > 0`, tr, paxos.System.Codec, predicates.Options{MaxSteps: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Match(0, tr.Event(0)); err == nil || !strings.Contains(err.Error(), "steps") {
		t.Fatalf("want a step budget error, got %v", err)
	}
}
