package provenance

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/state"
)

// A message whose send the trace lacks (the sender's file missing or cut)
// is said so, not "sent at #-1".
func TestLinesOfASendTheTraceLacks(t *testing.T) {
	leaf := []state.Leaf{{Path: "V", Value: "1"}}
	c := &Chain{Node: "n1", Field: "V", At: 5, Value: "1", Links: []Link{
		{Step: 5, Node: "n1", Event: "recv Set from n9", Field: "V", Value: "1",
			Trigger: &Trigger{Kind: "recv", Type: "Set", From: "n9", SendStep: -1, Fields: leaf}},
		{Step: 7, Node: "n1", Event: "task w", Field: "V", Value: "1",
			Trigger: &Trigger{Kind: "task", Task: "w", WokenAt: 6, Type: "Set", From: "n9", SendStep: -1, Fields: leaf}},
	}}
	text, _ := c.Lines()
	all := strings.Join(text, "\n")
	if strings.Contains(all, "#-1") || strings.Count(all, "sent where the sender's recording does not reach") != 2 {
		t.Fatalf("lines:\n%s", all)
	}
}

// A timer's or a task's name is the handler's text: shown escaped, as
// replay events shows it (a review found why printing them raw).
func TestLinesEscapeHandlerText(t *testing.T) {
	c := &Chain{Node: "n1", Field: "V", At: 5, Value: "1", Links: []Link{
		{Step: 5, Node: "n1", Event: "timer t", Field: "V", Value: "1",
			Trigger: &Trigger{Kind: "timer", Timer: "t\x1b]0;TITLE\x07\nfake", TimerSetAt: 2}},
		{Step: 7, Node: "n1", Event: "task w", Field: "V", Value: "1",
			Trigger: &Trigger{Kind: "task", Task: "w\u202e", Wake: "x\x1b[2J", WokenAt: 6}},
	}}
	text, _ := c.Lines()
	for _, l := range text {
		if strings.ContainsAny(l, "\x1b\x07\n\u202e") {
			t.Fatalf("a raw control character in %q", l)
		}
	}
}
