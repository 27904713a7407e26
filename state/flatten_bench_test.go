package state_test

import (
	"fmt"
	"testing"

	"github.com/replaycheck/replaycheck/state"
)

// logEntry and logNode have the shape of a replicated log's node: a
// few scalars, a key-value store it applies to, and a log of entries
// that grows by one at a time.
type logEntry struct {
	Index, Term, Chain uint64
	Req                int
}

type logNode struct {
	Term, Commit uint64
	Role         string
	KV           map[string]string
	Log          []logEntry
}

func logNodeOf(entries, keys int) *logNode {
	n := &logNode{Role: "leader", KV: map[string]string{}}
	for i := range entries {
		n.Log = append(n.Log, logEntry{Index: uint64(i + 1), Term: 2, Chain: uint64(i) * 7919, Req: i})
	}
	for i := range keys {
		n.KV[fmt.Sprintf("k%03d", i)] = fmt.Sprintf("v%d", i)
	}
	return n
}

// BenchmarkFlattenAfterStep flattens a node's state after each of its
// steps, as the trace database's build does (state.Flattener.AppendMemo
// against the flattening before): what indexing pays per step for the
// state alone. Each step changes a little: a log entry appended (taken
// back every 64 steps, so the log keeps its size), a key overwritten
// every fourth step, a round of a Paxos leader's tallies.
func BenchmarkFlattenAfterStep(b *testing.B) {
	for _, c := range []struct {
		name          string
		entries, keys int
	}{{"log=100,kv=50", 100, 50}, {"log=1000,kv=50", 1000, 50}, {"log=10000,kv=50", 10000, 50}} {
		b.Run(c.name, func(b *testing.B) {
			n := logNodeOf(c.entries, c.keys)
			flattenSteps(b, n, func(i int) {
				if i%64 == 63 {
					n.Log = n.Log[:c.entries]
				} else {
					n.Log = append(n.Log, logEntry{Index: uint64(len(n.Log) + 1), Term: 2, Req: i})
				}
				n.Commit++
				if i%4 == 0 { // an entry applied every fourth step
					n.KV[fmt.Sprintf("k%03d", i%c.keys)] = fmt.Sprint("w", i)
				}
			})
		})
	}
	b.Run("paxos-leader", func(b *testing.B) {
		s := &acceptorLike{Round: 7, Value: "x1", Accepts: map[int64]map[string]string{}}
		for r := range int64(8) {
			s.Accepts[r] = map[string]string{}
			for n := range 7 {
				s.Accepts[r][fmt.Sprintf("n%d", n)] = fmt.Sprintf("x%d", r)
			}
		}
		flattenSteps(b, s, func(i int) {
			s.Round++
			s.Accepts[int64(i%8)]["n1"] = fmt.Sprint(i % 5)
		})
	})
}

func flattenSteps(b *testing.B, v any, step func(int)) {
	var f state.Flattener
	var leaves [2][]state.Leaf
	var memos [2]state.Memo
	leaves[0] = f.AppendMemo(nil, v, nil, nil, &memos[0])
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		step(i)
		cur, prev := (i+1)%2, i%2
		leaves[cur] = f.AppendMemo(leaves[cur][:0], v, leaves[prev], &memos[prev], &memos[cur])
		i++
	}
}
