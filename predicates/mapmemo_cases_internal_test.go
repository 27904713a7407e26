package predicates

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// ---- a scripted single node: step i of its timer runs steps[i] ----

type Arow struct {
	N int
	S string
}

type Info struct{ X int }

type Vrow struct {
	N     int
	Owner *Info
}

type AID string
type A8 int8
type AU16 uint16

type scripted struct {
	Leader *Arow
	M      map[string]*Arow
	V      map[string]Vrow
	I8     map[A8]*Arow
	U16    map[AU16]Arow
	Named  map[AID]*Arow
	Infos  []*Info
	After  *Arow
	i      int
	steps  []func(*scripted)
}

func (s *scripted) Init(env node.Env)                       { env.After(time.Millisecond, "t") }
func (s *scripted) Receive(node.Env, node.ID, node.Message) {}
func (s *scripted) Timer(env node.Env, _ node.Timer) {
	if s.i < len(s.steps) {
		s.steps[s.i](s)
	}
	s.i++
	env.After(time.Millisecond, "t")
}

// walkedBothOf runs the scripted node's steps and compares both walks of
// its trace under script; it returns the first difference ("" if none).
func walkedBothOf(t *testing.T, steps []func(*scripted), script string) string {
	t.Helper()
	sys := &system.System{Name: "scripted", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &scripted{steps: steps} },
		Sim: system.SimDefaults{Nodes: 1, Steps: len(steps) + 3, Time: time.Hour}}
	var buf bytes.Buffer
	if _, err := sim.Run(sys, sim.DefaultConfig().WithDefaults(sys), &buf); err != nil {
		t.Fatal(err)
	}
	diff, _, _, _ := walkedBoth(t, sys, buf.Bytes(), script)
	return diff
}

func fill(s *scripted, n int) {
	s.M = map[string]*Arow{}
	for i := range n {
		s.M[fmt.Sprintf("k%02d", i)] = &Arow{N: i}
	}
}

// The cases an attack on the map memo broke, each checked with the memo
// against a walk of every entry, under a script that only lists rows and
// one whose report a wrong row changes.
func TestMapMemoCasesOfTheAttack(t *testing.T) {
	const owners = `R = table("predicates.Vrow")
def ok():
    for r in R:
        if r.N < 0 or r.Owner.X != 1:
            return False
    return True
safety("owners", ok)
`
	for _, c := range []struct {
		name    string
		steps   []func(*scripted)
		scripts []string
	}{
		{
			// A pointer walked before the map (Leader) is also an
			// entry: the first memo pass's mark was the walk's own,
			// and it forgot the pointer, which got a second row.
			name: "first pass after a pointer walked before the map",
			steps: []func(*scripted){
				func(s *scripted) { fill(s, 40); s.Leader = s.M["k05"] },
				func(s *scripted) { s.M["k01"].N++ },
				func(s *scripted) { s.M["k02"].N++ },
			},
			scripts: []string{`R = table("predicates.Arow")
safety("one row per object", lambda: len(R) <= 40)
`},
		},
		{
			// The map drops below memoLen (walked whole, the memo
			// left as it was), and a row changes and changes back.
			name: "a map walked whole for a while",
			steps: []func(*scripted){
				func(s *scripted) { fill(s, 32) },
				func(s *scripted) { s.M["k01"].N++ },
				func(s *scripted) { delete(s.M, "k31"); s.M["k00"].N = 100 },
				func(s *scripted) { s.M["k31"] = &Arow{N: 31}; s.M["k00"].N = 0 },
				func(s *scripted) { s.M["k01"].N++ },
			},
			scripts: []string{`R = table("predicates.Arow")
safety("x", lambda: len(R) >= 0)
`, `R = table("predicates.Arow", keep = 2)
safety("never back from 100", lambda: all([not (r.N == 0 and r.prev("N", 0) == 100) for r in R]))
`},
		},
		{
			// A map of values: a pointer column swapped for an equal
			// one, then the old one changed.
			name: "a map of values",
			steps: []func(*scripted){
				func(s *scripted) {
					s.Infos = []*Info{{1}, {1}, {1}}
					s.V = map[string]Vrow{}
					for i := range 40 {
						s.V[fmt.Sprintf("v%02d", i)] = Vrow{N: i, Owner: s.Infos[1]}
					}
					s.V["v00"] = Vrow{N: 0, Owner: s.Infos[0]}
				},
				func(s *scripted) { s.V["v00"] = Vrow{N: 0, Owner: s.Infos[2]} },
				func(s *scripted) { s.Infos[0].X = 7; e := s.V["v01"]; e.N += 100; s.V["v01"] = e },
			},
			scripts: []string{owners},
		},
	} {
		for _, script := range c.scripts {
			if d := walkedBothOf(t, c.steps, script); d != "" {
				t.Errorf("%s: %s", c.name, d)
			}
		}
	}
}
