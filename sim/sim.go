// Package sim is the discrete-event simulator driver: every node of a
// system in one process, virtual time, one seed for every choice (latency,
// loss, duplication, churn, handler randomness), partitions and
// crash/restart faults. Every run is recorded, and the same seed yields a
// byte-identical trace.
package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/system"
)

// Epoch is virtual time zero, as Env.Now reports it.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// Config is one simulated run: start from DefaultConfig. Zero fields
// take the system's defaults (WithDefaults), except Drop, Dup and Churn,
// where zero means none and Unset (negative) the system's default: a
// Config{Seed: 1} literal runs without loss, duplicates or crashes,
// whatever the system's defaults, where DefaultConfig() runs with them.
type Config struct {
	Seed       uint64
	Nodes      int
	Steps      int           // stop after this many events
	Time       time.Duration // stop at this virtual time
	LatencyMin time.Duration
	LatencyMax time.Duration
	Drop       float64 // probability a message is lost; 0: none; Unset: the system's
	Dup        float64 // probability a message is delivered twice; 0: none; Unset: the system's
	Churn      float64 // crashes per node per virtual second; 0: none; Unset: the system's
	DownMin    time.Duration
	DownMax    time.Duration
	MaxDown    int // at most this many nodes down at once (churn only); default a minority
	Bug        string
	Params     map[string]string
	// NoStateHashes leaves state hashes out of the trace.
	NoStateHashes bool
	// CausalClocks records Lamport clocks as separate processes would:
	// an event's node is not first raised to the highest clock run so
	// far. Replay's order is then causal only, as a live recording's is,
	// and an idle node's later events may replay ahead of busier nodes'
	// earlier ones (docs/predicates.md, "Idle nodes"). Off by default:
	// a simulated run replays in the order it ran, which is time order.
	// Forks and their continuations are always serial.
	CausalClocks bool
	// HashEvery and HashBytes space the state hashes (state.HashSpacing:
	// every K-th event of a node, or about B bytes hashed per event);
	// both 0: state.DefaultHashBytes.
	HashEvery int
	HashBytes int
	// Log receives handler log lines; nil discards them.
	Log io.Writer
	// Observe is called after every event, in dispatch order, with the
	// node that ran it. An error stops the run and is returned.
	Observe func(ev *node.Event, in *node.Instance) error
	// Progress is called every few thousand events.
	Progress func(steps int, now time.Duration)
	// Stop, if set, is polled every stopEvery events: when it says so the
	// run ends with ErrInterrupted, cut where it was (a search being
	// interrupted discards it; a run of thousands of nodes takes minutes).
	// It is also polled from another goroutine while a handler runs long,
	// so that a handler that never returns does not keep the run going:
	// it must be safe to call from any goroutine.
	Stop func() bool
	// HandlerBound is how long, in wall-clock time, one handler call may
	// run before the run ends with a *StallError, the trace kept up to
	// the event before (0: DefaultHandlerBound; < 0: no bound).
	HandlerBound time.Duration
	// OnStall, if set, is told (from another goroutine) when a handler
	// call has run for 10 s: a handler that does not return cannot be
	// stopped, only left behind.
	OnStall func(id node.ID, kind node.Kind, running time.Duration)
	// Chooser makes the run's nondeterministic decisions; nil: the
	// Seeded chooser for Seed, which is what a seed alone reproduces.
	Chooser Chooser
	// TaskBound is the wall time a resumed task may run without blocking
	// through the runtime (0: node.DefaultTaskBound).
	TaskBound time.Duration
	// Codec is the message encoding the run records (a trace header's
	// codec); empty: node.CodecName. A fork or a schedule of a recording
	// made by an earlier release sets it, so that the run's messages are
	// encoded as its recorded prefix's were.
	Codec string
}

// Unset marks a float setting that should take the system's default.
const Unset = -1.0

// Limits of a simulated run, beyond which it would exhaust memory or spin
// without advancing.
const (
	// MaxNodes bounds a run's size: that of a trace (record.MaxNodes).
	// The nodes share one node set (node.Members) and one system
	// configuration, so the driver's own memory grows linearly; what
	// each system's nodes keep about the others is the system's.
	MaxNodes = record.MaxNodes
	// MaxChurn bounds the crash rate per node per virtual second. A
	// crashed node stays down for DownMin at least and a crash that
	// would exceed MaxDown is redrawn, so higher rates add no crashes,
	// only redraws: at 1e9 the run never got past its first millisecond.
	MaxChurn = 1000.0
)

// CheckConfig reports a run of sys under cfg (after WithDefaults) that
// cannot be done: an unknown bug, a setting out of range, or a
// configuration the system's own Validate hook refuses. Run calls it;
// front ends call it to refuse a run before preparing its output.
func CheckConfig(sys *system.System, cfg Config) error {
	if err := checkDefaults(sys); err != nil {
		return err
	}
	if err := sys.CheckBug(cfg.Bug); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	return sys.CheckConfig(system.Config{Bug: cfg.Bug, Nodes: sys.NodeIDs(cfg.Nodes), Params: cfg.Params})
}

// DefaultConfig returns a config whose every setting takes the system's
// default.
func DefaultConfig() Config {
	return Config{Drop: Unset, Dup: Unset, Churn: Unset}
}

// WithDefaults fills unset fields from the system's defaults.
func (c Config) WithDefaults(sys *system.System) Config {
	d := sys.Sim
	setInt := func(v *int, def, fallback int) {
		if *v <= 0 {
			*v = def
		}
		if *v <= 0 {
			*v = fallback
		}
	}
	setDur := func(v *time.Duration, def, fallback time.Duration) {
		if *v <= 0 {
			*v = def
		}
		if *v <= 0 {
			*v = fallback
		}
	}
	setInt(&c.Nodes, d.Nodes, 3)
	setInt(&c.Steps, d.Steps, 100_000)
	setDur(&c.Time, d.Time, time.Minute)
	setDur(&c.LatencyMin, d.LatencyMin, time.Millisecond)
	setDur(&c.LatencyMax, d.LatencyMax, 10*time.Millisecond)
	setDur(&c.DownMin, d.DownMin, 50*time.Millisecond)
	setDur(&c.DownMax, d.DownMax, 500*time.Millisecond)
	if c.Drop < 0 {
		c.Drop = d.Drop
	}
	if c.Dup < 0 {
		c.Dup = d.Dup
	}
	if c.Churn < 0 {
		c.Churn = d.Churn
	}
	if c.MaxDown <= 0 {
		c.MaxDown = max(1, (c.Nodes-1)/2)
	}
	if c.Bug == "" {
		c.Bug = "none"
	}
	c.LatencyMax = max(c.LatencyMax, c.LatencyMin)
	c.DownMax = max(c.DownMax, c.DownMin)
	return c
}

// checkDefaults reports a SimDefaults of the system that no run can use,
// naming the field: Validate's message names a flag, which the user did
// not give. Zero means "the simulator's default" in every field.
func checkDefaults(sys *system.System) error {
	d := sys.Sim
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("system %q: SimDefaults.%s %v: %s", sys.Name, field, v, why)
	}
	switch {
	case d.Nodes < 0 || d.Nodes > MaxNodes:
		return bad("Nodes", d.Nodes, fmt.Sprintf("between 1 and %d (0: 3)", MaxNodes))
	case d.Steps < 0:
		return bad("Steps", d.Steps, "at least one step (0: 100,000)")
	case d.Time < 0:
		return bad("Time", d.Time, "a positive virtual time (0: one minute)")
	case !(d.Drop >= 0 && d.Drop <= 1):
		return bad("Drop", d.Drop, "a probability is between 0 and 1")
	case !(d.Dup >= 0 && d.Dup <= 1):
		return bad("Dup", d.Dup, "a probability is between 0 and 1")
	case !(d.Churn >= 0 && d.Churn <= MaxChurn):
		return bad("Churn", d.Churn, fmt.Sprintf("a rate between 0 and %g crashes per node per virtual second", MaxChurn))
	case d.LatencyMin < 0 || d.LatencyMax < 0 || d.LatencyMin > 0 && d.LatencyMax > 0 && d.LatencyMax < d.LatencyMin:
		return bad("LatencyMin/Max", fmt.Sprintf("%v-%v", d.LatencyMin, d.LatencyMax), "want 0 < MIN <= MAX (0: 1ms-10ms)")
	case d.DownMin < 0 || d.DownMax < 0 || d.DownMin > 0 && d.DownMax > 0 && d.DownMax < d.DownMin:
		return bad("DownMin/Max", fmt.Sprintf("%v-%v", d.DownMin, d.DownMax), "want 0 < MIN <= MAX (0: 50ms-500ms)")
	}
	return nil
}

// Validate reports a setting no run can use (after WithDefaults). Errors
// name the `replay sim` flag of the setting. Comparisons are written so
// that NaN fails them.
func (c Config) Validate() error {
	if c.Codec != "" {
		if err := node.SupportedCodec(c.Codec); err != nil {
			return err
		}
	}
	switch {
	case c.Nodes < 1:
		return fmt.Errorf("--nodes %d: need at least one node", c.Nodes)
	case c.Nodes > MaxNodes:
		return fmt.Errorf("--nodes %d: the simulator runs at most %d nodes (the largest system a trace can hold)", c.Nodes, MaxNodes)
	case c.Steps < 1:
		return fmt.Errorf("--steps %d: need at least one step", c.Steps)
	case c.Time <= 0:
		return fmt.Errorf("--time %v: need a positive virtual time", c.Time)
	case !(c.Drop >= 0 && c.Drop <= 1):
		return fmt.Errorf("--drop %v: a probability is between 0 and 1", c.Drop)
	case !(c.Dup >= 0 && c.Dup <= 1):
		return fmt.Errorf("--dup %v: a probability is between 0 and 1", c.Dup)
	case !(c.Churn >= 0 && c.Churn <= MaxChurn):
		return fmt.Errorf("--churn %v: a rate is between 0 and at most %g crashes per node per virtual second", c.Churn, MaxChurn)
	case c.LatencyMin <= 0 || c.LatencyMax < c.LatencyMin:
		return fmt.Errorf("--latency %v-%v: want 0 < MIN <= MAX", c.LatencyMin, c.LatencyMax)
	case c.DownMin <= 0 || c.DownMax < c.DownMin:
		return fmt.Errorf("--down %v-%v: want 0 < MIN <= MAX", c.DownMin, c.DownMax)
	case c.MaxDown < 1 || c.MaxDown > c.Nodes:
		return fmt.Errorf("--max-down %d: between 1 and the number of nodes (%d)", c.MaxDown, c.Nodes)
	}
	return nil
}

// after is the virtual time d after now, saturating at the last
// representable instant: a delay beyond it (a tiny churn rate, a huge
// timer) means "never", not a wrap into the past.
func after(now, d int64) int64 {
	if d > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + d
}

// Result summarises a finished run.
type Result struct {
	Steps  int
	Time   time.Duration
	Reason string
	Stats  Stats
}

// Stats count what the network and the fault injector did.
type Stats struct {
	// Every message sent (to itself too) is, at the end, delivered,
	// lost, cut by a partition, addressed to a down node, or in flight:
	// Sent + Duplicated = Delivered + Lost + Partitioned + ToDownNode +
	// InFlight.
	Sent, Delivered, Lost, Partitioned, ToDownNode, Duplicated, InFlight int64
	Crashes, Restarts, InputsLost                                        int64
	// LostByParent: of Lost, in a fork (RunFrom), the messages of the
	// world in flight at the fork that the parent run had already lost
	// (never received past their latency). Not in the trace's end
	// record, which keeps its keys.
	LostByParent int64
}

func (s Stats) asMap() map[string]int64 {
	return map[string]int64{
		"sent": s.Sent, "delivered": s.Delivered, "lost": s.Lost, "partitioned": s.Partitioned,
		"to_down_node": s.ToDownNode, "duplicated": s.Duplicated, "crashes": s.Crashes,
		"restarts": s.Restarts, "inputs_lost": s.InputsLost, "in_flight": s.InFlight,
	}
}

type simNode struct {
	id          node.ID
	inst        *node.Instance
	store       *node.MemStore
	incarnation int
	src         source
	// held counts the scenario's crashes of the node. A restart that
	// churn or a chooser planned before the latest of them does not
	// happen: the scenario's crash keeps the node down until the
	// scenario restarts it, even if the node was already down.
	held int
}

// Sim is one run in progress. It implements system.Controller for the
// system's scenario.
type Sim struct {
	sys     *system.System
	codec   *node.Codec // sys.Codec, encoding as cfg.Codec names
	cfg     Config
	sysCfg  system.Config
	ids     []node.ID
	members *node.Members // ids, shared by every instance
	pacer   *state.HashPacer
	nodes   map[node.ID]*simNode
	chooser Chooser // network, churn, order and handler seeds
	// withheld counts the messages a Withholder kept from the run: in
	// flight at its end.
	withheld int64
	scenRand *rand.Rand // the scenario's own stream
	queue    queue
	// calls are the queued scenario actions (itemCall), a heap by time:
	// Choice.Due asks for the earliest. A scenario may queue one per
	// node (joins, churn), so neither adding nor taking one walks them.
	calls callHeap
	// Scratch of the chooser's walks over the queue (Sim.enabled, runDue).
	frontier []int
	runnable []*item
	qseq     uint64
	now      int64 // virtual ns since start
	start    int64 // the time origin (Unix ns): Epoch, or a forked trace's
	until    int64 // the time limit, in virtual ns since start
	steps    int
	w        *record.Writer
	groups   map[node.ID]int // partition: group of each node; nil when healed
	down     int
	stops    []func() bool
	stopped  string
	stats    Stats
	err      error
	watchState
	// serialClock is the highest Lamport clock run so far: each event's
	// node is raised to it first, so that the trace's causal order is the
	// order run, which is time order (record.Header.SerialClocks).
	serialClock uint64
	causal      bool // Config.CausalClocks, until a fork's continuation
}

// Run simulates sys under cfg (after WithDefaults) and writes the trace to
// out.
func Run(sys *system.System, cfg Config, out io.Writer) (*Result, error) {
	if err := CheckConfig(sys, cfg); err != nil {
		return nil, err
	}
	s := newSim(sys, cfg, sys.NodeIDs(cfg.Nodes))
	w, err := record.NewWriter(out, s.header(), record.WriterOptions{})
	if err != nil {
		return nil, err
	}
	s.w = w
	for _, id := range s.ids {
		s.addNode(id)
		s.push(&item{kind: itemInit, to: id})
	}
	if cfg.Churn > 0 {
		for _, id := range s.ids {
			s.scheduleCrash(id)
		}
	}
	if sys.Scenario != nil {
		if err := s.scenario(func() { sys.Scenario(s) }); err != nil {
			return s.finish(err)
		}
	}
	return s.runWatched(s.loop)
}

// scenario runs the system's scenario code (its setup, or an action it
// scheduled), turning a panic in it into the run's error: the system's
// own code failed, as when a handler panics, and the trace of what ran is
// kept.
func (s *Sim) scenario(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("seed %d, the scenario at %v: panic: %v", s.cfg.Seed, time.Duration(s.now), r)
		}
	}()
	fn()
	return nil
}

// newSim prepares a run of nodes ids, starting at virtual time zero.
func newSim(sys *system.System, cfg Config, ids []node.ID) *Sim {
	if sys.CryptoRand {
		node.InterceptCryptoRand()
	}
	s := &Sim{
		sys:      sys,
		cfg:      cfg,
		ids:      ids,
		nodes:    map[node.ID]*simNode{},
		chooser:  cfg.Chooser,
		scenRand: rand.New(rand.NewPCG(cfg.Seed, 0x5ce7)),
		start:    Epoch,
		until:    int64(cfg.Time),
		causal:   cfg.CausalClocks,
	}
	if s.chooser == nil {
		s.chooser = NewSeeded(cfg.Seed)
	}
	s.codec = sys.Codec
	if cfg.Codec != "" {
		// Validate has refused a codec this build does not know.
		if c, err := sys.Codec.ForTrace(cfg.Codec); err == nil {
			s.codec = c
		}
	}
	s.sysCfg = system.NewConfig(cfg.Bug, s.ids, cfg.Params)
	s.members = node.NewMembers(s.ids)
	s.pacer = state.NewHashPacer(cfg.hashSpacing())
	return s
}

// hashSpacing is the run's state-hash spacing.
func (c Config) hashSpacing() state.HashSpacing {
	if c.HashEvery == 0 && c.HashBytes == 0 {
		return state.HashSpacing{Bytes: state.DefaultHashBytes}
	}
	return state.HashSpacing{Every: c.HashEvery, Bytes: c.HashBytes}
}

// header is the trace header of the run.
func (s *Sim) header() record.Header {
	run := s.cfg.runParams()
	// A trace names the chooser that made it; none named means Seeded,
	// which keeps seeded traces byte-identical to those made before
	// choosers existed.
	if _, seeded := s.chooser.(*Seeded); !seeded {
		run["chooser"] = s.chooser.Describe()
	}
	return record.Header{
		System: s.sys.Name, Nodes: s.ids, Recorded: s.ids, Bug: s.cfg.Bug, Params: s.cfg.Params,
		Run:   run,
		Types: s.sys.Codec.Names(), Driver: "sim", Start: s.start, StateHashes: !s.cfg.NoStateHashes, Codec: s.cfg.Codec,
		HashEvery: s.cfg.hashSpacing().Every, HashBytes: s.cfg.hashSpacing().Bytes,
		SerialClocks: s.serialFrom(),
	}
}

// ParseClocks reads the clocks setting of a run (replay sim --clocks, a
// schedule's clocks line): serial (the default) or causal, which is
// Config.CausalClocks.
func ParseClocks(s string) (causal bool, err error) {
	switch s {
	case "serial":
		return false, nil
	case "causal":
		return true, nil
	}
	return false, fmt.Errorf("clocks %q: want serial (replay in the order simulated, the default) or causal (clocks as separate processes record them)", s)
}

// serialFrom is the header's serial_clocks: a run is serial from its first
// event, whose clock is 1, unless it records causal clocks only.
func (s *Sim) serialFrom() uint64 {
	if s.cfg.CausalClocks {
		return 0
	}
	return 1
}

// addNode builds a node that has not started.
func (s *Sim) addNode(id node.ID) *simNode {
	sn := &simNode{id: id, store: node.NewMemStore()}
	sn.src = source{s: s, n: sn}
	sn.inst = node.NewInstance(node.Config{
		ID: id, Nodes: s.ids, Members: s.members, Codec: s.codec, Store: sn.store, TaskBound: s.cfg.TaskBound,
		New: func() node.Handler { return s.sys.New(id, s.sysCfg) },
	})
	s.nodes[id] = sn
	return sn
}

// finalStates hashes the state of every running node whose last event
// carries no hash, for the end record.
func (s *Sim) finalStates() []record.FinalState {
	if s.cfg.NoStateHashes {
		return nil
	}
	var states []record.FinalState
	for _, h := range s.pacer.Final(s.ids, func(id node.ID) *node.Instance { return s.nodes[id].inst }) {
		states = append(states, record.FinalState(h))
	}
	return states
}

// finish closes the trace with the run's end.
func (s *Sim) finish(runErr error) (*Result, error) {
	res, err := s.end(runErr, s.finalStates())
	s.endTasks()
	return res, err
}

// end closes the trace with its end record (the final states given) and
// returns the run's result.
func (s *Sim) end(runErr error, states []record.FinalState) (*Result, error) {
	s.stats.InFlight += s.withheld
	for _, sl := range s.queue {
		if sl.it.kind == itemDeliver {
			s.stats.InFlight++
		}
	}
	end := record.End{Reason: s.stopped, Time: s.start + s.now, Stats: s.stats.asMap(), States: states}
	switch {
	case runErr == ErrInterrupted:
		end.Reason = "interrupted" // Stop: as an observer's stop reads
	case runErr != nil:
		end.Reason = "error: " + runErr.Error()
	}
	switch err := s.w.Close(end); {
	case err == nil:
	case runErr == nil:
		runErr = fmt.Errorf("write trace: %w", err)
	default:
		runErr = fmt.Errorf("%w (and the trace could not be ended: %w)", runErr, err)
	}
	return &Result{Steps: s.steps, Time: time.Duration(s.now), Reason: s.stopped, Stats: s.stats}, runErr
}

func (c Config) runParams() map[string]string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	run := map[string]string{
		"seed": strconv.FormatUint(c.Seed, 10), "nodes": strconv.Itoa(c.Nodes),
		"steps": strconv.Itoa(c.Steps), "time": c.Time.String(),
		"latency": c.LatencyMin.String() + "-" + c.LatencyMax.String(),
		"drop":    f(c.Drop), "dup": f(c.Dup), "churn": f(c.Churn),
		"down": c.DownMin.String() + "-" + c.DownMax.String(), "max_down": strconv.Itoa(c.MaxDown),
	}
	if c.CausalClocks {
		run["clocks"] = "causal"
	}
	return run
}

func (s *Sim) loop() error {
	c := &Choice{s: s}
	for s.stopped == "" {
		if s.steps >= s.cfg.Steps {
			s.stopped = fmt.Sprintf("step limit (%d)", s.cfg.Steps)
			break
		}
		c.built = false
		d, err := s.chooser.Next(c)
		if err != nil {
			return err
		}
		switch {
		case d.Stop != "":
			s.stopped = d.Stop
		case d.Crash != "" || d.Restart != "":
			err = s.inject(d)
		case d.Advance && d.AdvanceOne:
			_, _, err = s.runOneDue(max(s.now, int64(d.At)), math.MaxUint64)
		case d.Advance:
			_, err = s.runDue(max(s.now, int64(d.At)), math.MaxUint64)
		case d.InTimeOrder:
			err = s.runEarliest()
		default:
			err = s.runChosen(c, d)
		}
		if err != nil {
			return err
		}
		if s.err != nil {
			return s.err
		}
	}
	return nil
}

// ReasonQuiet is Result.Reason for a run that ended because nothing was
// left to happen: no message in flight, no timer set, no input to come.
const ReasonQuiet = "no events left"

// runEarliest runs the queue's earliest item at its own time.
func (s *Sim) runEarliest() error {
	if s.queue.Len() == 0 {
		s.stopped = ReasonQuiet
		return nil
	}
	it := s.queue.first()
	if it.at > s.until {
		s.stopped = fmt.Sprintf("time limit (%v)", s.cfg.Time)
		return nil
	}
	s.unqueue(s.queue.pop())
	s.now = it.at
	return s.run(it)
}

// runChosen runs the event a chooser picked, at the time it picked, after
// every scenario action and item that runs no handler due before it.
// With nothing enabled (only such items are due) it runs the earliest.
func (s *Sim) runChosen(c *Choice, d Decision) error {
	en := c.Enabled()
	if len(en) == 0 {
		return s.runEarliest()
	}
	if d.Index < 0 || d.Index >= len(en) {
		return fmt.Errorf("chooser %s picked event %d of %d", s.chooser.Describe(), d.Index, len(en))
	}
	p := en[d.Index]
	at := int64(d.At)
	if at < max(s.now, int64(p.Earliest)) || at > int64(p.Latest) {
		return fmt.Errorf("chooser %s runs %s at %v, outside its window %v..%v", s.chooser.Describe(), p,
			d.At, max(time.Duration(s.now), p.Earliest), p.Latest)
	}
	if at > s.until {
		s.stopped = fmt.Sprintf("time limit (%v)", s.cfg.Time)
		return nil
	}
	if done, err := s.runDue(at, p.it.seq); done || err != nil {
		return err
	}
	if p.it.index < 0 || !s.wouldRun(p.it) {
		return nil // what ran before it made it moot (a crash of its node)
	}
	s.unqueue(s.queue.remove(p.it.index))
	s.now = at
	return s.run(p.it)
}

// runDue runs, in time order, the scenario actions and items that run no
// handler whose time is up before (at, seq). A message to a down node is
// due only once its whole latency window has passed: until then it may
// still arrive after the node restarts (or a partition heals).
func (s *Sim) runDue(at int64, seq uint64) (done bool, err error) {
	for {
		ran, done, err := s.runOneDue(at, seq)
		if !ran || done || err != nil {
			return done, err
		}
	}
}

// runOneDue runs the first of what runDue runs, if anything is due.
func (s *Sim) runOneDue(at int64, seq uint64) (ran, done bool, err error) {
	due := s.nextDue(at, seq)
	if due == nil {
		return false, false, nil
	}
	s.unqueue(s.queue.remove(due.index))
	s.now = max(s.now, due.latest)
	if err := s.run(due); err != nil {
		return true, true, err
	}
	return true, s.stopped != "" || s.err != nil, nil
}

// nextDue is the first scenario action or item that runs no handler
// due before (at, seq), in time order, or nil.
func (s *Sim) nextDue(at int64, seq uint64) *item {
	// An item is never due before it starts: those starting after at,
	// and all after them in the queue's order, are not looked at.
	var due *item
	s.queue.ascend(&s.frontier, func(it *item) bool {
		if it.at > at {
			return false
		}
		if it.latest > at || it.latest == at && it.seq >= seq || s.wouldRun(it) {
			return true
		}
		if due == nil || it.latest < due.latest || it.latest == due.latest && it.seq < due.seq {
			due = it
		}
		return true
	})
	return due
}

// inject crashes or restarts a node on a chooser's decision, at its time
// (after what is due before it); a crash schedules the restart after
// Down (0: never).
func (s *Sim) inject(d Decision) error {
	id, kind, verb := d.Crash, itemCrash, "crashes"
	if d.Restart != "" {
		id, kind, verb = d.Restart, itemRestart, "restarts"
	}
	at := max(s.now, int64(d.At))
	if at > s.until {
		s.stopped = fmt.Sprintf("time limit (%v)", s.cfg.Time)
		return nil
	}
	if done, err := s.runDue(at, 0); done || err != nil {
		return err
	}
	it := &item{at: at, kind: kind, to: id}
	if sn, ok := s.nodes[id]; !ok || !s.wouldRun(it) {
		state := "not a node of this run"
		if ok && sn.inst.Up() {
			state = "up"
		} else if ok {
			state = "down"
		}
		return fmt.Errorf("chooser %s %s %q at %v, but it is %s", s.chooser.Describe(), verb, id, time.Duration(at), state)
	}
	s.now = at
	if err := s.run(it); err != nil {
		return err
	}
	if d.Crash != "" && d.Down > 0 {
		s.push(&item{at: after(s.now, int64(d.Down)), kind: itemRestart, to: id, planned: true, held: s.nodes[id].held})
	}
	return nil
}

func (s *Sim) run(it *item) error {
	sn := s.nodes[it.to]
	switch it.kind {
	case itemCall:
		return s.scenario(it.fn)
	case itemInit:
		return s.dispatch(sn, &node.Event{Kind: node.KindInit})
	case itemDeliver:
		if !sn.inst.Up() {
			s.stats.ToDownNode++
			return nil
		}
		if s.partitioned(it.ev.From, it.to) {
			s.stats.Partitioned++
			return nil
		}
		s.stats.Delivered++
		ev := it.ev
		return s.dispatch(sn, &ev)
	case itemTimer:
		if !sn.inst.Up() || sn.incarnation != it.incarnation || !sn.inst.TimerPending(it.ev.TimerID) {
			return nil
		}
		ev := it.ev
		return s.dispatch(sn, &ev)
	case itemInput:
		if !sn.inst.Up() {
			s.stats.InputsLost++
			return nil
		}
		ev := it.ev
		return s.dispatch(sn, &ev)
	case itemCrash:
		if !sn.inst.Up() {
			return nil
		}
		s.stats.Crashes++
		s.down++
		sn.incarnation++
		return s.dispatch(sn, &node.Event{Kind: node.KindCrash, Scripted: it.scripted})
	case itemTask:
		if !s.wouldRun(it) {
			return nil
		}
		ev := it.ev
		return s.dispatch(sn, &ev)
	case itemRestart:
		if sn.inst.Up() || sn.inst.Seq() == 0 || it.planned && it.held != sn.held {
			return nil
		}
		s.stats.Restarts++
		s.down--
		return s.dispatch(sn, &node.Event{Kind: node.KindRestart, Scripted: it.scripted})
	}
	return fmt.Errorf("sim: unknown queue item %d", it.kind)
}

func (s *Sim) dispatch(sn *simNode, ev *node.Event) error {
	ev.Time = s.start + s.now
	if !s.causal && sn.inst.Lamport() < s.serialClock {
		sn.inst.Resume(sn.inst.Seq(), s.serialClock)
	}
	if !s.enterHandler(sn, ev.Kind) {
		return errAbandoned
	}
	err := sn.inst.Dispatch(ev, sn.src)
	if !s.leaveHandler() {
		return errAbandoned // given up on while the handler ran: touch nothing
	}
	if err != nil {
		return fmt.Errorf("seed %d, event %d at %v: %w", s.cfg.Seed, s.steps, time.Duration(s.now), err)
	}
	s.serialClock = max(s.serialClock, ev.Lamport)
	if !s.cfg.NoStateHashes {
		s.pacer.After(ev, sn.inst)
	}
	if err := s.w.Append(ev); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	s.steps++
	for i, snd := range ev.Sends {
		s.send(ev, i, snd)
	}
	for _, t := range ev.TimersSet {
		s.push(&item{at: after(s.now, int64(t.After)), kind: itemTimer, to: sn.id, incarnation: sn.incarnation,
			ev: node.Event{Kind: node.KindTimer, TimerID: t.ID, TimerName: t.Name}})
	}
	s.queueTasks(sn, ev.Woken)
	if s.cfg.Log != nil {
		for _, l := range ev.Logs {
			fmt.Fprintf(s.cfg.Log, "%v %s %s %s %s\n", time.Duration(s.now), sn.id, l.Level, l.Msg, l.Attrs)
		}
	}
	if s.cfg.Observe != nil {
		if err := s.cfg.Observe(ev, sn.inst); err != nil {
			if errors.Is(err, ErrStopped) {
				// An observer may say why (fmt.Errorf("interrupted: %w",
				// ErrStopped)): the trace's end then says it, as the
				// command's output does.
				s.stopped = "stopped by observer"
				if why, ok := strings.CutSuffix(err.Error(), ": "+ErrStopped.Error()); ok && why != "" {
					s.stopped = why
				}
				return nil
			}
			return err
		}
	}
	if s.cfg.Stop != nil && s.steps%stopEvery == 0 && s.cfg.Stop() {
		return ErrInterrupted
	}
	if s.cfg.Progress != nil && s.steps%4096 == 0 {
		s.cfg.Progress(s.steps, time.Duration(s.now))
	}
	for _, cond := range s.stops {
		done := false
		if err := s.scenario(func() { done = cond() }); err != nil {
			return fmt.Errorf("%w (in a StopWhen condition)", err)
		}
		if done {
			s.stopped = "scenario done"
			break
		}
	}
	return nil
}

// send puts one message on the simulated network. A message to self is
// never lost; others may be lost, duplicated, or cut by a partition.
func (s *Sim) send(ev *node.Event, i int, snd node.Send) {
	msg := node.Event{Kind: node.KindRecv, From: ev.Node, MsgSeq: ev.Seq, MsgIndex: uint32(i),
		SendLamport: ev.Lamport, MsgType: snd.Type, Payload: snd.Payload}
	s.stats.Sent++
	if snd.To == ev.Node {
		s.deliverLater(snd.To, msg)
		return
	}
	if s.partitioned(ev.Node, snd.To) {
		s.stats.Partitioned++
		return
	}
	if s.lose(msg.Msg(), snd.To) {
		return
	}
	s.deliverLater(snd.To, msg)
	if s.chooser.Duplicate(msg.Msg(), snd.To, s.cfg.Dup) {
		s.stats.Duplicated++
		s.deliverLater(snd.To, msg)
	}
}

// lose asks the chooser whether the network loses a message, and counts
// it: lost, or, when a Withholder keeps it from the run instead, in flight
// at the end.
func (s *Sim) lose(msg node.MsgID, to node.ID) bool {
	if !s.chooser.Lose(msg, to, s.cfg.Drop) {
		return false
	}
	if w, ok := s.chooser.(Withholder); ok && w.Withhold(msg, to) {
		s.withheld++
	} else {
		s.stats.Lost++
	}
	return true
}

// deliverLater queues a delivery: at the time the chooser picks, and no
// later than the latency range allows (the window an exploring chooser
// chooses within).
func (s *Sim) deliverLater(to node.ID, msg node.Event) {
	lat := s.chooser.Latency(s.cfg.LatencyMin, s.cfg.LatencyMax)
	s.push(&item{at: after(s.now, int64(lat)), latest: after(s.now, int64(max(lat, s.cfg.LatencyMax))), kind: itemDeliver, to: to, ev: msg})
}

func (s *Sim) partitioned(a, b node.ID) bool {
	if s.groups == nil || a == b {
		return false
	}
	return s.groups[a] != s.groups[b]
}

// scheduleCrash draws the next random crash of a node: exponential
// inter-arrival times at the churn rate.
func (s *Sim) scheduleCrash(id node.ID) {
	// after saturates: a wait beyond the end of time never comes.
	at := after(s.now, int64(s.chooser.ChurnWait(s.cfg.Churn)))
	s.push(&item{at: at, kind: itemCall, fn: func() {
		sn := s.nodes[id]
		if !sn.inst.Up() || s.down >= s.cfg.MaxDown {
			s.scheduleCrash(id)
			return
		}
		s.push(&item{at: s.now, kind: itemCrash, to: id}) // not s.Crash: that is the scenario's
		down := s.chooser.DownFor(s.cfg.DownMin, s.cfg.DownMax)
		held := sn.held
		s.push(&item{at: after(s.now, int64(down)), kind: itemCall, fn: func() {
			// Marked planned, as Restart's item but for that: a scenario
			// crash queued at this time runs before it and keeps the
			// node down (simNode.held).
			s.push(&item{at: s.now, kind: itemRestart, to: id, planned: true, held: held})
			s.push(&item{at: s.now, kind: itemCall, fn: func() { s.scheduleCrash(id) }})
		}})
	}})
}

func (s *Sim) push(it *item) {
	s.qseq++
	it.seq = s.qseq
	// Everything but a message runs at an exact time: its window is
	// closed.
	it.latest = max(it.latest, it.at)
	s.queue.push(it)
	if it.kind == itemCall {
		heap.Push(&s.calls, it)
	}
}

// unqueue notes that it left the queue. A call leaves it earliest first
// (it runs no handler, so it is never chosen over one due before it).
func (s *Sim) unqueue(it *item) {
	if it.kind != itemCall {
		return
	}
	if len(s.calls) > 0 && s.calls[0] == it {
		heap.Pop(&s.calls)
		return
	}
	if i := slices.Index(s.calls, it); i >= 0 {
		heap.Remove(&s.calls, i)
	}
}

// callHeap orders queued calls by (time, seq), as the queue does.
type callHeap []*item

func (h callHeap) Len() int { return len(h) }
func (h callHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}
func (h callHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *callHeap) Push(x any)   { *h = append(*h, x.(*item)) }
func (h *callHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}

// source serves a simulated node's nondeterminism from the run's generator.
type source struct {
	s *Sim
	n *simNode
}

func (src source) Clock() int64                      { return src.s.start + src.s.now }
func (src source) Seed() uint64                      { return src.s.chooser.Seed() }
func (src source) DiskGet(key string) ([]byte, bool) { return src.n.store.Get(key) }
func (src source) CryptoRead(p []byte) {
	src.s.chooser.CryptoRead(p)
}

// Controller implementation.

// Nodes implements system.Controller.
func (s *Sim) Nodes() []node.ID { return slices.Clone(s.ids) }

// Config implements system.Controller.
func (s *Sim) Config() system.Config { return s.sysCfg }

// Now implements system.Controller.
func (s *Sim) Now() time.Duration { return time.Duration(s.now) }

// Rand implements system.Controller.
func (s *Sim) Rand() *rand.Rand { return s.scenRand }

// At implements system.Controller.
func (s *Sim) At(t time.Duration, fn func()) {
	s.push(&item{at: max(int64(t), s.now), kind: itemCall, fn: fn})
}

// Input implements system.Controller.
func (s *Sim) Input(id node.ID, m node.Message) {
	if s.checkNode(id) {
		return
	}
	name, payload, err := s.codec.Encode(m)
	if err != nil {
		s.fail(fmt.Errorf("scenario input to %s: %w", id, err))
		return
	}
	s.push(&item{at: s.now, kind: itemInput, to: id, ev: node.Event{Kind: node.KindInput, MsgType: name, Payload: payload}})
}

// Crash implements system.Controller. The node stays down until the
// scenario restarts it: a restart that churn or a chooser planned for it
// (it may be down already) does not happen.
func (s *Sim) Crash(id node.ID) {
	if !s.checkNode(id) {
		s.nodes[id].held++
		s.push(&item{at: s.now, kind: itemCrash, to: id, scripted: true})
	}
}

// Restart implements system.Controller.
func (s *Sim) Restart(id node.ID) {
	if !s.checkNode(id) {
		s.push(&item{at: s.now, kind: itemRestart, to: id, scripted: true})
	}
}

// Partition implements system.Controller.
func (s *Sim) Partition(groups ...[]node.ID) {
	g := map[node.ID]int{}
	for _, id := range s.ids {
		g[id] = len(groups) // nodes in no group form one more group
	}
	for i, grp := range groups {
		for _, id := range grp {
			if s.checkNode(id) {
				return
			}
			g[id] = i
		}
	}
	s.groups = g
}

// Heal implements system.Controller.
func (s *Sim) Heal() { s.groups = nil }

// Handler implements system.Controller.
func (s *Sim) Handler(id node.ID) node.Handler {
	if sn, ok := s.nodes[id]; ok && sn.inst.Up() {
		return sn.inst.Handler()
	}
	return nil
}

// Instance returns a node's instance (for tests and observers).
func (s *Sim) Instance(id node.ID) *node.Instance {
	if sn, ok := s.nodes[id]; ok {
		return sn.inst
	}
	return nil
}

// StopWhen implements system.Controller.
func (s *Sim) StopWhen(cond func() bool) { s.stops = append(s.stops, cond) }

// Stop implements system.Controller.
func (s *Sim) Stop() {
	if s.stopped == "" {
		s.stopped = "scenario done"
	}
}

func (s *Sim) checkNode(id node.ID) bool {
	if _, ok := s.nodes[id]; !ok {
		s.fail(fmt.Errorf("scenario names node %q, which is not in this run", id))
		return true
	}
	return false
}

func (s *Sim) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// ErrInterrupted ends a run that Config.Stop stopped.
var ErrInterrupted = errors.New("interrupted")

// stopEvery is how many events a run goes between looks at Config.Stop:
// a look per event would cost more than small events do.
const stopEvery = 256

// ErrStopped can be returned by an Observe function to end a run early
// without an error.
var ErrStopped = errors.New("stopped by observer")
