package predicates

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// mrow is a row kept in maps every way the memo reads them: by pointer
// and by value, under string, 64-bit and 32-bit keys.
type mrow struct {
	N    int
	S    string
	Tags map[string]bool // not a column: changes to it must not matter
}

// mapper changes its maps in every way a map of rows changes: entries
// added, deleted, rewritten in place, replaced by an equal copy, set to
// nil, made to share another entry's pointer (before and after it in
// key order), and whole maps replaced.
type mapper struct {
	ByID    map[int]*mrow
	ByName  map[string]*mrow
	ByValue map[string]mrow
	Small   map[int32]*mrow
	Other   *mrow // a pointer also held by a map entry, walked after the maps
}

func (m *mapper) Init(env node.Env) {
	m.ByID, m.ByName, m.ByValue, m.Small = map[int]*mrow{}, map[string]*mrow{}, map[string]mrow{}, map[int32]*mrow{}
	env.After(time.Millisecond, "edit")
}
func (m *mapper) Receive(node.Env, node.ID, node.Message) {}
func (m *mapper) Timer(env node.Env, _ node.Timer) {
	rng := env.Rand()
	for range 1 + rng.IntN(3) {
		k := rng.IntN(60)
		name := fmt.Sprintf("k%02d", k)
		switch op := rng.IntN(14); op {
		case 0, 1, 2:
			m.ByID[k] = &mrow{N: rng.IntN(100), S: name}
			m.ByName[name] = &mrow{N: rng.IntN(100)}
			m.ByValue[name] = mrow{N: rng.IntN(100)}
			m.Small[int32(k)-30] = &mrow{N: k}
		case 3:
			if r := m.ByID[k]; r != nil {
				r.N++
			}
			if r, ok := m.ByValue[name]; ok {
				r.N++
				m.ByValue[name] = r
			}
		case 4:
			delete(m.ByID, k)
			delete(m.ByName, name)
			delete(m.ByValue, name)
			delete(m.Small, int32(k)-30)
		case 5:
			if r := m.ByID[k]; r != nil {
				c := *r
				m.ByID[k] = &c // an equal row at another address
			}
		case 6:
			m.ByID[k] = nil
			m.ByName[name] = nil
		case 7:
			// Share another entry's pointer, before or after this one.
			j := rng.IntN(60)
			if r := m.ByID[j]; r != nil {
				m.ByID[k] = r
			}
		case 8:
			if r := m.ByName[name]; r != nil {
				r.Tags = map[string]bool{"t": true}
			}
		case 9:
			if rng.IntN(20) == 0 {
				m.ByID = maps.Clone(m.ByID)
			}
		case 10:
			m.Other = m.ByID[k]
		case 11:
			if r := m.Small[int32(k)-30]; r != nil {
				r.S += "x"
			}
		case 12:
			if r := m.ByName[name]; r != nil {
				m.ByID[k] = r // the same object in two maps
			}
		default:
			if rng.IntN(30) == 0 {
				clear(m.ByName)
			}
		}
	}
	env.After(time.Millisecond, "edit")
}

// journalOf lists the rows added to and taken out of tables since the
// tables' epochs were since, in order, and the epochs now.
func journalOf(c *Checker, since []int) (string, []int) {
	var b strings.Builder
	var now []int
	for i, t := range c.tables {
		from := 0
		if i < len(since) {
			from = since[i]
		}
		n := min(t.epoch-from, len(t.journal))
		for _, ch := range t.journal[len(t.journal)-n:] {
			fmt.Fprintf(&b, "%s %d %v; ", ch.rs.key.path, ch.rs.id, ch.added)
		}
		now = append(now, t.epoch)
	}
	return b.String(), now
}

// rowsOf lists every table's rows after a step: key, path and column
// hashes, in a fixed order.
func rowsOf(c *Checker) string {
	var lines []string
	for _, t := range c.tables {
		for k, rs := range t.rows {
			lines = append(lines, fmt.Sprintf("%s %s %s id %d %x %v", t.name, k.node, k.path, rs.id, rs.hash, rs.hist.fields))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// walkedBoth checks a trace of sys twice, with the map memo and walking
// every map entry by entry, and compares after every step the rows added
// and removed (in order), the rows (ids and versions) and the values
// predicates read. It returns the first difference ("" if none), both
// reports' texts, and the most entries the memo held.
func walkedBoth(t *testing.T, sys *system.System, data []byte, script string) (diff, memoReport, wholeReport string, remembered int) {
	t.Helper()
	checkerOf := func(whole bool) (*Checker, *replay.Replayer) {
		tr, err := replay.FromBytes(data, sys.Name+".lz4")
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
	for step := 0; diff == ""; step++ {
		errM, errW := rm.Next(), rw.Next()
		if (errM == nil) != (errW == nil) {
			t.Fatalf("#%d: replays differ: %v, %v", step, errM, errW)
		}
		if errM != nil {
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
		switch a, b, va, vb := rowsOf(memo), rowsOf(whole), valuesOf(memo), valuesOf(whole); {
		case ja != jb:
			diff = fmt.Sprintf("#%d: rows added and removed with the memo: %s\nwalking every entry: %s", step, ja, jb)
		case a != b:
			diff = fmt.Sprintf("#%d: rows with the memo only:\n%s\nwalking every entry only:\n%s", step, diffLines(a, b), diffLines(b, a))
		case va != vb:
			diff = fmt.Sprintf("#%d: values with the memo only:\n%s\nwalking every entry only:\n%s", step, diffLines(va, vb), diffLines(vb, va))
		}
		held := 0
		for _, m := range memo.scan.maps {
			held += len(m.byName) + len(m.byNumber)
		}
		remembered = max(remembered, held)
	}
	var rm1, rm2 bytes.Buffer
	memo.Finish().WriteText(&rm1, 0)
	whole.Finish().WriteText(&rm2, 0)
	if diff == "" && rm1.String() != rm2.String() {
		diff = "the reports differ:\nwith the memo:\n" + rm1.String() + "\nwalking every entry:\n" + rm2.String()
	}
	return diff, rm1.String(), rm2.String(), remembered
}

// valuesOf lists every row with the values predicates read through it.
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

// diffLines lists the lines of a that b lacks.
func diffLines(a, b string) string {
	in := map[string]bool{}
	for _, l := range strings.Split(b, "\n") {
		in[l] = true
	}
	var out []string
	for _, l := range strings.Split(a, "\n") {
		if !in[l] {
			out = append(out, "  "+l)
		}
	}
	return strings.Join(out, "\n")
}

// The map memo passes over entries whose rows are as they were and walks
// the rest: after every one of 3,000 steps that change maps in every
// way, the tables hold exactly the rows of a walk of every entry, and
// the rows changed at each step, in the order they changed, are the
// same.
func TestMapMemoFindsTheRowsOfAWholeWalk(t *testing.T) {
	sys := &system.System{Name: "mapper", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &mapper{} },
		Sim: system.SimDefaults{Nodes: 1, Steps: 3000, Time: time.Hour}}
	var buf bytes.Buffer
	if _, err := sim.Run(sys, sim.DefaultConfig().WithDefaults(sys), &buf); err != nil {
		t.Fatal(err)
	}
	diff, rep, _, remembered := walkedBoth(t, sys, buf.Bytes(), `R = table("predicates.mrow", columns = ["N", "S"])
safety("Rows", lambda: len(R) >= 0)
`)
	if diff != "" {
		t.Fatal(diff)
	}
	if remembered == 0 {
		t.Fatal("no map was remembered: the memo was never tried")
	}
	if !strings.Contains(rep, "Rows") {
		t.Fatalf("report:\n%s", rep)
	}
}
