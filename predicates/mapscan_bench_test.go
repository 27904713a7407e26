package predicates_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// ledgerTx is a row kept in a map by key, in the natural style of a
// coordinator's transactions: a pointer to a struct holding a small map.
type ledgerTx struct {
	ID      int
	State   string
	Votes   map[string]bool
	Retries int
}

// ledger keeps every transaction it ever began: each event begins one
// (until it holds Size) or changes one, so the state grows while each
// event touches one row.
type ledger struct {
	Txs  map[int]*ledgerTx
	Size int
}

func (l *ledger) Init(env node.Env) {
	l.Txs = map[int]*ledgerTx{}
	env.After(time.Millisecond, "tick")
}
func (l *ledger) Receive(node.Env, node.ID, node.Message) {}
func (l *ledger) Timer(env node.Env, _ node.Timer) {
	rng := env.Rand()
	if n := len(l.Txs); n < l.Size {
		l.Txs[n] = &ledgerTx{ID: n, State: "prepared", Votes: map[string]bool{"a": true}}
	} else {
		tx := l.Txs[rng.IntN(n)]
		switch rng.IntN(3) {
		case 0:
			tx.Retries++
		case 1:
			tx.Votes["b"] = !tx.Votes["b"]
		default:
			tx.State = []string{"prepared", "committed", "aborted"}[rng.IntN(3)]
		}
	}
	env.After(time.Millisecond, "tick")
}

func ledgerSystem(size, steps int) *system.System {
	return &system.System{Name: "ledger", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &ledger{Size: size} },
		Sim: system.SimDefaults{Nodes: 1, Steps: steps, Time: time.Hour}}
}

func ledgerTrace(tb testing.TB, sys *system.System) []byte {
	tb.Helper()
	cfg := sim.DefaultConfig()
	cfg.NoStateHashes = true
	var buf bytes.Buffer
	if _, err := sim.Run(sys, cfg.WithDefaults(sys), &buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

const ledgerScript = `Tx = table("predicates_test.ledgerTx", columns = ["ID", "State", "Retries"])
safety("FewRetries", lambda: True)
`

// BenchmarkMapOfRows: the checker's cost per step (table refresh) for a
// node keeping 100 and 5,000 transactions in a map, each event changing
// one, in the last half of 20,000 steps.
//
//	go test ./predicates -run='^$' -bench=MapOfRows -benchtime=1x -v
func BenchmarkMapOfRows(b *testing.B) {
	for b.Loop() {
		costs := map[int]time.Duration{}
		for _, size := range []int{100, 5000} {
			sys := ledgerSystem(size, 20_000)
			data := ledgerTrace(b, sys)
			best := time.Duration(1<<63 - 1)
			for range 3 {
				best = min(best, ledgerCost(b, sys, data, 10_000))
			}
			costs[size] = best
		}
		b.Logf("map of rows: %v/step with 100 rows, %v/step with 5,000: %.1fx", costs[100], costs[5000], float64(costs[5000])/float64(costs[100]))
		b.ReportMetric(float64(costs[100].Nanoseconds()), "ns/step@100")
		b.ReportMetric(float64(costs[5000].Nanoseconds()), "ns/step@5000")
	}
	b.ReportMetric(0, "ns/op")
}

// ledgerCost is the checker's time per step (Observe) from step from on.
func ledgerCost(tb testing.TB, sys *system.System, data []byte, from int) time.Duration {
	tb.Helper()
	tr, err := replay.FromBytes(data, "ledger.lz4")
	if err != nil {
		tb.Fatal(err)
	}
	r, err := replay.New(tr, system.NewRegistry(sys), replay.Options{SkipStateHashes: true})
	if err != nil {
		tb.Fatal(err)
	}
	c, err := predicates.LoadSource("ledger.star", []byte(ledgerScript), r, predicates.Options{To: -1})
	if err != nil {
		tb.Fatal(err)
	}
	var spent time.Duration
	n := 0
	for step := 0; r.Next() == nil; step++ {
		start := time.Now()
		if err := c.Observe(); err != nil {
			tb.Fatal(err)
		}
		if step >= from {
			spent += time.Since(start)
			n++
		}
	}
	if err := c.Finish().Err(); err != nil {
		tb.Fatal(err)
	}
	return spent / time.Duration(max(n, 1))
}
