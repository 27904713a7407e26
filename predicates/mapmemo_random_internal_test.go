package predicates

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

type Frow struct {
	N    int
	S    string
	Tags []int
}

type Grow struct{ K int }

type fuzzer struct {
	Leader *Frow
	P      map[string]*Frow
	I8     map[A8]*Frow
	U16    map[AU16]Frow
	Named  map[AID]*Frow
	unexp  map[int]*Frow
	Nested map[string]map[int64]*Frow
	G      *Grow
	Other  *Frow
	pool   []*Frow
}

func (f *fuzzer) Init(env node.Env) {
	f.P, f.I8, f.U16, f.Named, f.unexp = map[string]*Frow{}, map[A8]*Frow{}, map[AU16]Frow{}, map[AID]*Frow{}, map[int]*Frow{}
	f.Nested = map[string]map[int64]*Frow{"a": {}, "b": {}}
	f.G = &Grow{}
	env.After(time.Millisecond, "t")
}
func (f *fuzzer) Receive(node.Env, node.ID, node.Message) {}
func (f *fuzzer) Timer(env node.Env, _ node.Timer) {
	rng := env.Rand()
	newRow := func() *Frow {
		if len(f.pool) > 0 && rng.IntN(3) == 0 {
			return f.pool[rng.IntN(len(f.pool))]
		}
		r := &Frow{N: rng.IntN(4), S: fmt.Sprint(rng.IntN(3))}
		if rng.IntN(3) == 0 {
			r.Tags = []int{rng.IntN(2)}
		}
		f.pool = append(f.pool, r)
		if len(f.pool) > 200 {
			f.pool = f.pool[1:]
		}
		return r
	}
	anyRow := func() *Frow {
		if len(f.pool) == 0 {
			return nil
		}
		return f.pool[rng.IntN(len(f.pool))]
	}
	for range 1 + rng.IntN(6) {
		k := rng.IntN(40)
		name := fmt.Sprintf("k%02d", k)
		op := rng.IntN(22)
		switch op {
		case 0, 1, 2:
			f.P[name] = newRow()
			f.I8[A8(k-20)] = newRow()
			f.U16[AU16(k*1000)] = Frow{N: rng.IntN(4)}
			f.Named[AID(name)] = newRow()
			f.unexp[k-20] = newRow()
			f.Nested["a"][int64(k)-20] = newRow()
		case 3:
			if r := anyRow(); r != nil {
				r.N = rng.IntN(4)
			}
		case 4:
			if r := anyRow(); r != nil {
				r.Tags = append(r.Tags, 1)
			}
		case 5:
			delete(f.P, name)
			delete(f.I8, A8(k-20))
			delete(f.U16, AU16(k*1000))
			delete(f.Named, AID(name))
			delete(f.unexp, k-20)
		case 6:
			if r := f.P[name]; r != nil {
				c := *r
				f.P[name] = &c
			}
			if r, ok := f.U16[AU16(k*1000)]; ok {
				f.U16[AU16(k*1000)] = Frow{N: r.N, S: r.S, Tags: r.Tags}
			}
		case 7:
			f.P[name] = nil
			f.I8[A8(k-20)] = nil
		case 8:
			f.Leader = anyRow()
		case 9:
			f.Other = anyRow()
		case 10:
			if rng.IntN(10) == 0 {
				f.P = maps.Clone(f.P)
			}
		case 11:
			// shrink around memoLen
			for _, key := range slices.Sorted(maps.Keys(f.P)) {
				if len(f.P) <= 30 {
					break
				}
				delete(f.P, key)
			}
		case 12:
			f.Nested["b"] = f.Nested["a"] // map aliasing
		case 13:
			f.Nested["b"] = maps.Clone(f.Nested["a"])
		case 14:
			if r, ok := f.U16[AU16(k*1000)]; ok {
				r.N = rng.IntN(4)
				f.U16[AU16(k*1000)] = r
			}
		case 15:
			f.G.K = rng.IntN(3)
		case 16:
			if rng.IntN(15) == 0 {
				clear(f.Named)
			}
		case 17:
			if r := anyRow(); r != nil {
				f.Named[AID(name)] = r
				f.unexp[k-20] = r
			}
		case 18:
			if r := f.unexp[k-20]; r != nil {
				r.S += "x"
			}
		case 19:
			f.Nested = map[string]map[int64]*Frow{"a": f.Nested["b"], "b": f.Nested["a"]}
		case 20:
			if rng.IntN(8) == 0 {
				*f = fuzzer{pool: f.pool, G: f.G, Leader: f.Leader}
				f.P, f.I8, f.U16, f.Named, f.unexp = map[string]*Frow{}, map[A8]*Frow{}, map[AU16]Frow{}, map[AID]*Frow{}, map[int]*Frow{}
				f.Nested = map[string]map[int64]*Frow{"a": {}, "b": {}}
			}
		default:
			f.I8[A8(k-20)] = f.P[name]
		}
	}
	env.After(time.Millisecond, "t")
}

// Random edits of maps of rows every way (aliasing, nil, equal copies,
// maps swapped and replaced, keys of named and narrow types, crashes):
// after every step the memo's rows, ids, journal and the values
// predicates read equal a walk of every entry, and so do the reports.
func TestMapMemoAgreesWithAWholeWalkAtRandom(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	remembered := 0
	for _, seed := range seeds {
		remembered += fuzzOnce(t, seed, seed == 3)
	}
	if remembered == 0 {
		t.Fatal("no map was remembered: the memo was never tried")
	}
}

// fuzzOnce compares both walks on one seed's run (with churn: crashes
// and restarts) and returns the most entries the memo held.
func fuzzOnce(t *testing.T, seed uint64, churn bool) int {
	sys := &system.System{Name: "fuzzer", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &fuzzer{} },
		Sim: system.SimDefaults{Nodes: 1, Steps: 1500, Time: time.Hour}}
	var buf bytes.Buffer
	cfg := sim.DefaultConfig().WithDefaults(sys)
	cfg.Seed = seed
	if churn {
		cfg.Churn = 20
		cfg.MaxDown = 1
	}
	if _, err := sim.Run(sys, cfg, &buf); err != nil {
		t.Fatal(err)
	}
	const script = `R = table("predicates.Frow", columns = ["N"], keep = 3)
A = table("predicates.Frow")
G = table("predicates.Grow")
safety("few", lambda: len(R) < 150)
safety("nprev", lambda: all([r.prev("N", 0) <= r.N + 3 for r in R]))
safety("tags", lambda: all([len(a.Tags) < 20 and a.S != "2xxx" for a in A]))
`
	diff, _, _, remembered := walkedBoth(t, sys, buf.Bytes(), script)
	if diff != "" {
		t.Fatalf("seed %d: %s", seed, diff)
	}
	return remembered
}
