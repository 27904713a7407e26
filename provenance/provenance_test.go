package provenance

import (
	"path/filepath"
	"testing"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/statedb"
	"github.com/replaycheck/replaycheck/system"
)

// TestWhyReplayedStatesMatchTheDatabase checks the in-memory replay
// source against the database it stands in for: every node's state and
// every field's last write at a spread of steps.
func TestWhyReplayedStatesMatchTheDatabase(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug = 21, "latest-response"
	cfg = cfg.WithDefaults(paxos.System)
	trace := simtest.Record(t, paxos.System, cfg, filepath.Join(t.TempDir(), "demo.lz4"))
	reg := system.NewRegistry(paxos.System)
	db, _, err := statedb.Ensure([]string{trace}, "", statedb.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tr, err := replay.Load(trace)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := Replay(tr, reg, 600)
	if err != nil {
		t.Fatal(err)
	}
	fromDB := FromDB(db)
	for _, pos := range []int{0, 13, 158, 263, 273, 600} {
		for _, id := range tr.Nodes {
			a, ca, err := fromDB.State(id, pos)
			if err != nil {
				t.Fatal(err)
			}
			b, cb, err := rp.State(id, pos)
			if err != nil {
				t.Fatal(err)
			}
			// The database keeps the handler's field order; the replay
			// source the order of first appearance: compare as sets.
			if !sameLeaves(a, b) || len(ca) != len(cb) {
				t.Fatalf("%s at #%d: database %v (changed %v), replay %v (changed %v)", id, pos, a, ca, b, cb)
			}
			for _, l := range a {
				wa, oka, _ := fromDB.LastWrite(id, l.Path, pos)
				wb, okb, _ := rp.LastWrite(id, l.Path, pos)
				if oka != okb || wa != wb {
					t.Fatalf("%s %s at #%d: last write %v/%v vs %v/%v", id, l.Path, pos, wa, oka, wb, okb)
				}
			}
		}
	}
	if _, _, err := rp.State(tr.Nodes[0], 601); err == nil {
		t.Fatal("a state past the replayed steps was served")
	}
}

func sameLeaves(a, b []state.Leaf) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]string{}
	for _, l := range a {
		m[l.Path] = l.Value
	}
	for _, l := range b {
		if v, ok := m[l.Path]; !ok || v != l.Value {
			return false
		}
	}
	return true
}
