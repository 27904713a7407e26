package predicates

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
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

// valuesOf dumps every row with the values a predicate would read
// through rs.v (not only hashes).
func valuesOf(c *Checker) string {
	var lines []string
	for _, t := range c.tables {
		for k, rs := range t.rows {
			var vals []string
			for _, f := range t.columnsOf(rs.v.Type()) {
				vals = append(vals, f.Name+"="+toStarlark(rs.v.Field(f.Index), c.start).String())
			}
			lines = append(lines, fmt.Sprintf("%s %s %s %v", t.name, k.node, k.path, vals))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func runBoth(t *testing.T, steps []func(*scripted), script string) (string, string) {
	t.Helper()
	sys := &system.System{Name: "scripted", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &scripted{steps: steps} },
		Sim: system.SimDefaults{Nodes: 1, Steps: len(steps) + 3, Time: time.Hour}}
	var buf bytes.Buffer
	if _, err := sim.Run(sys, sim.DefaultConfig().WithDefaults(sys), &buf); err != nil {
		t.Fatal(err)
	}
	checkerOf := func(whole bool) (*Checker, *replay.Replayer) {
		tr, err := replay.FromBytes(buf.Bytes(), "s.lz4")
		if err != nil {
			t.Fatal(err)
		}
		r, err := replay.New(tr, system.NewRegistry(sys), replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := LoadSource("m.star", []byte(script), r, Options{To: -1})
		if err != nil {
			t.Fatal(err)
		}
		c.scan.wholeMaps = whole
		return c, r
	}
	memo, rm := checkerOf(false)
	whole, rw := checkerOf(true)
	var epochM, epochW []int
	var first string
	for step := 0; ; step++ {
		errM, errW := rm.Next(), rw.Next()
		if errM != nil || errW != nil {
			break
		}
		if err := memo.Observe(); err != nil {
			t.Fatal(err)
		}
		if err := whole.Observe(); err != nil {
			t.Fatal(err)
		}
		ja, ea := journalOf(memo, epochM)
		jb, eb := journalOf(whole, epochW)
		epochM, epochW = ea, eb
		if ja != jb && first == "" {
			first = fmt.Sprintf("#%d: journal with memo: %s\nwhole: %s", step, ja, jb)
		}
		if a, b := rowsOf(memo), rowsOf(whole); a != b && first == "" {
			first = fmt.Sprintf("#%d: rows with memo:\n%s\nwhole:\n%s", step, diffLines(a, b), diffLines(b, a))
		}
		if a, b := valuesOf(memo), valuesOf(whole); a != b && first == "" {
			first = fmt.Sprintf("#%d: values with memo:\n%s\nwhole:\n%s", step, diffLines(a, b), diffLines(b, a))
		}
	}
	var rb1, rb2 bytes.Buffer
	r1, r2 := memo.Finish(), whole.Finish()
	r1.WriteText(&rb1, 0)
	r2.WriteText(&rb2, 0)
	if rb1.String() != rb2.String() {
		first += "\nREPORTS DIFFER:\nmemo:\n" + rb1.String() + "\nwhole:\n" + rb2.String()
	}
	return first, rb1.String()
}

func diffLines(a, b string) string {
	bs := map[string]bool{}
	for _, l := range strings.Split(b, "\n") {
		bs[l] = true
	}
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if !bs[l] {
			out = append(out, "  "+l)
		}
	}
	return strings.Join(out, "\n")
}

func fill(s *scripted, n int) {
	s.M = map[string]*Arow{}
	for i := range n {
		s.M[fmt.Sprintf("k%02d", i)] = &Arow{N: i}
	}
}

// 1. A pointer walked before the map (Leader) is also a map entry: at the
// very first memo pass the mark is 1, the same value as "walked".
func TestMapMemoFirstPassLeavesAPointerWalkedBefore(t *testing.T) {
	steps := []func(*scripted){
		func(s *scripted) { fill(s, 40); s.Leader = s.M["k05"] },
		func(s *scripted) { s.M["k01"].N++ },
		func(s *scripted) { s.M["k02"].N++ },
	}
	if d, _ := runBoth(t, steps, `R = table("predicates.Arow")
safety("x", lambda: len(R) >= 0)
`); d != "" {
		t.Fatal(d)
	}
}

// 2. The map drops below memoLen for a while (walked whole, memo not
// updated), a row changes and changes back.
func TestMapMemoIsForgottenWhileTheMapIsWalkedWhole(t *testing.T) {
	steps := []func(*scripted){
		func(s *scripted) { fill(s, 32) },
		func(s *scripted) { s.M["k01"].N++ },
		func(s *scripted) { delete(s.M, "k31"); s.M["k00"].N = 100 },
		func(s *scripted) { s.M["k31"] = &Arow{N: 31}; s.M["k00"].N = 0 },
		func(s *scripted) { s.M["k01"].N++ },
	}
	if d, _ := runBoth(t, steps, `R = table("predicates.Arow")
safety("x", lambda: len(R) >= 0)
`); d != "" {
		t.Fatal(d)
	}
}

// 3. Value map: pointer column replaced by an equal-content other
// pointer; the old pointee then changes.
func TestMapOfValuesIsReadFromFreshCopies(t *testing.T) {
	steps := []func(*scripted){
		func(s *scripted) {
			s.Infos = []*Info{{1}, {1}}
			s.V = map[string]Vrow{}
			for i := range 40 {
				s.V[fmt.Sprintf("v%02d", i)] = Vrow{N: i, Owner: s.Infos[0]}
			}
		},
		func(s *scripted) { s.V["v00"] = Vrow{N: 0, Owner: s.Infos[1]} },
		func(s *scripted) { s.Infos[0].X = 7; s.V["v01"] = Vrow{N: 1, Owner: s.Infos[1]} },
		func(s *scripted) { s.V["v02"] = Vrow{N: 2, Owner: s.Infos[1]} },
	}
	if d, _ := runBoth(t, steps, `R = table("predicates.Vrow")
def ok():
    for r in R:
        if r.N < 0 or r.Owner.X != 1:
            return False
    return True
safety("owners", ok)
`); d != "" {
		t.Fatal(d)
	}
}

func TestMapMemoFirstPassReport(t *testing.T) {
	steps := []func(*scripted){
		func(s *scripted) { fill(s, 40); s.Leader = s.M["k05"] },
		func(s *scripted) { s.M["k01"].N++ },
	}
	d, rep := runBoth(t, steps, `R = table("predicates.Arow")
safety("one row per object", lambda: len(R) <= 40)
`)
	t.Log(rep)
	if d != "" {
		t.Fatal(d)
	}
}

func TestMapMemoShrinkAndGrowReport(t *testing.T) {
	steps := []func(*scripted){
		func(s *scripted) { fill(s, 32) },
		func(s *scripted) { s.M["k01"].N++ },
		func(s *scripted) { delete(s.M, "k31"); s.M["k00"].N = 100 },
		func(s *scripted) { s.M["k31"] = &Arow{N: 31}; s.M["k00"].N = 0 },
		func(s *scripted) { s.M["k01"].N++ },
	}
	d, rep := runBoth(t, steps, `R = table("predicates.Arow", keep = 2)
safety("never back from 100", lambda: all([not (r.N == 0 and r.prev("N", 0) == 100) for r in R]))
`)
	t.Log(rep)
	if d != "" {
		t.Fatal(d)
	}
}

func TestMapOfValuesReport(t *testing.T) {
	steps := []func(*scripted){
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
	}
	d, rep := runBoth(t, steps, `R = table("predicates.Vrow")
def ok():
    for r in R:
        if r.N < 0 or r.Owner.X != 1:
            return False
    return True
safety("owners", ok)
`)
	t.Log(rep)
	if d != "" {
		t.Fatal(d)
	}
}
