package predicates_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/predicates/internal/dd"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// exactExprs are derived values over the dd system, each read in every
// way the engine tracks: columns, whole rows, node lookups, iteration,
// len, ordered lookups, views, prev/history, since_change, quantifiers.
var exactExprs = []string{
	`[c.V for c in Cell]`,
	`len(Cell)`,
	`Cell["n2"].Name if Cell.get("n2") else "down"`,
	`[(c.node, Cell.get(c.Peer).V if Cell.get(c.Peer) else None) for c in Cell]`,
	`Cell["n1"] if Cell.get("n1") else "down"`,
	`[c.Inner.X for c in Cell]`,
	`[len(c.Items) for c in Cell]`,
	`[c.Nums for c in Cell]`,
	`[(len(c.Nums), c.Nums[-1] if c.Nums else None) for c in ViewCell]`,
	`[list(c.Nums) for c in ViewCell]`,
	`[c.prev("V", -1) for c in Kept]`,
	`[c.history("Name") for c in Kept]`,
	`[now() - since_change(c) for c in Cell]`,
	`[now() - since_change(c, "V") for c in Cell]`,
	`now() - since_change(Cell)`,
	`[r.node for r in ByV]`,
	`[(r.node if r else None) for r in [ByV.ceiling(3), ByV.floor(3), ByV.higher(3), ByV.lower(3), ByV.first(), ByV.last(), ByV.ceiling(9, wrap = True), ByV.floor(-1, wrap = True)]]`,
	`[(k, ByV.ceiling(k).node if ByV.ceiling(k) else None) for k in range(-1, 9)]`,
	`now() - since_change(ByV)`,
	`[r.node for r in ByPeerV]`,
	`forall(Cell, lambda c: c.V < 5)`,
	`count(Cell, lambda c: c.Name == "a")`,
	`exists(Cell, lambda c: forall(Cell, lambda d: d.V <= c.V))`,
	`forall(Cell, lambda c: Cell.get(c.Peer) == None or Cell.get(c.Peer).V >= 0 and len(Cell.get(c.Peer).Nums) < 4)`,
	// Settling: a value whose quantifiers' bodies re-ran is not re-run
	// when they answer as before. A call site called in a loop, or with
	// a body capturing another quantifier's answer, must still be exact.
	`forall(Cell, lambda c: forall(Cell, lambda d: c == d or c.V != d.V or c.V == 0))`,
	`count(Cell, lambda c: exists(Cell, lambda d: d.Peer == c.node and d.V > 0))`,
	`[forall(Cell, lambda c: c.V < k) for k in range(4)]`,
	`(lambda x: forall(Cell, lambda c: c.V != x))(count(Cell, lambda c: c.V > 1))`,
}

// TestIncrementalIsExact checks, over random runs, that every derived
// value computed incrementally (re-run only when something it read
// changed) equals the same expression evaluated afresh at every step. A
// read the engine failed to track leaves a stale value and fails here.
func TestIncrementalIsExact(t *testing.T) {
	var script strings.Builder
	script.WriteString(`Cell = table("dd.Cell")
ViewCell = table("dd.Cell", columns = ["Nums"], views = ["Nums"])
Kept = table("dd.Cell", columns = ["V", "Name"], keep = 3)
ByV = ordered("byv", Cell, by = lambda c: c.V if c.V != 0 else None)
ByPeerV = ordered("bypeerv", Cell, by = lambda c: (Cell.get(c.Peer).V, c.node) if Cell.get(c.Peer) else None)
`)
	for i, e := range exactExprs {
		fmt.Fprintf(&script, "derived(\"inc%d\", lambda: %s)\n", i, e)
		// event.step changes at every step: this one is never memoised.
		fmt.Fprintf(&script, "derived(\"fresh%d\", lambda: (event.step, %s))\n", i, e)
	}
	script.WriteString("safety(\"Placeholder\", lambda: True)\n")
	path := filepath.Join(t.TempDir(), "exact.star")
	if err := os.WriteFile(path, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := 30
	if testing.Short() {
		runs = 8
	}
	for seed := range uint64(runs) {
		trace := randomDDRun(t, seed)
		r, err := replay.New(trace, system.NewRegistry(dd.System), replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := predicates.Load(path, r, predicates.Options{To: -1})
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() == nil {
			if err := c.Observe(); err != nil {
				t.Fatal(err)
			}
			vals := map[string]string{}
			for _, d := range c.DerivedValues() {
				vals[d.Name()] = d.Value().String()
			}
			for i, e := range exactExprs {
				inc := vals[fmt.Sprintf("inc%d", i)]
				fresh := vals[fmt.Sprintf("fresh%d", i)]
				want := strings.TrimSuffix(fresh[strings.Index(fresh, ", ")+2:], ")")
				if inc != want {
					t.Fatalf("seed %d step #%d (%s %s): %s\n  incremental: %s\n  afresh:      %s",
						seed, r.Pos(), r.Recorded().Node, r.Recorded().Kind, e, inc, want)
				}
			}
		}
		if err := c.Finish().Err(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// randomDDRun simulates 4 dd nodes taking 80 random inputs, crashes and
// restarts.
func randomDDRun(t *testing.T, seed uint64) *replay.Trace {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	ids := []node.ID{"n1", "n2", "n3", "n4"}
	type op struct {
		at   time.Duration
		id   node.ID
		op   string
		args []string
	}
	var ops []op
	down := map[node.ID]bool{}
	nums := map[node.ID]int{}
	for i := range 80 {
		at := time.Duration(i+1) * time.Millisecond
		id := ids[rng.IntN(len(ids))]
		if down[id] {
			ops = append(ops, op{at, id, "restart", nil})
			down[id], nums[id] = false, 0
			continue
		}
		n := func(k int) string { return fmt.Sprint(rng.IntN(k)) }
		var o op
		switch rng.IntN(10) {
		case 0:
			o = op{at, id, "set", []string{"V", n(8)}}
		case 1:
			o = op{at, id, "set", []string{"Name", []string{"a", "b", ""}[rng.IntN(3)]}}
		case 2:
			o = op{at, id, "set", []string{"Peer", string(ids[rng.IntN(len(ids))])}}
		case 3:
			o = op{at, id, "set", []string{"X", n(3)}}
		case 4:
			o = op{at, id, "push", []string{n(5)}}
			nums[id]++
		case 5:
			if nums[id] == 0 {
				continue
			}
			o = op{at, id, "poke", []string{fmt.Sprint(rng.IntN(nums[id])), n(5)}}
		case 6:
			if nums[id] == 0 {
				continue
			}
			k := rng.IntN(nums[id])
			o = op{at, id, "trunc", []string{fmt.Sprint(k)}}
			nums[id] = k
		case 7:
			o = op{at, id, "add", []string{"k" + n(3), n(5)}}
		case 8:
			o = op{at, id, "set", []string{"Hidden", n(5)}}
		case 9:
			o = op{at, id, "crash", nil}
			down[id] = true
		}
		ops = append(ops, o)
	}
	sys := *dd.System
	sys.Scenario = func(ctl system.Controller) {
		for _, o := range ops {
			ctl.At(o.at, func() {
				switch o.op {
				case "crash":
					ctl.Crash(o.id)
				case "restart":
					ctl.Restart(o.id)
				default:
					ctl.Input(o.id, dd.Cmd{Op: o.op, Args: o.args})
				}
			})
		}
	}
	cfg := sim.Config{Seed: 1, Nodes: len(ids), Time: 200 * time.Millisecond, Drop: 0, Dup: 0, Churn: 0}
	var buf bytes.Buffer
	if _, err := sim.Run(&sys, cfg.WithDefaults(&sys), &buf); err != nil {
		t.Fatal(err)
	}
	tr, err := replay.FromBytes(buf.Bytes(), "dd.lz4")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
