package provenance

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/statedb"
	"github.com/replaycheck/replaycheck/system"
)

// TestWhyReplayedStatesMatchTheDatabase checks the in-memory replay
// source against the database it stands in for: every node's state and
// every field's last write at a spread of steps.
func TestWhyReplayedStatesMatchTheDatabase(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug = 21, "latest-response"
	cfg = cfg.WithDefaults(paxos.System)
	trace := simtest.Record(t, paxos.System, cfg, filepath.Join(t.TempDir(), "demo.lz4"))
	reg := system.NewRegistry(paxos.System)
	db, _, err := statedb.Ensure([]string{trace}, "", statedb.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tr, err := replay.Load(trace)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := Replay(tr, reg, 600, nil)
	if err != nil {
		t.Fatal(err)
	}
	fromDB := FromDB(db)
	for _, pos := range []int{0, 13, 158, 263, 273, 600} {
		for _, id := range tr.Nodes {
			a, ca, err := fromDB.State(id, pos)
			if err != nil {
				t.Fatal(err)
			}
			b, cb, err := rp.State(id, pos)
			if err != nil {
				t.Fatal(err)
			}
			// The database keeps the handler's field order; the replay
			// source the order of first appearance: compare as sets.
			if !sameLeaves(a, b) || len(ca) != len(cb) {
				t.Fatalf("%s at #%d: database %v (changed %v), replay %v (changed %v)", id, pos, a, ca, b, cb)
			}
			for _, l := range a {
				wa, oka, _ := fromDB.LastWrite(id, l.Path, pos)
				wb, okb, _ := rp.LastWrite(id, l.Path, pos)
				if oka != okb || wa != wb {
					t.Fatalf("%s %s at #%d: last write %v/%v vs %v/%v", id, l.Path, pos, wa, oka, wb, okb)
				}
			}
		}
	}
	if _, _, err := rp.State(tr.Nodes[0], 601); err == nil {
		t.Fatal("a state past the replayed steps was served")
	}
}

func sameLeaves(a, b []state.Leaf) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]string{}
	for _, l := range a {
		m[l.Path] = l.Value
	}
	for _, l := range b {
		if v, ok := m[l.Path]; !ok || v != l.Value {
			return false
		}
	}
	return true
}

// shifter copies nothing: each tick computes its field anew, and every
// field ends equal ("5"), as an enum-like value is equal in many records.
type shifter struct{ A, B, C int }

func (s *shifter) Init(env node.Env) {
	for i, name := range []string{"a", "b", "c"} {
		env.After(time.Duration(i+1)*time.Millisecond, name)
	}
}
func (s *shifter) Receive(node.Env, node.ID, node.Message) {}
func (s *shifter) Timer(_ node.Env, t node.Timer) {
	switch t.Name {
	case "a":
		s.A = 2 + 3
	case "b":
		s.B = 10 / 2
	case "c":
		s.C = 1 + 4
	}
}

// An equal value in the node's own state is guessed as a source once,
// not guess upon guess: C's chain went back through B to A, fields it
// never came from (a new user's chain ran through eight unrelated
// transactions).
func TestWhyGuessesAnOwnFieldOnce(t *testing.T) {
	sys := &system.System{Name: "shifter", Codec: node.NewCodec(), New: func(node.ID, system.Config) node.Handler { return &shifter{} },
		Sim: system.SimDefaults{Nodes: 1, LatencyMin: time.Millisecond, LatencyMax: time.Millisecond, Steps: 100, Time: 10 * time.Millisecond}}
	cfg := sim.DefaultConfig()
	cfg.Seed = 1
	trace := simtest.Record(t, sys, cfg.WithDefaults(sys), filepath.Join(t.TempDir(), "s.lz4"))
	tr, err := replay.Load(trace)
	if err != nil {
		t.Fatal(err)
	}
	reg := system.NewRegistry(sys)
	rp, err := Replay(tr, reg, tr.Len()-1, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Why(Options{Trace: tr, Codec: sys.Codec, States: rp}, "n1", "C", tr.Len()-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Links) != 2 || !c.Links[1].Inferred || !strings.Contains(c.Links[1].Origin, "not followed further") {
		t.Fatalf("chain of %d links: %+v", len(c.Links), c.Links)
	}
}

// relay's n2 computes Y then X (equal, unrelated) and sends X to n1,
// which keeps it in A; n1 later computes C, equal to A by chance.
type relay struct{ A, C, X, Y int }

type relayVal struct{ V int }

func (r *relay) Init(env node.Env) {
	if env.Self() == "n2" {
		env.After(time.Millisecond, "y")
		env.After(2*time.Millisecond, "x")
	} else {
		env.After(20*time.Millisecond, "c")
	}
}
func (r *relay) Receive(_ node.Env, _ node.ID, m node.Message) { r.A = m.(relayVal).V }
func (r *relay) Timer(env node.Env, t node.Timer) {
	switch t.Name {
	case "y":
		r.Y = 5
	case "x":
		r.X = 2 + 3
		env.Send("n1", relayVal{r.X})
	case "c":
		r.C = 10 / 2
	}
}

// One guess per chain, across messages too: C guessed from n1's own A,
// A followed through the message to n2's X, and there the chain stops
// rather than guess again (n2's Y).
func TestWhyGuessesOncePerChain(t *testing.T) {
	c := whyOfTwoNodes(t, "relay", relayVal{}, func() node.Handler { return &relay{} }, "C")
	var fields []string
	for _, l := range c.Links {
		fields = append(fields, string(l.Node)+"."+l.Field)
	}
	if strings.Join(fields, " ") != "n1.C n1.A n2.X" || !strings.Contains(c.Links[len(c.Links)-1].Origin, "not followed further") {
		t.Fatalf("chain %v, last origin %q", fields, c.Links[len(c.Links)-1].Origin)
	}
	// The guess of X names its rival: Y held the value too, and a user
	// must see that it might have been the source (a new user's quorum
	// register: the reply's value came from the field not taken).
	also := c.Links[2].AlsoEqual
	if len(also) != 1 || !strings.HasPrefix(also[0], "Y (written at #") {
		t.Fatalf("the guess of n2.X names %q as also equal, want Y", also)
	}
	if text, _ := c.Lines(); !strings.Contains(strings.Join(text, "\n"), "also equal there: Y (written at #") {
		t.Fatalf("the text does not name the rival:\n%s", strings.Join(text, "\n"))
	}
}

// At a crash the chain says the node crashed: the fault removed the
// node's state, no handler computed it.
func TestWhyAtACrash(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug = 21, "latest-response"
	cfg = cfg.WithDefaults(paxos.System)
	trace := simtest.Record(t, paxos.System, cfg, filepath.Join(t.TempDir(), "demo.lz4"))
	tr, err := replay.Load(trace)
	if err != nil {
		t.Fatal(err)
	}
	crash := -1
	for i := range tr.Len() {
		if tr.Event(i).Kind == node.KindCrash {
			crash = i
			break
		}
	}
	if crash < 0 {
		t.Fatal("no crash in the demo run")
	}
	id := tr.Event(crash).Node
	rp, err := Replay(tr, system.NewRegistry(paxos.System), crash, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Why(Options{Trace: tr, Codec: paxos.System.Codec, States: rp}, id, statedb.StatusPath, crash)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Links) != 1 || !strings.Contains(c.Links[0].Origin, "crashed") {
		t.Fatalf("why %s @status at its crash #%d: %+v", id, crash, c.Links)
	}
	// A field of a node that is down: not a misspelt name (the answer
	// was "no field ..., nearest: @status, @timers").
	_, err = Why(Options{Trace: tr, Codec: paxos.System.Codec, States: rp}, id, "Agent.AcceptedRound", crash)
	if err == nil || !strings.Contains(err.Error(), "is down at #") {
		t.Fatalf("why of a field of %s while down: %v", id, err)
	}
}

// granter's n2 takes a lock (Token) and, at the step that sends it, bumps
// a counter that comes to equal it (Grants); n1 keeps what it was sent.
type granter struct{ Token, Grants, Last int }

type grantMsg struct{ Token int }

func (g *granter) Init(env node.Env) {
	if env.Self() == "n2" {
		env.After(time.Millisecond, "lock")
		env.After(2*time.Millisecond, "grant")
	}
}
func (g *granter) Receive(_ node.Env, _ node.ID, m node.Message) { g.Last = m.(grantMsg).Token }
func (g *granter) Timer(env node.Env, t node.Timer) {
	switch t.Name {
	case "lock":
		g.Token, g.Grants = 5, 4
	case "grant":
		g.Grants++
		env.Send("n1", grantMsg{g.Token})
	}
}

// A rival with a sign the guess lacks says it: the guess takes the
// counter changed at the send step, and the field named as the message
// field (the true source here, as a new user's lock server's fencing
// token) is named with that sign, not as one more equal field.
func TestWhyRivalsSayWhatSpeaksForThem(t *testing.T) {
	c := whyOfTwoNodes(t, "granter", grantMsg{}, func() node.Handler { return &granter{} }, "Last")
	if len(c.Links) < 2 || c.Links[1].Node != "n2" {
		t.Fatalf("the chain does not reach n2: %+v", c.Links)
	}
	l := c.Links[1]
	rival := "Token (written at #"
	if l.Field == "Token" {
		rival = "Grants (written at #"
	}
	var found string
	for _, a := range l.AlsoEqual {
		if strings.HasPrefix(a, rival) {
			found = a
		}
	}
	want := ", named Token)"
	if l.Field == "Token" {
		want = ", changed at this step)"
	}
	if !strings.HasSuffix(found, want) {
		t.Fatalf("guess %s, rivals %q: want %s...%s", l.Field, l.AlsoEqual, rival, want)
	}
}

// whyOfTwoNodes records a lossless run of a two-node system sending msg
// (a message type, or a []any of several) and asks why n1's field holds
// its value at the end.
func whyOfTwoNodes(t *testing.T, name string, msg any, h func() node.Handler, field string) *Chain {
	t.Helper()
	codec := node.NewCodec()
	msgs, several := msg.([]any)
	if !several {
		msgs = []any{msg}
	}
	for _, m := range msgs {
		codec.MustRegister(m)
	}
	sys := &system.System{Name: name, Codec: codec, New: func(node.ID, system.Config) node.Handler { return h() },
		Sim: system.SimDefaults{Nodes: 2, LatencyMin: time.Millisecond, LatencyMax: time.Millisecond, Steps: 100, Time: 50 * time.Millisecond}}
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Drop, cfg.Churn = 1, 0, 0
	trace := simtest.Record(t, sys, cfg.WithDefaults(sys), filepath.Join(t.TempDir(), name+".lz4"))
	tr, err := replay.Load(trace)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := Replay(tr, system.NewRegistry(sys), tr.Len()-1, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Why(Options{Trace: tr, Codec: sys.Codec, States: rp}, "n1", field, tr.Len()-1)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// keeper stores Count on disk and reads it back at a restart; Armed is
// set by Init only on a first start (the bug of a node that stops
// gossiping after a restart), and Self is set by Init every time.
type keeper struct {
	Self  string
	Count int
	Armed bool
}

type keeperTick struct{}

func (k *keeper) Init(env node.Env) {
	k.Self = string(env.Self())
	if b, ok := env.Disk().Get("count"); ok {
		k.Count = int(b[0])
		return
	}
	k.Armed = true
}
func (k *keeper) Receive(node.Env, node.ID, node.Message) {}
func (k *keeper) Timer(node.Env, node.Timer)              {}
func (k *keeper) Input(env node.Env, _ node.Message) {
	k.Count++
	env.Disk().Put("count", []byte{byte(k.Count)})
}

// why of a value set at a restart said "restored from disk at restart"
// for every field, also for one Init set without reading the disk (a new
// user's G-counter: a gossip flag never stored). It now says whether
// Init read the disk, which keys, and the value the node started with.
func TestWhyAtARestartSaysWhatTheDiskGave(t *testing.T) {
	for field, want := range map[string][]string{
		"Count": {"read disk key(s) count", "started (#0) with 0"},
		"Armed": {"read disk key(s) count", "started (#0) with true"},
		"Self":  {"read disk key(s) count", "started (#0) with the same value"},
	} {
		if o := whyAtRestart(t, true, field); !strings.Contains(o, want[0]) || !strings.Contains(o, want[1]) || strings.Contains(o, "restored from disk at restart") {
			t.Errorf("why %s at the restart: origin %q, want it to say %q", field, o, want)
		}
	}
	// Nothing was stored before the crash: Init read nothing.
	if o := whyAtRestart(t, false, "Armed"); !strings.Contains(o, "read nothing from disk") || !strings.Contains(o, "not restored") {
		t.Errorf("why Armed at a restart that read nothing: origin %q", o)
	}
}

// whyAtRestart runs keeper (storing Count twice before its crash, or not)
// and says why's origin of field at its restart.
func whyAtRestart(t *testing.T, store bool, field string) string {
	t.Helper()
	sys := &system.System{Name: "keeper", Codec: node.NewCodec().MustRegister(keeperTick{}),
		New: func(node.ID, system.Config) node.Handler { return &keeper{} },
		Sim: system.SimDefaults{Nodes: 1, Steps: 100, Time: 50 * time.Millisecond},
		Scenario: func(ctl system.Controller) {
			if store {
				ctl.At(5*time.Millisecond, func() { ctl.Input("n1", keeperTick{}) })
				ctl.At(6*time.Millisecond, func() { ctl.Input("n1", keeperTick{}) })
			}
			ctl.At(10*time.Millisecond, func() { ctl.Crash("n1") })
			ctl.At(20*time.Millisecond, func() { ctl.Restart("n1") })
		}}
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Drop, cfg.Churn = 1, 0, 0
	trace := simtest.Record(t, sys, cfg.WithDefaults(sys), filepath.Join(t.TempDir(), "keeper.lz4"))
	tr, err := replay.Load(trace)
	if err != nil {
		t.Fatal(err)
	}
	restart := -1
	for i := range tr.Len() {
		if tr.Event(i).Kind == node.KindRestart {
			restart = i
		}
	}
	if restart < 0 {
		t.Fatal("no restart in the run")
	}
	rp, err := Replay(tr, system.NewRegistry(sys), restart, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Why(Options{Trace: tr, Codec: sys.Codec, States: rp}, "n1", field, restart)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Links) != 1 || c.Links[0].Step != restart {
		t.Fatalf("why %s at the restart #%d: %+v", field, restart, c.Links)
	}
	return c.Links[0].Origin
}

// hopper's n1 computes a value it does not keep and sends it to n2,
// which passes it back as it came, without keeping it either; n1 keeps
// what comes back.
type hopper struct{ Last int }

type hopMsg struct {
	V    int
	Back bool
}

func (h *hopper) Init(env node.Env) {
	if env.Self() == "n1" {
		env.After(time.Millisecond, "start")
	}
}
func (h *hopper) Receive(env node.Env, from node.ID, m node.Message) {
	if hm := m.(hopMsg); hm.Back {
		h.Last = hm.V
	} else {
		env.Send(from, hopMsg{V: hm.V, Back: true})
	}
}
func (h *hopper) Timer(env node.Env, _ node.Timer) { env.Send("n2", hopMsg{V: 3 + 4}) }

// A value forwarded as it came is followed through the forwarder's own
// trigger: the chain stopped at n2 with "computed by the sender", as a
// new user's follower forwarding a client command to its leader read
// (now: input ..., forwarded as it came).
func TestWhyFollowsAValueForwardedAsItCame(t *testing.T) {
	c := whyOfTwoNodes(t, "hopper", hopMsg{}, func() node.Handler { return &hopper{} }, "Last")
	var nodes []string
	for _, l := range c.Links {
		nodes = append(nodes, string(l.Node))
	}
	last := c.Links[len(c.Links)-1]
	if strings.Join(nodes, " ") != "n1 n2 n1" || !strings.Contains(last.Origin, "computed by the sender: no field of n1") {
		t.Fatalf("chain through %v, last origin %q", nodes, last.Origin)
	}
}

// acker is a server that answers an Ack by removing the pending write it
// acknowledges and replying with the write's version; it also holds an
// unrelated read of the same version. n1 keeps the version replied.
type acker struct {
	Inflight map[int]*pendingWrite
	Reads    []readOf
	Got      int
}

type pendingWrite struct{ Ver int }

type readOf struct{ Ver int }

type ackMsg struct {
	Ver   int
	Reply bool
}

func (a *acker) Init(env node.Env) {
	if env.Self() == "n1" {
		env.After(time.Millisecond, "ack")
		return
	}
	a.Inflight = map[int]*pendingWrite{5: {Ver: 5}}
	a.Reads = []readOf{{Ver: 5}}
}

func (a *acker) Receive(env node.Env, from node.ID, m node.Message) {
	switch am := m.(ackMsg); {
	case am.Reply:
		a.Got = am.Ver
	default:
		w := a.Inflight[am.Ver]
		delete(a.Inflight, am.Ver)
		env.Send(from, ackMsg{Ver: w.Ver, Reply: true})
	}
}

func (a *acker) Timer(env node.Env, _ node.Timer) { env.Send("n2", ackMsg{Ver: 4 + 1}) }

// A reply's value is followed to the pending request its step consumed,
// not to an unchanged field equal by chance: a new user's why went
// through an unrelated read's version (and two hops beyond it) where the
// reply's step had removed the write it acknowledged.
func TestWhyPrefersWhatTheSendStepConsumed(t *testing.T) {
	c := whyOfTwoNodes(t, "acker", ackMsg{}, func() node.Handler { return &acker{} }, "Got")
	if len(c.Links) < 2 {
		t.Fatalf("chain %+v", c.Links)
	}
	src := c.Links[1]
	if src.Node != "n2" || src.Field != "Inflight[5].Ver" || !strings.Contains(src.Via, "took it away") {
		t.Errorf("the reply's value traced to %s %s (via %q), want n2's Inflight[5].Ver, removed by the reply's step", src.Node, src.Field, src.Via)
	}
}

// collector answers a response by dropping every response it collected,
// two of them equal to the answer: a guess among equals, where the
// response the step received holds the value too and is followed.
type collector struct {
	Resps map[string]int
	Got   int
}

type collectMsg struct {
	Ver   int
	Reply bool
}

func (c *collector) Init(env node.Env) {
	if env.Self() == "n1" {
		env.After(time.Millisecond, "resp")
		return
	}
	c.Resps = map[string]int{"a": 5, "b": 5}
}

func (c *collector) Receive(env node.Env, from node.ID, m node.Message) {
	switch cm := m.(collectMsg); {
	case cm.Reply:
		c.Got = cm.Ver
	default:
		clear(c.Resps)
		env.Send(from, collectMsg{Ver: cm.Ver, Reply: true})
	}
}

func (c *collector) Timer(env node.Env, _ node.Timer) { env.Send("n2", collectMsg{Ver: 2 + 3}) }

func TestWhyPrefersTheTriggerToAGuessAmongWhatWasTaken(t *testing.T) {
	c := whyOfTwoNodes(t, "collector", collectMsg{}, func() node.Handler { return &collector{} }, "Got")
	var nodes []string
	for _, l := range c.Links {
		nodes = append(nodes, string(l.Node))
	}
	if strings.Join(nodes, " ") != "n1 n2 n1" || strings.Contains(c.Links[1].Via, "took it away") {
		t.Fatalf("chain through %v: %+v", nodes, c.Links)
	}
}

// viewer's n2 sends a view with an empty log and commit 0; n1 sets
// OpNum to the log's length and Commit to the message's.
type viewer struct {
	OpNum, Commit, Idle int
}

type startView struct {
	View   int
	Log    []int
	Commit int
}

func (v *viewer) Init(env node.Env) {
	if env.Self() == "n2" {
		env.After(time.Millisecond, "send")
		return
	}
	v.OpNum, v.Commit = 5, 7
}
func (v *viewer) Receive(_ node.Env, _ node.ID, m node.Message) {
	sv := m.(startView)
	v.OpNum, v.Commit = len(sv.Log), sv.Commit
}
func (v *viewer) Timer(env node.Env, _ node.Timer) { env.Send("n1", startView{View: 1}) }

// A zero is linked only to a field of its name: OpNum = 0 was linked to
// the message's Commit = 0 and on through unrelated zeros of the sender
// (a new user's view change). Commit = 0 still follows Commit.
func TestWhyLinksZerosOnlyByName(t *testing.T) {
	c := whyOfTwoNodes(t, "viewer", startView{}, func() node.Handler { return &viewer{} }, "OpNum")
	if len(c.Links) != 1 || !strings.Contains(c.Links[0].Origin, "a zero value") {
		t.Fatalf("OpNum = 0: chain of %d links: %+v", len(c.Links), c.Links)
	}
	c = whyOfTwoNodes(t, "viewer", startView{}, func() node.Handler { return &viewer{} }, "Commit")
	if len(c.Links) < 2 || !strings.Contains(c.Links[1].Via, "startView field Commit = 0") {
		t.Fatalf("Commit = 0: chain of %d links: %+v", len(c.Links), c.Links)
	}
}

// ignorer's n1 receives a view with a longer log and keeps its own empty
// one (the bug of a new user's view change); its Idle never changes.
type ignorer struct {
	Log  []int
	Idle int
}

type longView struct{ Log []int }

func (g *ignorer) Init(env node.Env) {
	if env.Self() == "n2" {
		env.After(time.Millisecond, "send")
	}
}
func (g *ignorer) Receive(node.Env, node.ID, node.Message) {}
func (g *ignorer) Timer(env node.Env, _ node.Timer)        { env.Send("n1", longView{Log: []int{4, 5}}) }

// why of a value written long before named only that write (the init),
// not the step that received another value and kept it.
func TestWhyNamesTheStepThatKeptTheValue(t *testing.T) {
	c := whyOfTwoNodes(t, "ignorer", longView{}, func() node.Handler { return &ignorer{} }, "Log")
	k := c.Kept
	if k == nil || k.Node != "n1" || !strings.HasPrefix(k.Event, "recv provenance.longView") || k.Field != "Log[0]" || k.Value != "4" {
		t.Fatalf("kept: %+v (chain %+v)", k, c.Links)
	}
	text, steps := c.Lines()
	if last := text[len(text)-1]; !strings.Contains(last, "kept at #") || !strings.Contains(last, "and Log stayed nil") || steps[len(steps)-1] != k.Step {
		t.Fatalf("last line %q (step %d)", last, steps[len(steps)-1])
	}
	// A field no trigger names has no such step.
	if c := whyOfTwoNodes(t, "ignorer", longView{}, func() node.Handler { return &ignorer{} }, "Idle"); c.Kept != nil {
		t.Fatalf("Idle kept at %+v", c.Kept)
	}
}

// The kept line named steps that kept nothing: any trigger field whose
// path held the name counted (Entries[0].Term for Term, Log[1] for
// Log[0]), and a trigger carrying the same value too (an attack on the
// first version). Only the same field counts, below struct fields at
// most, or a part of a non-empty one where the node's is empty.
func TestKeptComparesTheSameField(t *testing.T) {
	for _, c := range []struct {
		node, msg, inside string
		same              bool
	}{
		{"Term", "Term", "", true},
		{"Replica.Term", "Term", "", true},
		{"Term", "Entries[0].Term", "", false},
		{"Entries[0].Term", "Term", "", false},
		{"Entries[0].Term", "Entries[0].Term", "", true},
		{"Log[0]", "Log[1]", "", false},
		{"Log", "Log[0].View", "[0].View", true},
		{"Log", "[0].Log", "", false},
		{"Term", "Terms", "", false},
	} {
		inside := "unset"
		if got := sameField(c.node, c.msg, &inside); got != c.same || got && inside != c.inside {
			t.Errorf("sameField(%q, %q) = %v, inside %q; want %v, %q", c.node, c.msg, got, inside, c.same, c.inside)
		}
	}
	// A trigger that carried the same value kept nothing.
	c := whyOfTwoNodes(t, "echoer", longView{}, func() node.Handler { return &echoer{} }, "Log[0]")
	if c.Kept != nil {
		t.Fatalf("kept at %+v, though the message carried the same Log", c.Kept)
	}
}

// echoer's n1 holds the log n2 sends it, before it is sent.
type echoer struct{ Log []int }

func (e *echoer) Init(env node.Env) {
	e.Log = []int{4, 5}
	if env.Self() == "n2" {
		env.After(time.Millisecond, "send")
	}
}
func (e *echoer) Receive(node.Env, node.ID, node.Message) {}
func (e *echoer) Timer(env node.Env, _ node.Timer)        { env.Send("n1", longView{Log: []int{4, 5}}) }

// Zeros as state shows them: a Duration's 0s, an enum's name beside its
// 0, a negative zero (an attack found them linked as any value).
func TestZeroValuesAsStateShowsThem(t *testing.T) {
	for v, want := range map[string]bool{"0": true, "-0": true, "0s": true, "0 (Follower)": true, `""`: true, "nil": true, "[]": true, "{}": true,
		"false": true, "0001-01-01T00:00:00Z": true, "1": false, "0.5": false, "10s": false, "1 (Leader)": false, `"0"`: false, "0 (": false} {
		if got := zeroValue(v); got != want {
			t.Errorf("zeroValue(%q) = %v, want %v", v, got, want)
		}
	}
}

// gossiper piggybacks an update it keeps on a ping and bumps the
// update's retransmit counter at the send, from the value the update's
// incarnation has: the counter "took away" an equal value, under
// another name.
type gossiper struct {
	Gossip map[string]*gossipItem
	Heard  int
}

type gossipItem struct {
	Sent   int
	Update gossipUpdate
}

type gossipUpdate struct {
	Node        string
	Incarnation int
}

type gossipPing struct{ Updates []gossipUpdate }

func (g *gossiper) Init(env node.Env) {
	if env.Self() == "n2" {
		g.Gossip = map[string]*gossipItem{"n3": {Sent: 1, Update: gossipUpdate{Node: "n3", Incarnation: 1}}}
		env.After(time.Millisecond, "ping")
	}
}

func (g *gossiper) Receive(_ node.Env, _ node.ID, m node.Message) {
	g.Heard = m.(gossipPing).Updates[0].Incarnation
}

func (g *gossiper) Timer(env node.Env, _ node.Timer) {
	it := g.Gossip["n3"]
	it.Sent++
	env.Send("n1", gossipPing{Updates: []gossipUpdate{it.Update}})
}

// A gossiped value is followed to the field named like the message's
// that the send left as it was, not to a counter of another name the
// send bumped from an equal value: a new user's why went to a
// retransmit counter, hop after hop, and did not name the update.
func TestWhyPrefersTheNamedFieldToACounterTheSendBumped(t *testing.T) {
	c := whyOfTwoNodes(t, "gossiper", gossipPing{}, func() node.Handler { return &gossiper{} }, "Heard")
	if len(c.Links) < 2 {
		t.Fatalf("chain %+v", c.Links)
	}
	src := c.Links[1]
	if src.Node != "n2" || src.Field != `Gossip["n3"].Update.Incarnation` {
		t.Errorf("the gossiped incarnation traced to %s %s (via %q), want n2's Gossip[\"n3\"].Update.Incarnation", src.Node, src.Field, src.Via)
	}
	if !slices.ContainsFunc(src.AlsoEqual, func(s string) bool { return strings.HasPrefix(s, `Gossip["n3"].Sent`) }) {
		t.Errorf("the counter the send bumped is not named among the equal fields: %q", src.AlsoEqual)
	}
}

type consumedReq struct{ ReqID int }
type consumedResp struct{ ID int }

// consumer keeps its own ID (1, set at Init) and the pending request
// IDs by client; its reply consumes (removes) the pending entry.
type consumer struct {
	ID      int
	Pending map[string]int
	Got     int
}

func (s *consumer) Init(env node.Env) {
	s.Pending = map[string]int{}
	if env.Self() == "n2" {
		s.ID = 1
	} else {
		env.Send("n2", consumedReq{ReqID: 1})
	}
}

func (s *consumer) Receive(env node.Env, from node.ID, m node.Message) {
	switch m := m.(type) {
	case consumedReq:
		s.Pending[string(from)] = m.ReqID
		env.After(time.Millisecond, "reply")
	case consumedResp:
		s.Got = m.ID
	}
}

func (s *consumer) Timer(env node.Env, _ node.Timer) {
	for k, v := range s.Pending {
		env.Send(node.ID(k), consumedResp{ID: v})
		delete(s.Pending, k)
	}
}

// A reply's value is followed to the pending request its step removed,
// although the request's field is named otherwise and an unchanged field
// is named like the reply's: a removal is the stronger sign (the rule
// for a counter the send overwrote must not take this case).
func TestWhyPrefersWhatTheSendRemovedToANamedField(t *testing.T) {
	c := whyOfTwoNodes(t, "consumer", []any{consumedReq{}, consumedResp{}}, func() node.Handler { return &consumer{} }, "Got")
	if len(c.Links) < 2 || c.Links[1].Field != `Pending["n1"]` {
		t.Fatalf("the reply's ID traced to %+v, want the pending request it consumed, Pending[\"n1\"]", c.Links)
	}
}
