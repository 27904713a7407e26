package predicates_test

import (
	"testing"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/predicates"
)

// A report with evaluation errors is complete (the trace was read to its
// end) but not fully checked: a new user read "complete": true beside
// four errors as "fully checked".
func TestFullyCheckedNeedsNoErrors(t *testing.T) {
	for _, c := range []struct {
		script string
		want   bool
	}{
		{`safety("Fine", lambda: True)`, true},
		{`safety("Raises", lambda: fail("no"))`, false},
	} {
		ch, err := predicates.LoadSource("f.star", []byte(c.script), simReplayer(t, paxos.System), predicates.Options{To: -1})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := ch.Run(predicates.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		j := rep.JSON()
		if !j.Complete || j.FullyChecked != c.want {
			t.Errorf("%s: complete %v, fully_checked %v, want true, %v", c.script, j.Complete, j.FullyChecked, c.want)
		}
	}
}
