package statedb

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/system"
)

type growPut struct{ Key string }

type growEntry struct {
	Index, Term int
	Key         string
}

// grower appends an entry per input: its state grows all along, as a
// replicated log does, and now and then a key is rewritten in place.
type grower struct {
	Log []growEntry
	KV  map[string]int
}

func (g *grower) Init(node.Env)                           {}
func (g *grower) Receive(node.Env, node.ID, node.Message) {}
func (g *grower) Timer(node.Env, node.Timer)              {}
func (g *grower) Input(_ node.Env, m node.Message) {
	k := m.(growPut).Key
	g.Log = append(g.Log, growEntry{Index: len(g.Log) + 1, Term: 1, Key: k})
	g.KV[k]++
	if len(g.Log)%7 == 0 {
		g.Log[len(g.Log)/2].Term++
	}
}

var growSystem = &system.System{
	Name:  "grow",
	Codec: node.NewCodec().MustRegister(growPut{}),
	New:   func(node.ID, system.Config) node.Handler { return &grower{KV: map[string]int{}} },
	Sim:   system.SimDefaults{Nodes: 1, Time: time.Hour},
	Scenario: func(ctl system.Controller) {
		var put func()
		put = func() {
			ctl.Input("n1", growPut{Key: string(rune('a' + ctl.Rand().IntN(26)))})
			ctl.At(ctl.Now()+time.Millisecond, put)
		}
		ctl.At(0, put)
	},
}

// A node whose state grows is checkpointed less often as it grows (about
// 64 of its leaves per delta), not every 64 deltas whatever its size,
// and its state read at any step, many deltas past a checkpoint, is
// still the replayed one.
func TestBigStatesAreCheckpointedBySize(t *testing.T) {
	cfg := sim.DefaultConfig().WithDefaults(growSystem)
	cfg.Seed, cfg.Steps = 1, 6000
	trace := simtest.Record(t, growSystem, cfg, filepath.Join(t.TempDir(), "grow.lz4"))
	reg := system.NewRegistry(growSystem)
	db, _, err := Ensure([]string{trace}, "", Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkpoints := 0
	key := nodeKey(nsSnapshot, "n1")
	for _, p := range db.parts.list {
		bdb, err := p.store()
		if err != nil {
			t.Fatal(err)
		}
		txn := bdb.NewTransactionAt(math.MaxUint64, false)
		opts := badger.DefaultIteratorOptions
		opts.AllVersions, opts.PrefetchValues = true, false
		it := txn.NewIterator(opts)
		for it.Seek(key); it.ValidForPrefix(key); it.Next() {
			if string(it.Item().Key()) == string(key) && !it.Item().IsDeletedOrExpired() {
				checkpoints++
			}
		}
		it.Close()
		txn.Discard()
	}
	// Every 64 deltas would be 6000/64 = 93; by size, 21 while the state
	// is under 4,096 leaves, then (64/3) ln(6000/1365) = 32 more.
	if every := 6000 / SnapshotEvery; checkpoints > every*3/4 || checkpoints < 10 {
		t.Errorf("%d checkpoints of a node's 6,000 deltas, its state growing to 18,000 leaves", checkpoints)
	}
	tr, r := replayerOf(t, trace, reg)
	c, err := replay.NewCursor(r, 100)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range append([]int{0, db.Len() - 1}, rng.Perm(db.Len())[:40]...) {
		if err := c.Seek(s); err != nil {
			t.Fatal(err)
		}
		ns, err := db.State("n1", s)
		if err != nil {
			t.Fatal(err)
		}
		if want := replayedState(c, tr.Header.Start, "n1"); !reflect.DeepEqual(ns.Leaves, want) {
			t.Fatalf("state of n1 at #%d: %d leaves, replay %d", s, len(ns.Leaves), len(want))
		}
	}
	t.Logf("%d checkpoints", checkpoints)
}
