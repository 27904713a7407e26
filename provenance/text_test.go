package provenance

import (
	"fmt"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/state"
)

// A message holding a log listed every field on one line (12,953
// characters for a view change carrying 105 entries: a new user's VR).
// A line shows a few, those holding the followed value first.
func TestTriggerLineShowsAFewFieldsTheFollowedOneFirst(t *testing.T) {
	var fs []state.Leaf
	for i := range 300 {
		fs = append(fs, state.Leaf{Path: fmt.Sprintf("Log[%d].ID", i), Value: fmt.Sprintf("%q", fmt.Sprint("op", i))})
	}
	c := &Chain{Node: "r2", Field: "Log[250].ID", At: 9, Value: `"op250"`, Links: []Link{{Step: 9, Node: "r2", Event: "recv", Field: "Log[250].ID", Value: `"op250"`,
		Trigger: &Trigger{Kind: "recv", Type: "vr.DoViewChange", Fields: fs, From: "r3", SendStep: 7}}}}
	text, _ := c.Lines()
	line := text[2]
	if len(line) > 400 || !strings.Contains(line, `Log[250].ID = "op250"`) || !strings.Contains(line, "Log[0].ID") || !strings.Contains(line, "and 292 more fields") {
		t.Fatalf("the trigger's line (%d bytes):\n%s", len(line), line)
	}
}
