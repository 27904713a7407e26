package replay_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/system"
)

// simulate runs sys and returns the merged trace of the run.
func simulate(t testing.TB, sys *system.System, cfg sim.Config) *replay.Trace {
	t.Helper()
	var buf bytes.Buffer
	if _, err := sim.Run(sys, cfg.WithDefaults(sys), &buf); err != nil {
		t.Fatalf("sim %s seed %d: %v", sys.Name, cfg.Seed, err)
	}
	tr, err := replay.FromBytes(buf.Bytes(), fmt.Sprintf("%s-%d.lz4", sys.Name, cfg.Seed))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// withPartitions wraps a system's scenario with random partitions that
// come and go, so replay is exercised across network splits too.
func withPartitions(sys *system.System) *system.System {
	s := *sys
	inner := sys.Scenario
	s.Scenario = func(ctl system.Controller) {
		if inner != nil {
			inner(ctl)
		}
		r := ctl.Rand()
		nodes := ctl.Nodes()
		for at := time.Duration(r.Int64N(int64(time.Second))); at < sys.Sim.Time; at += time.Duration(r.Int64N(int64(time.Second))) {
			cut := 1 + r.IntN(len(nodes)-1)
			group := append([]node.ID(nil), nodes[:cut]...)
			ctl.At(at, func() { ctl.Partition(group) })
			at += time.Duration(r.Int64N(int64(300 * time.Millisecond)))
			ctl.At(at, ctl.Heal)
		}
	}
	return &s
}

// TestReplayReproducesEveryBundledSystem: 200 seeds per bundled system and
// bug, with loss, duplication, partitions and churn; every step must replay
// with identical effects and identical state hashes.
func TestReplayReproducesEveryBundledSystem(t *testing.T) {
	reg := examples.Registry()
	seeds := 200
	if testing.Short() {
		seeds = 20
	}
	for _, sys := range examples.All() {
		t.Run(sys.Name, func(t *testing.T) {
			t.Parallel()
			reproduce(t, sys, reg, seeds)
		})
	}
}

func reproduce(t *testing.T, sys *system.System, reg *system.Registry, seeds int) {
	{
		psys := withPartitions(sys)
		bugs := sys.BugNames()
		steps, hashed := 0, 0
		for seed := 1; seed <= seeds; seed++ {
			bug := bugs[seed%len(bugs)] // every variant, seeds spread across them
			cfg := sim.DefaultConfig()
			cfg.Seed, cfg.Bug, cfg.Dup, cfg.Steps = uint64(seed), bug, 0.05, 2000
			// Every event's state is compared, not only the spaced ones.
			cfg.HashEvery = 1
			if sys.Sim.Churn == 0 {
				cfg.Churn = 0.5
			}
			tr := simulate(t, psys, cfg)
			r, err := replay.New(tr, reg, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			err = r.RunTo(tr.Len()-1, func(step int) error {
				if r.Replayed() == nil {
					return fmt.Errorf("step %d was not replayed", step)
				}
				if r.Recorded().HasStateHash {
					hashed++
				}
				return nil
			})
			if err != nil {
				t.Fatalf("%s bug %s seed %d: %v", sys.Name, bug, seed, err)
			}
			steps += tr.Len()
		}
		if hashed < steps/2 {
			t.Fatalf("%s: only %d of %d steps had state hashes to compare", sys.Name, hashed, steps)
		}
		t.Logf("%s: %d seeds over bugs %v, %d steps replayed, %d state hashes equal, 0 divergences", sys.Name, seeds, bugs, steps, hashed)
	}
}

// chooser is deliberately nondeterministic: on its second timer it sends
// its peers' names in Go map iteration order.
type chooser struct {
	Peers map[node.ID]int
	Ticks int
}

type Names struct{ List []node.ID }

func (c *chooser) Init(env node.Env) {
	c.Peers = map[node.ID]int{}
	for i := range 200 {
		c.Peers[node.ID(fmt.Sprintf("p%03d", i))] = i
	}
	env.After(time.Millisecond, "tick")
}
func (c *chooser) Receive(node.Env, node.ID, node.Message) {}
func (c *chooser) Timer(env node.Env, _ node.Timer) {
	c.Ticks++
	env.After(time.Millisecond, "tick")
	if c.Ticks < 2 || env.Self() != "n1" {
		return
	}
	var names []node.ID
	for range 3 { // three independent iterations: identical order by chance is hopeless
		for p := range c.Peers {
			names = append(names, p)
		}
	}
	env.Send("n2", Names{List: names})
}

func TestNondeterministicHandlerDiverges(t *testing.T) {
	sys := &system.System{Name: "chooser", Codec: node.NewCodec().MustRegister(Names{}),
		New: func(node.ID, system.Config) node.Handler { return &chooser{} },
		Sim: system.SimDefaults{Nodes: 2, Steps: 50}}
	tr := simulate(t, sys, sim.Config{Seed: 1, NoStateHashes: true})
	want := -1
	for step := range tr.Len() {
		ev := tr.Event(step)
		if ev.Node == "n1" && ev.Kind == node.KindTimer && len(ev.Sends) > 0 {
			want = step
			break
		}
	}
	if want < 0 {
		t.Fatal("the test system never sent")
	}
	r, err := replay.New(tr, system.NewRegistry(sys), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = r.RunTo(tr.Len()-1, nil)
	var d *replay.Divergence
	if !errors.As(err, &d) {
		t.Fatalf("replay did not diverge: %v", err)
	}
	if d.Step != want || d.Node != "n1" || !strings.Contains(d.Event, "timer tick") {
		t.Fatalf("diverged at #%d (%s, %s), want #%d at n1's timer", d.Step, d.Node, d.Event, want)
	}
	if !strings.Contains(d.Report(), "map") || !strings.Contains(d.What, "message 0") {
		t.Fatalf("report does not explain the likely cause:\n%s", d.Report())
	}
	// The replay stays stopped.
	if err := r.Next(); !errors.As(err, &d) {
		t.Fatalf("stepping after a divergence: %v", err)
	}
}

func TestNondeterministicStateDetectedByHash(t *testing.T) {
	// Same system, but the map order only decides state, not effects:
	// only the state hash can catch it.
	sys := &system.System{Name: "chooser2", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &stateChooser{} },
		Sim: system.SimDefaults{Nodes: 1, Steps: 20}}
	tr := simulate(t, sys, sim.Config{Seed: 1})
	r, _ := replay.New(tr, system.NewRegistry(sys), replay.Options{})
	err := r.RunTo(tr.Len()-1, nil)
	var d *replay.Divergence
	if !errors.As(err, &d) || !strings.Contains(d.What, "state") {
		t.Fatalf("state-only nondeterminism not detected: %v", err)
	}
	// A clock read stored in state is as likely as map order (a new
	// user's handler stored time.Now(); the causes did not name it), and
	// vet finds either in the source.
	if rep := d.Report(); !strings.Contains(rep, "time.Now") || !strings.Contains(rep, "replay vet") {
		t.Fatalf("the report of a state-only divergence misses the clock or vet:\n%s", rep)
	}
	r2, _ := replay.New(tr, system.NewRegistry(sys), replay.Options{SkipStateHashes: true})
	if err := r2.RunTo(tr.Len()-1, nil); err != nil {
		t.Fatalf("without state hashes the effects alone match, yet: %v", err)
	}
}

type stateChooser struct {
	M     map[int]bool
	First []int
}

func (s *stateChooser) Init(env node.Env) {
	s.M = map[int]bool{}
	for i := range 300 {
		s.M[i] = true
	}
	env.After(time.Millisecond, "tick")
}
func (s *stateChooser) Receive(node.Env, node.ID, node.Message) {}
func (s *stateChooser) Timer(env node.Env, _ node.Timer) {
	for range 3 {
		for k := range s.M {
			s.First = append(s.First, k)
			break
		}
	}
	env.After(time.Millisecond, "tick")
}

// hashesByStep replays straight through and records every replayed node's
// state hash after every step.
func hashesByStep(t testing.TB, tr *replay.Trace, opts replay.Options) (map[node.ID][]uint64, []node.ID) {
	r, err := replay.New(tr, examples.Registry(), opts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[node.ID][]uint64{}
	err = r.RunTo(tr.Len()-1, func(int) error {
		for _, id := range r.Nodes() {
			out[id] = append(out[id], handlerHash(r.Instance(id).Handler()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, r.Nodes()
}

func handlerHash(h node.Handler) uint64 {
	if h == nil {
		return 0
	}
	return state.Hash(h)
}

func TestPartialReplayMatchesFull(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed = 3
	tr := simulate(t, paxos.System, cfg)
	full, _ := hashesByStep(t, tr, replay.Options{})
	subset := []node.ID{"n2", "n5", "n7"}
	part, ids := hashesByStep(t, tr, replay.Options{Nodes: subset})
	if len(ids) != 3 {
		t.Fatalf("partial replay ran %v", ids)
	}
	for _, id := range subset {
		for step := range full[id] {
			if full[id][step] != part[id][step] {
				t.Fatalf("%s after step %d: partial replay state differs from full replay", id, step)
			}
		}
	}
}

func TestSeekAndBackAgreeWithStraightReplay(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		cfg := sim.DefaultConfig()
		cfg.Seed, cfg.Bug = seed, "spec"
		seekAndBack(t, simulate(t, paxos.System, cfg), seed, 150)
	}
}

// TestSeekAndBackOnEveryBundledSystem: the same on every bundled system,
// raftkv among them, whose etcd raft state holds method values
// (r.tick = r.tickElection) that a deep copy cannot rebind: restoring a
// copied checkpoint made its ticks act on the original, and seeking back
// then forward diverged.
func TestSeekAndBackOnEveryBundledSystem(t *testing.T) {
	reg := examples.Registry()
	for _, name := range reg.Names() {
		sys, _ := reg.Lookup(name)
		t.Run(name, func(t *testing.T) {
			cfg := sim.DefaultConfig()
			cfg.Seed, cfg.Steps = 7, 1500
			seekAndBack(t, simulate(t, sys, cfg), 7, 40)
		})
	}
}

func seekAndBack(t *testing.T, tr *replay.Trace, seed uint64, moves int) {
	t.Helper()
	{
		want, ids := hashesByStep(t, tr, replay.Options{})
		r, err := replay.New(tr, examples.Registry(), replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := replay.NewCursor(r, 37)
		if err != nil {
			t.Fatal(err)
		}
		check := func(how string) {
			t.Helper()
			p := c.Pos()
			for _, id := range ids {
				var h uint64
				if p >= 0 {
					h = want[id][p]
				}
				if got := handlerHash(r.Instance(id).Handler()); got != h {
					t.Fatalf("seed %d, %s to #%d: %s differs from the straight replay", seed, how, p, id)
				}
			}
		}
		rng := rand.New(rand.NewPCG(seed, 99))
		for range moves {
			target := rng.IntN(tr.Len()+1) - 1
			if err := c.Seek(target); err != nil {
				t.Fatal(err)
			}
			check("seek")
			for range rng.IntN(5) {
				if c.Pos() < 0 {
					break
				}
				if err := c.Back(); err != nil {
					t.Fatal(err)
				}
				check("back")
			}
			for range rng.IntN(5) {
				if err := c.Step(); err != nil {
					if errors.Is(err, io.EOF) {
						break
					}
					t.Fatal(err)
				}
				check("step")
			}
		}
		if err := c.Seek(tr.Len()); err == nil {
			t.Fatal("seek past the end succeeded")
		}
	}
}

// TestTruncatedNodeStateUnknown cuts a live-style per-node recording: the
// node's state is unknown after its last complete event.
func TestTruncatedNodeStateUnknown(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Time, cfg.Steps = 4, time.Minute, 100_000 // several lz4 blocks
	var buf bytes.Buffer
	sys := paxos.System
	if _, err := sim.Run(sys, cfg.WithDefaults(sys), &buf); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()[:buf.Len()*3/4]
	f, err := record.Read(bytes.NewReader(data), "cut.lz4", int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Damage == nil {
		t.Fatal("a trace cut at 3/4 reads as undamaged")
	}
	tr, err := replay.Merge([]*record.File{f})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := replay.New(tr, examples.Registry(), replay.Options{})
	if err := r.RunTo(tr.Len()-1, nil); err != nil {
		t.Fatalf("a truncated trace must replay up to the damage: %v", err)
	}
	// Each node is known through its own last recorded event and unknown
	// after it: events it ran after the cut are lost.
	unknownAtEnd := 0
	for _, id := range tr.Nodes {
		last := -1
		for s := range tr.Len() {
			ev := tr.Event(s)
			if ev.Node == id {
				last = s
			}
		}
		reason, unknown := r.Unknown(id)
		if last == tr.Len()-1 {
			if unknown {
				t.Fatalf("%s ran the last step, yet reads as unknown", id)
			}
			continue
		}
		if !unknown || !strings.Contains(reason, "truncated") {
			t.Fatalf("%s after its last recorded step #%d: unknown=%v reason=%q", id, last, unknown, reason)
		}
		unknownAtEnd++
		if u, ok := tr.UnknownAt(id, last); ok {
			t.Fatalf("%s reads as unknown at its own last step: %+v", id, u)
		}
	}
	if unknownAtEnd < len(tr.Nodes)-1 {
		t.Fatalf("only %d nodes unknown at the end", unknownAtEnd)
	}
}

// stamper's n1 sends n2 the time of its init, to the nanosecond, and
// again at every tick.
type stamper struct{ Got time.Time }

type Stamp struct{ At time.Time }

func (s *stamper) Init(env node.Env) {
	if env.Self() == "n1" {
		env.Send("n2", Stamp{At: env.Now().Add(314267746)})
		env.After(time.Millisecond, "tick")
	}
}
func (s *stamper) Receive(_ node.Env, _ node.ID, m node.Message) { s.Got = m.(Stamp).At }
func (s *stamper) Timer(env node.Env, _ node.Timer) {
	env.Send("n2", Stamp{At: env.Now().Add(314267746)})
	env.After(time.Millisecond, "tick")
}

var stamperSystem = &system.System{Name: "stamper", Codec: node.NewCodec().MustRegister(Stamp{}),
	New: func(node.ID, system.Config) node.Handler { return &stamper{} },
	Sim: system.SimDefaults{Nodes: 2, Steps: 30}}

// A recording of an earlier release (codec /1, times in whole seconds)
// replays clean, and what continues or re-runs it encodes as it did: a
// fork of it is a /1 trace that replays clean (it was written as /2, and
// its kept prefix's sends diverged at #0 under every explore --from,
// predict and critical run), and its schedule re-runs to the same bytes.
func TestRecordingsOfTheFirstCodecContinue(t *testing.T) {
	const v1 = "cbor-core-deterministic/1"
	reg := system.NewRegistry(stamperSystem)
	var rec bytes.Buffer
	cfg := sim.Config{Seed: 1, Codec: v1}.WithDefaults(stamperSystem)
	if _, err := sim.Run(stamperSystem, cfg, &rec); err != nil {
		t.Fatal(err)
	}
	verify := func(name string, data []byte) *replay.Trace {
		tr, err := replay.FromBytes(data, name)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Header.Codec != v1 {
			t.Fatalf("%s names codec %q, want %q", name, tr.Header.Codec, v1)
		}
		r, err := replay.New(tr, reg, replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.RunTo(tr.Len()-1, nil); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := r.Instance("n2").Handler().(*stamper).Got; got.IsZero() || got.Nanosecond() != 0 {
			t.Fatalf("%s: n2 got %v, want whole seconds (the first codec's)", name, got)
		}
		return tr
	}
	tr := verify("v1.lz4", rec.Bytes())

	r, err := replay.New(tr, reg, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := 5
	w, err := replay.WorldAt(r, at, nil)
	if err != nil {
		t.Fatal(err)
	}
	var fork bytes.Buffer
	fcfg := sim.Config{Seed: 2, Steps: 20}.WithDefaults(stamperSystem)
	if _, err := sim.RunFrom(stamperSystem, fcfg, w, tr.Prefix(at+1), &fork); err != nil {
		t.Fatal(err)
	}
	verify("fork.lz4", fork.Bytes())

	f, err := record.Read(bytes.NewReader(rec.Bytes()), "v1.lz4", int64(rec.Len()))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sim.ScheduleOf(f)
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if _, err := sim.Run(stamperSystem, sc.Config().WithDefaults(stamperSystem), &again); err != nil {
		t.Fatalf("the schedule of a /1 recording: %v", err)
	}
	re, err := record.Read(bytes.NewReader(again.Bytes()), "again.lz4", int64(again.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if re.Header.Codec != v1 || len(re.Events) != len(f.Events) {
		t.Fatalf("the re-run names codec %q and has %d events, want %q and %d", re.Header.Codec, len(re.Events), v1, len(f.Events))
	}
	for i, ev := range re.Events {
		for j, snd := range ev.Sends {
			if !bytes.Equal(snd.Payload, f.Events[i].Sends[j].Payload) {
				t.Fatalf("the re-run's #%d sent %x, the recording %x", i, snd.Payload, f.Events[i].Sends[j].Payload)
			}
		}
	}
	var text bytes.Buffer
	if err := sc.Format(&text); err != nil {
		t.Fatal(err)
	}
	parsed, err := sim.ParseSchedule(&text, "v1.schedule")
	if err != nil || parsed.Codec != v1 {
		t.Fatalf("the schedule file keeps codec %q (%v), want %q", parsed.Codec, err, v1)
	}
}

// A replay encodes what handlers send as the trace's codec did: a trace
// of this build keeps a time's nanoseconds and replays clean, and the
// same trace labelled with the first codec (whole seconds) diverges at
// the send, which that codec would have encoded otherwise.
func TestReplayEncodesAsTheTracesCodec(t *testing.T) {
	sys := stamperSystem
	dir := t.TempDir()
	path := simulateToFile(t, sys, sim.Config{Seed: 1}, dir)
	reg := system.NewRegistry(sys)
	replayAll := func(path string) error {
		tr, err := replay.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		if tr.Header.Codec != node.CodecName && !strings.HasSuffix(path, "v1.lz4") {
			t.Fatalf("a new trace names codec %q", tr.Header.Codec)
		}
		r, err := replay.New(tr, reg, replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.RunTo(tr.Len()-1, nil); err != nil {
			return err
		}
		if got := r.Instance("n2").Handler().(*stamper).Got; got.Nanosecond() == 0 {
			t.Fatalf("n2 got %v: no nanoseconds to lose, the test proves nothing", got)
		}
		return nil
	}
	if err := replayAll(path); err != nil {
		t.Fatalf("a trace of this build: %v", err)
	}

	f, err := record.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Header.Codec = "cbor-core-deterministic/1"
	old := filepath.Join(dir, "v1.lz4")
	writeTrace(t, old, *f.Header, f.Events, &f.Ends[0])
	var d *replay.Divergence
	if err := replayAll(old); !errors.As(err, &d) || d.Node != "n1" || !strings.Contains(d.What, "message 0") {
		t.Fatalf("labelled with the first codec, the replay did not diverge at n1's send: %v", err)
	}
}

// sender's n1 sends n2 one message at init, of the type its system
// registers as "renamed.Msg".
type sender struct{ make func() node.Message }

func (s *sender) Init(env node.Env) {
	if env.Self() == "n1" {
		env.Send("n2", s.make())
	}
}
func (s *sender) Receive(node.Env, node.ID, node.Message) {}
func (s *sender) Timer(node.Env, node.Timer)              {}

type msgBefore struct{ Token, Expiry int }
type msgAfter struct{ Token, ExpiryNs int }

// A message type changed since the recording (a field renamed): the
// divergence showed the recorded bytes read by this build's type, with
// a zero that was never sent (ExpiryNs:0). It shows them as encoded.
func TestDivergenceShowsARenamedFieldAsRecorded(t *testing.T) {
	system1 := func(sample node.Message, mk func() node.Message) *system.System {
		c := node.NewCodec()
		if err := c.Register("renamed.Msg", sample); err != nil {
			t.Fatal(err)
		}
		return &system.System{Name: "renamed", Codec: c,
			New: func(node.ID, system.Config) node.Handler { return &sender{make: mk} },
			Sim: system.SimDefaults{Nodes: 2, Steps: 5}}
	}
	before := system1(msgBefore{}, func() node.Message { return msgBefore{Token: 7, Expiry: 1234} })
	after := system1(msgAfter{}, func() node.Message { return msgAfter{Token: 7, ExpiryNs: 1234} })
	tr := simulate(t, before, sim.Config{Seed: 1})
	r, err := replay.New(tr, system.NewRegistry(after), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var d *replay.Divergence
	if err := r.RunTo(tr.Len()-1, nil); !errors.As(err, &d) {
		t.Fatalf("no divergence: %v", err)
	}
	if rep := d.Report(); !strings.Contains(rep, "Expiry:1234") || !strings.Contains(rep, "as encoded") {
		t.Fatalf("the recorded message is not shown as encoded:\n%s", rep)
	}
}

// Nodes whose binaries were of different releases record parts of one
// trace with different codecs: a replay encodes as the first file's (by
// path: replay.CanonicalOrder), and
// a divergence then names the mix as its first likely cause (nothing in
// the handlers' source would explain a time that differs).
func TestMixedCodecsAreTheFirstCause(t *testing.T) {
	var rec bytes.Buffer
	cfg := sim.Config{Seed: 1, Codec: "cbor-core-deterministic/1", CausalClocks: true}.WithDefaults(stamperSystem)
	if _, err := sim.Run(stamperSystem, cfg, &rec); err != nil {
		t.Fatal(err)
	}
	f, err := record.Read(bytes.NewReader(rec.Bytes()), "v1.lz4", int64(rec.Len()))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var paths []string
	for _, id := range []node.ID{"n2", "n1"} { // n2's file first by path: its codec is the replay's
		h := *f.Header
		h.Driver, h.Recorded, h.Run = "live", []node.ID{id}, nil
		if id == "n2" {
			h.Codec = node.CodecName // n2 ran a newer binary
		}
		path := filepath.Join(dir, map[node.ID]string{"n2": "a-", "n1": "b-"}[id]+string(id)+".lz4")
		var evs []*node.Event
		for _, ev := range f.Events {
			if ev.Node == id {
				evs = append(evs, ev)
			}
		}
		writeTrace(t, path, h, evs, &record.End{Reason: "terminated", Time: f.Ends[0].Time})
		paths = append(paths, path)
	}
	tr, err := replay.Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if len(tr.Codecs) != 2 {
		t.Fatalf("codecs %q, want both", tr.Codecs)
	}
	r, err := replay.New(tr, system.NewRegistry(stamperSystem), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var d *replay.Divergence
	if err := r.RunTo(tr.Len()-1, nil); !errors.As(err, &d) || d.Node != "n1" {
		t.Fatalf("n1's sends, recorded with /1, replayed as /2: %v", err)
	}
	if !strings.Contains(d.Error(), "the trace mixes message codecs cbor-core-deterministic/2, cbor-core-deterministic/1") {
		t.Fatalf("the one line does not name the mix: %s", d.Error())
	}
	causes := d.Report()[strings.Index(d.Report(), "likely causes:"):]
	if !strings.HasPrefix(strings.SplitN(causes, "\n", 3)[1], "    - the trace's parts were recorded by binaries with different message codecs") {
		t.Fatalf("the mix is not the first cause:\n%s", d.Report())
	}
}

// A cancellation names the timer it cancels, as its setting did ("timer
// round in 30ms"): "cancel timer 61" alone could not be matched to it
// without the debugger (a new user's suspicion timer).
func TestCancelledTimersAreNamed(t *testing.T) {
	tr := simulate(t, paxos.System, sim.Config{Seed: 1})
	r := replay.NewRenderer(tr, paxos.System.Codec)
	for step := range tr.Len() {
		ev := tr.Event(step)
		if len(ev.TimersCancelled) == 0 {
			continue
		}
		want := fmt.Sprintf("cancel timer %d (round)", ev.TimersCancelled[0])
		if line := r.Line(step, ev); !strings.Contains(line, want) {
			t.Fatalf("#%d: %s\nwant %q", step, line, want)
		}
		return
	}
	t.Fatal("no event cancelled a timer: the test proves nothing")
}

// TestTruncatedTraceTellsADownNodeFromALostOne cuts recordings of runs
// with churn: a node whose last recorded event is its crash was down when
// the recording stopped, and its unknown stretch says so (Unknown.Down),
// where a running node's does not.
func TestTruncatedTraceTellsADownNodeFromALostOne(t *testing.T) {
	down, running := 0, 0
	for seed := uint64(1); seed <= 12 && (down == 0 || running == 0); seed++ {
		cfg := sim.DefaultConfig()
		cfg.Seed, cfg.Time, cfg.Steps, cfg.Churn = seed, time.Minute, 40_000, 0.5
		var buf bytes.Buffer
		if _, err := sim.Run(paxos.System, cfg.WithDefaults(paxos.System), &buf); err != nil {
			t.Fatal(err)
		}
		data := buf.Bytes()[:buf.Len()*3/4]
		f, err := record.Read(bytes.NewReader(data), "cut.lz4", int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := replay.Merge([]*record.File{f})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range tr.Nodes {
			steps := tr.NodeSteps(id)
			last := steps[len(steps)-1]
			if last == tr.Len()-1 {
				continue
			}
			u, ok := tr.UnknownAt(id, tr.Len()-1)
			if !ok {
				t.Fatalf("seed %d: %s is not unknown after the cut", seed, id)
			}
			crashed := tr.Event(last).Kind == node.KindCrash
			if u.Down != crashed {
				t.Fatalf("seed %d: %s's last event #%d is a crash: %v; its stretch says Down=%v", seed, id, last, crashed, u.Down)
			}
			if crashed {
				down++
			} else {
				running++
			}
		}
	}
	if down == 0 || running == 0 {
		t.Fatalf("no cut found both a down node (%d) and a running one (%d)", down, running)
	}
}
