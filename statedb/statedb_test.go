package statedb

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/scripts"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/system"
)

var registry = system.NewRegistry(paxos.System)

// simulate records a paxos run into dir and returns the trace's path.
func simulate(t testing.TB, dir, name, bug string, seed uint64, mutate func(*sim.Config)) string {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug = seed, bug
	cfg = cfg.WithDefaults(paxos.System)
	if mutate != nil {
		mutate(&cfg)
	}
	return simtest.Record(t, paxos.System, cfg, filepath.Join(dir, name))
}

// demo is the paxos demo run: latest-response at seed 21, where
// GlobalConsistency breaks at step #269.
func demo(t testing.TB) (trace, script string) {
	t.Helper()
	dir := t.TempDir()
	trace = simulate(t, dir, "demo.lz4", "latest-response", 21, nil)
	src, err := scripts.FS.ReadFile("paxos.star")
	if err != nil {
		t.Fatal(err)
	}
	script = filepath.Join(dir, "paxos.star")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return trace, script
}

func ensure(t *testing.T, traces []string, opts Options) (*DB, *Opened) {
	t.Helper()
	opts.Registry = registry
	db, res, err := Ensure(traces, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, res
}

// replayerOf loads trace and readies its replay from the start.
func replayerOf(t *testing.T, trace string, reg *system.Registry) (*replay.Trace, *replay.Replayer) {
	t.Helper()
	tr, err := replay.Load(trace)
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(tr, reg, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr, r
}

// replayedState is the state the database should hold for a node at a
// cursor's position.
func replayedState(c *replay.Cursor, start int64, id node.ID) []state.Leaf {
	inst := c.Replayer().Instance(id)
	if inst == nil || inst.Seq() == 0 {
		return nil
	}
	return Leaves(inst, start)
}

func TestStateMatchesReplayAtRandomSteps(t *testing.T) {
	trace, script := demo(t)
	db, res := ensure(t, []string{trace}, Options{Preds: script})
	if !res.Built {
		t.Fatal("first Ensure did not build")
	}
	tr, r := replayerOf(t, trace, registry)
	c, err := replay.NewCursor(r, 100)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	steps := []int{-1, 0, 1, db.Len() - 1, 269}
	for range 60 {
		steps = append(steps, rng.IntN(db.Len()))
	}
	for _, s := range steps {
		if err := c.Seek(s); err != nil {
			t.Fatal(err)
		}
		for _, id := range db.Nodes() {
			ns, err := db.State(id, s)
			if err != nil {
				t.Fatal(err)
			}
			want := replayedState(c, tr.Header.Start, id)
			if !reflect.DeepEqual(ns.Leaves, want) {
				t.Fatalf("state of %s at #%d:\n db:     %v\n replay: %v", id, s, ns.Leaves, want)
			}
		}
		if s < 0 {
			continue
		}
		// The fields the step changed are exactly those that differ from
		// the node's state one step earlier.
		id := tr.Event(s).Node
		before, _ := db.State(id, s-1)
		now, _ := db.State(id, s)
		var want []string
		for _, ch := range state.Diff(before.Leaves, now.Leaves) {
			want = append(want, ch.Path)
		}
		var got []string
		for p := range now.Changed {
			got = append(got, p)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("#%d changed %v, want %v", s, got, want)
		}
	}
}

// sameStory compares a stored line with the recorded event's rendering up
// to its effects: the database renders the replayed event, whose sends
// carry payloads the trace lacks (lost messages show their fields).
func sameStory(stored, recorded string) bool {
	a, _, _ := strings.Cut(stored, " -> ")
	b, _, _ := strings.Cut(recorded, " -> ")
	return a == b
}

func TestStepIndex(t *testing.T) {
	trace, _ := demo(t)
	db, _ := ensure(t, []string{trace}, Options{})
	tr, err := replay.Load(trace)
	if err != nil {
		t.Fatal(err)
	}
	if db.Len() != tr.Len() || !slices.Equal(db.Nodes(), tr.Nodes) {
		t.Fatalf("meta: %d steps, nodes %v", db.Len(), db.Nodes())
	}
	rd := replay.NewRenderer(tr, paxos.System.Codec)
	n := 0
	err = db.Steps(0, db.Len()-1, func(s *Step) bool {
		ev := tr.Event(s.Step)
		if s.Step != n || s.Node != ev.Node || s.Seq != ev.Seq || s.Lamport != ev.Lamport || s.Kind != ev.Kind || !sameStory(s.Line, rd.Line(s.Step, ev)) {
			t.Fatalf("step %d: %+v, want event %+v", n, s, ev)
		}
		if send, ok := tr.SendStep(ev); ok != (s.SendStep >= 0) || ok && send != s.SendStep {
			t.Fatalf("#%d: send step %d", s.Step, s.SendStep)
		}
		for i, snd := range s.Sends {
			if !slices.Equal(snd.Receipts, tr.Receipts(ev.SentMsg(i))) {
				t.Fatalf("#%d send %d: receipts %v", s.Step, i, snd.Receipts)
			}
			// Every message is shown with its fields, lost ones too.
			if strings.Contains(s.Line, snd.Type+" to") {
				t.Fatalf("#%d: a send shown without its fields: %s", s.Step, s.Line)
			}
		}
		// The node's neighbouring steps, found by walking the trace.
		prev, next := -1, -1
		for p := s.Step - 1; p >= 0; p-- {
			if tr.Event(p).Node == ev.Node {
				prev = p
				break
			}
		}
		for q := s.Step + 1; q < tr.Len(); q++ {
			if tr.Event(q).Node == ev.Node {
				next = q
				break
			}
		}
		if s.PrevOnNode != prev || s.NextOnNode != next {
			t.Fatalf("#%d: previous and next steps on the node #%d, #%d; want #%d, #%d", s.Step, s.PrevOnNode, s.NextOnNode, prev, next)
		}
		n++
		return true
	})
	if err != nil || n != tr.Len() {
		t.Fatalf("iterated %d steps: %v", n, err)
	}
	// Backwards, and stopping early.
	var back []int
	db.Steps(10, 5, func(s *Step) bool { back = append(back, s.Step); return s.Step > 7 })
	if !slices.Equal(back, []int{10, 9, 8, 7}) {
		t.Fatalf("backwards: %v", back)
	}
	// Log lines are the replay's.
	s, err := db.Step(260)
	if err != nil || !strings.Contains(strings.Join(s.Logs, "\n"), "begin") {
		t.Fatalf("#260 logs: %v %v", s, err)
	}
}

func TestFieldHistoryIsEveryChange(t *testing.T) {
	trace, _ := demo(t)
	db, _ := ensure(t, []string{trace}, Options{})
	// Walk the states one step at a time and collect each change of a
	// few fields; History must list exactly those.
	id := node.ID("n5")
	fields := []string{"Leader.Round", "Leader.Lasts[0].From", "Agent.AcceptedValue", StatusPath}
	want := map[string][]Version{}
	prev := map[string]string{}
	had := map[string]bool{}
	for s := 0; s < db.Len(); s++ {
		ns, err := db.State(id, s)
		if err != nil {
			t.Fatal(err)
		}
		cur := map[string]string{}
		for _, l := range ns.Leaves {
			cur[l.Path] = l.Value
		}
		for _, f := range fields {
			v, ok := cur[f]
			switch {
			case ok && (!had[f] || v != prev[f]):
				want[f] = append(want[f], Version{Step: s, Value: v})
			case !ok && had[f]:
				want[f] = append(want[f], Version{Step: s, Removed: true})
			}
			prev[f], had[f] = v, ok
		}
	}
	for _, f := range fields {
		got, err := db.History(id, f, db.Len()-1, 1<<20, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(want[f]) < 2 || !reflect.DeepEqual(got, want[f]) {
			t.Fatalf("history of %s:\n got  %v\n want %v", f, got, want[f])
		}
		// A window around a middle step: the versions before and after it.
		mid := want[f][len(want[f])/2].Step
		got, err = db.History(id, f, mid, 2, 2)
		if err != nil {
			t.Fatal(err)
		}
		i := len(want[f]) / 2
		if !reflect.DeepEqual(got, want[f][max(0, i-1):min(len(want[f]), i+3)]) {
			t.Fatalf("history of %s around #%d: %v", f, mid, got)
		}
	}
}

func TestPredicateResults(t *testing.T) {
	trace, script := demo(t)
	db, _ := ensure(t, []string{trace}, Options{Preds: script})
	p := db.Predicates()
	if p == nil || len(p.Violations) != 1 || p.Violations[0].Predicate != "GlobalConsistency" || p.Violations[0].Step != 269 ||
		!strings.Contains(p.Violations[0].Aux, `"x5", "x7"`) || len(p.Declared) != 2 {
		t.Fatalf("predicate results: %+v", p)
	}
	step, flips, ok, err := db.NextFlip(0, true)
	if err != nil || !ok || step != 269 || len(flips) != 1 || flips[0].Predicate != "GlobalConsistency" || flips[0].Holds {
		t.Fatalf("next flip after #0: %d %+v %v %v", step, flips, ok, err)
	}
	// decision keeps 10 versions: once x5 falls out of its history, the
	// predicate holds again.
	back, flips, ok, _ := db.NextFlip(269, true)
	if !ok || back <= 269 || !flips[0].Holds {
		t.Fatalf("next flip after #269: %d %+v %v", back, flips, ok)
	}
	if step, _, ok, _ := db.NextFlip(back, false); !ok || step != 269 {
		t.Fatalf("previous flip from #%d: %d %v", back, step, ok)
	}
	if _, _, ok, _ := db.NextFlip(269, false); ok {
		t.Fatal("a flip before #269")
	}

	// A changed script is re-checked on the next open; the same script is not.
	db.Close()
	src, _ := os.ReadFile(script)
	edited := strings.Replace(string(src), "len(set(decisions())) <= 1", "len(set(decisions())) <= 2", 1)
	if err := os.WriteFile(script, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	db2, res := ensure(t, []string{trace}, Options{Preds: script})
	if res.Built || !res.Checked {
		t.Fatalf("after editing the script: %+v", res)
	}
	if p := db2.Predicates(); len(p.Violations) != 0 {
		t.Fatalf("relaxed predicate still violated: %+v", p.Violations)
	}
	if _, _, ok, _ := db2.NextFlip(0, true); ok {
		t.Fatal("flips of the old results survived")
	}
	db2.Close()
	db3, res := ensure(t, []string{trace}, Options{Preds: script})
	if res.Built || res.Checked || len(db3.Predicates().Violations) != 0 {
		t.Fatalf("reopening with the same script: %+v", res)
	}
}

func TestRebuiltWhenTheTraceChanges(t *testing.T) {
	dir := t.TempDir()
	trace := simulate(t, dir, "t.lz4", "none", 3, nil)
	db, res := ensure(t, []string{trace}, Options{})
	if !res.Built || db.Dir() != trace+".db" {
		t.Fatalf("first open: %+v at %s", res, db.Dir())
	}
	n := db.Len()
	db.Close()
	db1, res := ensure(t, []string{trace}, Options{})
	if res.Built || res.Trace != nil {
		t.Fatalf("reopening an up-to-date database rebuilt it or loaded the trace: %+v", res)
	}
	db1.Close()
	simulate(t, dir, "t.lz4", "none", 4, nil) // same name, another run
	db2, res := ensure(t, []string{trace}, Options{})
	if !res.Built || db2.Len() == n && db2.Meta().Fingerprint == db.Meta().Fingerprint {
		t.Fatalf("a changed trace was not reindexed: %+v", res)
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, ".*partial*")); len(entries) != 0 {
		t.Fatalf("partial databases left: %v", entries)
	}
}

func TestFailedBuildLeavesNoDatabase(t *testing.T) {
	dir := t.TempDir()
	trace := simulate(t, dir, "t.lz4", "latest-response", 21, nil)
	// A binary whose paxos is not the recorded one: replay diverges.
	changed := *paxos.System
	changed.New = func(id node.ID, cfg system.Config) node.Handler {
		cfg.Bug = "none"
		return paxos.New(id, cfg)
	}
	_, _, err := Ensure([]string{trace}, "", Options{Registry: system.NewRegistry(&changed)})
	if !IsDivergence(err) {
		t.Fatalf("build with a diverging replay: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("a failed build left files: %v", entries)
	}
	// A stopped build (Ctrl-C) keeps nothing either.
	_, _, err = Ensure([]string{trace}, "", Options{Registry: registry, Stop: func() bool { return true }})
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("a stopped build: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("a stopped build left files: %v", entries)
	}
	// A directory that is not a database is never replaced.
	other := filepath.Join(dir, "other.db")
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "precious"), []byte("x"), 0o644)
	if _, _, err := Ensure([]string{trace}, other, Options{Registry: registry}); err == nil || !strings.Contains(err.Error(), "not a trace database") {
		t.Fatalf("Ensure into a foreign directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "precious")); err != nil {
		t.Fatal("a foreign directory was touched")
	}
}

func TestUnknownStateAfterATruncatedRecording(t *testing.T) {
	dir := t.TempDir()
	full := simulate(t, dir, "full.lz4", "none", 2, func(c *sim.Config) { c.Time = 30 * time.Second })
	data, _ := os.ReadFile(full)
	cut := filepath.Join(dir, "cut.lz4")
	os.WriteFile(cut, data[:len(data)*2/3], 0o644)
	db, _ := ensure(t, []string{cut}, Options{})
	tr, err := replay.Load(cut)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, id := range tr.Nodes {
		for _, u := range tr.Unknown[id] {
			if u.After+1 >= db.Len() {
				continue // the node's last event is the last step
			}
			found = true
			ns, err := db.State(id, u.After+1)
			if err != nil || ns.Unknown == "" || ns.Leaves != nil {
				t.Fatalf("%s after #%d: %+v %v", id, u.After, ns, err)
			}
			if ns, _ := db.State(id, u.After); ns.Unknown != "" || len(ns.Leaves) == 0 {
				t.Fatalf("%s at its last recorded step #%d: %+v", id, u.After, ns)
			}
		}
	}
	if !found {
		t.Fatalf("the cut left no node with unknown state: %+v", tr.Unknown)
	}
}

func TestSeveralFilesNameTheirDatabase(t *testing.T) {
	a := PathFor([]string{"x/n1.lz4", "x/n2.lz4"})
	b := PathFor([]string{"x/n1.lz4", "x/n3.lz4"})
	if !strings.HasPrefix(a, "x/n1.lz4+1.") || !strings.HasSuffix(a, ".db") || a == b {
		t.Fatalf("names: %s %s", a, b)
	}
	// Given in another order, the same set names the same database: it
	// named one beside the first file given, so `history 3 2 1` built
	// again (17 minutes) what `history 1 2 3` had built.
	if c := PathFor([]string{"x/n2.lz4", "x/n1.lz4"}); c != a {
		t.Fatalf("the set named %s given backwards, %s in order", c, a)
	}
}
