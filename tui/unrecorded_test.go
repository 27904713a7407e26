package tui

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/livelike"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/statedb"
)

// A message to a node whose recording is missing after the send (its
// process was killed before it wrote its last events) may have been
// received there: the event panel and M said "never received", where
// events says "receipt unknown" (an SRE's killed raftkv leader, whose
// followers' acks it had acted on).
func TestAReceiptInAKilledNodesUnwrittenTailIsUnknownNotLost(t *testing.T) {
	dir := t.TempDir()
	simulate(t, filepath.Join(dir, "full.lz4"), "none", 1, 0)
	_, paths := livelike.Files(t, dir, "full.lz4")
	db, _, err := statedb.Ensure(paths, "", statedb.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	at, to := -1, ""
	for step := 0; step < db.Len() && at < 0; step++ {
		st, err := db.Step(step)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range st.Sends {
			if _, ok := replay.UnrecordedAfter(db.UnknownStretches(s.To), step); ok && len(s.Receipts) == 0 && s.To == livelike.Killed {
				at, to = step, string(s.To)
				break
			}
		}
	}
	if at < 0 {
		t.Fatal("no send to the killed node without a receipt: the test shows nothing")
	}
	m, err := New(Config{DB: db, Traces: paths, Registry: registry, At: at})
	if err != nil {
		t.Fatal(err)
	}
	var panel []string
	for _, l := range m.EventLines(400, 60) {
		panel = append(panel, l.String())
	}
	if text := strings.Join(panel, "\n"); !strings.Contains(text, "receipt unknown (recording missing after it): "+to) || strings.Contains(text, "never received: "+to) {
		t.Fatalf("the event panel at #%d does not say %s's receipt is unknown:\n%s", at, to, text)
	}
	u := startUI(t, m)
	u.keys("M")
	if !strings.Contains(u.text(), fmt.Sprintf("to %s: receipt unknown (%s's recording is missing after #", to, to)) {
		t.Fatalf("M at #%d:\n%s", at, u.text())
	}
	if strings.Contains(u.text(), "to "+to+": never received") {
		t.Fatalf("M at #%d calls the message to %s never received:\n%s", at, to, u.text())
	}
}
