package raftkv

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/sim"
)

// simulate runs the default scenario and checks raft's safety properties
// after every event with a Go oracle: at most one leader per term, equal
// (index, term) means equal log prefixes, and the maps agree on what every
// node applied.
func simulate(t *testing.T, seed uint64, tweak func(*sim.Config)) ([]byte, map[node.ID]*Node) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Seed = seed
	if tweak != nil {
		tweak(&cfg)
	}
	cfg = cfg.WithDefaults(System)
	leaders := map[uint64]uint64{} // term -> leader
	last := map[node.ID]*Node{}
	cfg.Observe = func(ev *node.Event, in *node.Instance) error {
		h, _ := in.Handler().(*Node)
		if h == nil {
			return nil
		}
		last[ev.Node] = h
		if h.Role == "leader" {
			if l, ok := leaders[h.Term]; ok && l != h.ID {
				return fmt.Errorf("two leaders in term %d: %d and %d", h.Term, l, h.ID)
			}
			leaders[h.Term] = h.ID
		}
		for id, o := range last {
			if id == ev.Node {
				continue
			}
			if err := logsMatch(h, o); err != nil {
				return fmt.Errorf("after %s seq %d: %w", ev.Node, ev.Seq, err)
			}
		}
		return nil
	}
	var buf bytes.Buffer
	if _, err := sim.Run(System, cfg, &buf); err != nil {
		t.Fatal(err)
	}
	if len(leaders) == 0 {
		t.Fatal("no leader was ever elected")
	}
	return buf.Bytes(), last
}

func logsMatch(a, b *Node) error {
	n := min(len(a.Log), len(b.Log))
	for i := n - 1; i >= 0; i-- {
		if a.Log[i].Term == b.Log[i].Term {
			if a.Log[i].Chain != b.Log[i].Chain {
				return fmt.Errorf("logs of %d and %d hold index %d term %d with different prefixes", a.ID, b.ID, i+1, a.Log[i].Term)
			}
			break
		}
	}
	if m := min(a.Applied, b.Applied); m > 0 && a.Log[m-1].Chain != b.Log[m-1].Chain {
		return fmt.Errorf("nodes %d and %d applied different entries up to index %d", a.ID, b.ID, m)
	}
	return nil
}

func TestSimReplicatesWrites(t *testing.T) {
	trace, nodes := simulate(t, 1, nil)
	var ref *Node
	for _, n := range nodes {
		if n.Applied < 100 {
			t.Fatalf("node %d applied only %d entries", n.ID, n.Applied)
		}
		if ref == nil || n.Applied > ref.Applied {
			ref = n
		}
	}
	if len(ref.KV) != 50 {
		t.Fatalf("the most advanced node holds %d keys, want 50", len(ref.KV))
	}
	for _, n := range nodes {
		if n.Applied == ref.Applied && fmt.Sprint(n.KV) != fmt.Sprint(ref.KV) {
			t.Fatalf("nodes %d and %d applied up to %d but their maps differ", n.ID, ref.ID, n.Applied)
		}
	}
	f, err := record.Read(bytes.NewReader(trace), "raftkv.lz4", int64(len(trace)))
	if err != nil {
		t.Fatal(err)
	}
	crypto := 0
	for _, ev := range f.Events {
		for _, nd := range ev.Nondet {
			if nd.Kind == node.NondetCrypto {
				crypto++
			}
		}
	}
	if crypto == 0 {
		t.Fatal("raft's election jitter read no crypto/rand bytes through the runtime")
	}
}

func TestSimDeterministicWithChurn(t *testing.T) {
	churn := func(c *sim.Config) { c.Churn = 0.5; c.Time = 4e9 }
	a, _ := simulate(t, 7, churn)
	b, _ := simulate(t, 7, churn)
	if !bytes.Equal(a, b) {
		t.Fatal("the same seed produced different traces")
	}
	f, err := record.Read(bytes.NewReader(a), "raftkv.lz4", int64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	restarts := 0
	for _, ev := range f.Events {
		if ev.Kind == node.KindRestart {
			restarts++
		}
	}
	if restarts == 0 {
		t.Fatal("churn restarted no node: the restart-from-disk path was not exercised")
	}
}
