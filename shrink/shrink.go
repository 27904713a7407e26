package shrink

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/explore"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/system"
)

// Options say what to shrink for and how long to try.
type Options struct {
	// Script is the predicates script; Predicate the name of the one that
	// must still fail ("": the first violation the trace has).
	Script    string
	Predicate string
	// Check carries the registry and the script's budgets; shrink sets
	// which violations count.
	Check simtest.Options
	// Time bounds the wall-clock time (0: none). When it runs out, or ctx
	// is done, Shrink returns the smallest run found so far.
	Time time.Duration
	// From names the trace in the shrunk trace's header (shrunk_from).
	From string
	// Progress is told after every candidate.
	Progress func(Progress)
	// HandlerBound bounds each handler call of a candidate run
	// (sim.Config.HandlerBound; 0: the simulator's default): a candidate
	// whose handler does not return is given up on and does not fail
	// the same way. A stuck candidate also ends when ctx is done.
	HandlerBound time.Duration
	// NoLoss: candidates lose no message, as for a liveness target: no
	// delivery is left out, and messages a candidate's base never had
	// are delivered. For a predicate that holds only on a network that
	// loses nothing (a failure detector's accuracy), which a shrink that
	// drops messages would break without the bug.
	NoLoss bool
}

// Progress is where a shrink is.
type Progress struct {
	Phase      string
	Candidates int
	Events     int // of the smallest failing run so far
	Start      int // of the trace given
	Elapsed    time.Duration
}

// Result is the smallest failing run found.
type Result struct {
	Trace     []byte // an ordinary simulated trace, its header naming the original
	Predicate string
	Violation *predicates.Violation // where the shrunk trace fails
	Report    *predicates.Report    // of the shrunk trace, up to that violation
	// Schedule re-runs the shrunk trace under `replay sim --schedule`;
	// nil when it cannot (NoSchedule says why).
	Schedule   *sim.Schedule
	NoSchedule string
	Before     Size
	After      Size
	Candidates int // runs tried
	Accepted   int // of which failed the same way (not all of them smaller)
	// CutOnly says that cutting the run after its violation was all that
	// made it smaller: no phase found an event before it that could go.
	CutOnly bool
	// Unevaluated counts candidates on which a predicate could not be
	// evaluated: they count as not failing the same way, so the shrink
	// may be less minimal than it could be, and the caller says so.
	Unevaluated int
	Stopped     string
	Elapsed     time.Duration
}

// Why a shrink ended.
const (
	StoppedDone     = "done"     // no phase found anything smaller
	StoppedTime     = "time"     // Options.Time ran out
	StoppedCanceled = "canceled" // ctx was done (Ctrl-C)
)

// InputError is a trace or predicate shrink cannot work with: the
// command line's mistake, not a failure of the run.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(format string, args ...any) error {
	return &InputError{fmt.Errorf(format, args...)}
}

// run is one failing run: a base for the next candidates.
type run struct {
	data []byte
	file *record.File
	base *base
	v    *predicates.Violation
	size Size
}

type shrinker struct {
	// afterCut is the smallest run once the first cut was tried.
	afterCut *run
	// nodesTried is the base the fewer-nodes phase last tried.
	nodesTried *base
	ctx        context.Context
	sys        *system.System
	opts       Options
	cfg        sim.Config
	target     string
	// liveness: the target is a liveness predicate, whose alarm any run
	// raises once the network loses enough (every retry), whatever the
	// bug. Its candidates, and all with Options.NoLoss (lossless), lose
	// no message the run they came from delivered: no delivery is
	// removed, and messages their base never had are delivered.
	liveness    bool
	lossless    bool
	started     time.Time
	cur, best   *run
	start       Size
	candidates  int
	accepted    int
	unevaluated int
	phase       string
	stopped     string
	// fork continues the world at a fork's step, a fresh copy per
	// candidate (nil: the trace is a simulated run, run from the start);
	// forkAt is that step and forkOf the fork's parent, which the shrunk
	// trace names as the fork does.
	fork   explore.Starter
	forkAt int
	forkOf string
}

// Shrink finds a smaller simulated run of sys that breaks the same
// predicate as the trace data. The trace is a simulated run, or a fork
// (driver fork), of which only the continuation after the fork step is
// shrunk: its steps #0..#fork_at are the recording's, replayed, and stay
// as they are. Errors: *InputError for a trace that is neither, names no
// such predicate or does not violate it (or a fork that violates it
// before its continuation);
// the replay's *replay.Divergence for a trace that does not replay; and a
// *predicates.EvalError (or ScriptError) when the script cannot check it.
func Shrink(ctx context.Context, sys *system.System, data []byte, opts Options) (*Result, error) {
	s := &shrinker{ctx: ctx, sys: sys, opts: opts, started: time.Now()}
	orig, err := s.original(data)
	if err != nil {
		return nil, err
	}
	s.cur, s.best, s.start = orig, orig, orig.size
	s.liveness = orig.v.Kind == "liveness"
	s.lossless = s.liveness || opts.NoLoss
	s.shrink()
	return s.result()
}

// original checks the trace as given and picks the violation to keep.
func (s *shrinker) original(data []byte) (*run, error) {
	name := s.opts.From
	f, err := record.Read(bytes.NewReader(data), name, int64(len(data)))
	if err != nil {
		return nil, inputErr("%v", err)
	}
	if f.Damage != nil {
		return nil, inputErr("%v", f.Damage)
	}
	// A trace whose events contradict each other (a receipt that does not
	// match its send) is refused as verify refuses it, of this file: found
	// by the check below it was named after the run's re-run, as a
	// shrink that failed.
	tr, err := replay.Merge([]*record.File{f})
	if err != nil {
		return nil, inputErr("%v", err)
	}
	tr.Close()
	d := f.Header.Driver
	if d != "sim" && d != sim.ForkDriver {
		return nil, inputErr("%s: a %s trace; shrink edits the schedule of a simulated run (replay sim, replay explore) "+
			"or of a fork's continuation, which a %s trace does not have%s", name, d, d, driverHint(d))
	}
	if f.Header.System != s.sys.Name {
		return nil, inputErr("%s: a trace of %s, not %s", name, f.Header.System, s.sys.Name)
	}
	var sc *sim.Schedule
	if d == sim.ForkDriver {
		// A fork's nodes are its world's (a live recording's names
		// included), not the factory's n1..nK that Schedule.Check
		// expects; RunFrom checks them against the world.
		if sc, s.forkAt, err = sim.ContinuationOf(f); err != nil {
			return nil, inputErr("%v", err)
		}
		s.forkOf = f.Header.Run["fork_of"]
	} else {
		if sc, err = sim.ScheduleOf(f); err != nil {
			return nil, inputErr("%v", err)
		}
		if err := sc.Check(s.sys); err != nil {
			return nil, inputErr("%s: %v", name, err)
		}
	}
	s.cfg = sc.Config().WithDefaults(s.sys)
	// Candidates run under the original's limits (the schedule's config
	// has none), which the shrunk trace's header then shows.
	if err := runLimits(&s.cfg, f.Header.Run); err != nil {
		return nil, inputErr("%s: %v", name, err)
	}
	// Checked up to the first finding (of the predicate named): what
	// shrinking keeps is there, and a predicate that cannot be evaluated
	// later in the run (a linearizability search past its budget after
	// the violation) must not stop it.
	first := func(v *predicates.Violation) bool {
		return v.Finding() && (s.opts.Predicate == "" || v.Predicate == s.opts.Predicate)
	}
	chk, err := simtest.CheckTrace(s.sys, s.cfg, nil, data, s.opts.Script, s.checkOptions(first))
	if err != nil {
		return nil, err
	}
	if s.target, err = pickTarget(chk, s.opts.Predicate, name); err != nil {
		return nil, err
	}
	if d == sim.ForkDriver {
		if err := s.forkStarter(data, chk); err != nil {
			return nil, err
		}
	}
	// The violation must be decided during the run: a liveness interval
	// judged at the end of the run (a predicate without an alarm
	// function) would be judged again at every candidate's end, and a
	// shorter run would raise it by being short.
	r, err := s.asRun(data)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, inputErr("%s: %s is raised only by the end of the run (a liveness predicate without an alarm function); "+
			"shrinking needs a violation decided while the run goes on, which a shorter run cannot fake", name, s.target)
	}
	return r, nil
}

// forkStarter rebuilds the fork's world at its fork step from the fork's
// own kept steps (they are its parent's #0..#fork_at, so the parent trace
// is not needed), once; every candidate continues a fresh copy of it.
// The target must first fail in the continuation: a violation within the
// kept steps fails whatever the continuation does.
func (s *shrinker) forkStarter(data []byte, chk *simtest.Result) error {
	name := s.opts.From
	for _, v := range chk.Failing {
		if v.Predicate != s.target {
			continue
		}
		if v.Decided() <= s.forkAt {
			return inputErr("%s: %s is violated at #%d, within the fork's recorded steps #0..#%d, not in its continuation; "+
				"nothing after the fork is needed (check the trace it was forked from, %s)", name, s.target, v.Decided(), s.forkAt, s.forkOf)
		}
		break
	}
	tr, err := replay.FromBytes(data, name)
	if err != nil {
		return err
	}
	reg := s.opts.Check.Registry
	if reg == nil {
		reg = system.NewRegistry(s.sys)
	}
	start, _, err := explore.ForkStarter(tr, reg, s.forkAt, nil, nil)
	var we *replay.WorldError
	if errors.As(err, &we) {
		return inputErr("%s: the world at the fork step #%d cannot be rebuilt: %v", name, s.forkAt, err)
	}
	if err != nil {
		return err
	}
	s.fork = start
	return nil
}

// runLimits reads a simulated run's step and time limits from its header.
func runLimits(cfg *sim.Config, run map[string]string) error {
	steps, err := strconv.Atoi(run["steps"])
	if err != nil || steps < 1 {
		return fmt.Errorf("the header's steps %q: want a positive number", run["steps"])
	}
	limit, err := time.ParseDuration(run["time"])
	if err != nil || limit <= 0 {
		return fmt.Errorf("the header's time %q: want a positive duration", run["time"])
	}
	cfg.Steps, cfg.Time = steps, limit
	return nil
}

// driverHint says what to do with a trace shrink cannot take: a live
// recording is forked first, and the fork is what shrinks.
func driverHint(driver string) string {
	if driver == "live" {
		return ": a live recording is not shrunk directly; fork it first (replay fork LIVE... --at STEP -o f.lz4, " +
			"or replay explore --from LIVE...) and shrink the fork, whose steps up to STEP stay the recording's"
	}
	return ""
}

// pickTarget is the predicate to keep failing: the one named, which must
// exist and fail, or the first that failed.
func pickTarget(chk *simtest.Result, want, name string) (string, error) {
	if want != "" {
		if _, ok := chk.Report.Predicates[want]; !ok {
			return "", inputErr("--predicate %s: the script has no predicate of that name (it has %s)", want,
				strings.Join(slices.Sorted(maps.Keys(chk.Report.Predicates)), ", "))
		}
		for _, v := range chk.Failing {
			if v.Predicate == want {
				return want, nil
			}
		}
		return "", inputErr("%s does not violate %s (no safety violation or liveness alarm of it in %d steps); nothing to shrink",
			name, want, chk.Report.Steps)
	}
	if len(chk.Failing) == 0 {
		return "", inputErr("%s violates no predicate (no safety violation or liveness alarm in %d steps); nothing to shrink",
			name, chk.Report.Steps)
	}
	return chk.Failing[0].Predicate, nil
}

// checkOptions are the options of a check: every finding (counts nil),
// or only the target's, stopping at it.
func (s *shrinker) checkOptions(counts func(*predicates.Violation) bool) simtest.Options {
	o := s.opts.Check
	o.Counts, o.StopAtFirst = counts, counts != nil
	return o
}

// asRun checks a trace for the target, stopping at its first finding, and
// makes it a base. nil: the target did not fail while the run went on.
func (s *shrinker) asRun(data []byte) (*run, error) {
	counts := func(v *predicates.Violation) bool { return v.Predicate == s.target && v.Finding() }
	chk, err := simtest.CheckTrace(s.sys, s.cfg, nil, data, s.opts.Script, s.checkOptions(counts))
	if err != nil {
		return nil, err
	}
	// Complete means checking reached the end: the finding, if any, was
	// judged by the end of the run, not decided while it went on.
	if len(chk.Failing) == 0 || chk.Report.Complete {
		return nil, nil
	}
	f, err := record.Read(bytes.NewReader(data), s.opts.From, int64(len(data)))
	if err != nil {
		return nil, err
	}
	tr, err := replay.Merge([]*record.File{f})
	if err != nil {
		return nil, err
	}
	b, err := newBase(f, tr)
	if err != nil {
		return nil, err
	}
	size := sizeOf(f, tr, s.cfg.LatencyMax)
	size.Prefix = b.fixed
	return &run{data: data, file: f, base: b, v: chk.Failing[0], size: size}, nil
}

// shrink runs the phases until a round finds nothing smaller or time is
// up: fewer nodes (while the run still holds every node's start), what
// happens to the system from outside (inputs, crashes, restarts), time
// (earlier crashes, earlier deliveries), what the network does
// (deliveries), and fewer nodes again. Every accepted run is cut after
// its violation.
func (s *shrinker) shrink() {
	s.cut()
	s.afterCut = s.best
	for !s.stop() {
		before := s.best.size
		s.nodesPhase()
		s.ddminPhase("inputs, crashes and restarts", func(e *entry) bool {
			// A restart removed leaves its node down for good, a
			// fault no liveness property can be held to: for a
			// liveness target a restart goes only with its crash.
			return e.Kind == node.KindInput || e.Kind == node.KindCrash || (e.Kind == node.KindRestart && !s.liveness)
		})
		s.faultsEarlierPhase()
		s.timePhase()
		if !s.lossless {
			s.ddminPhase("deliveries", func(e *entry) bool {
				// A message to self is never lost in the simulator.
				return e.Kind == node.KindRecv && e.Msg.From != e.Node
			})
		}
		s.nodesPhase()
		if !s.best.size.less(before) {
			break
		}
	}
	if s.stopped == "" {
		s.stopped = StoppedDone
	}
}

func (a Size) less(b Size) bool {
	if a.Events != b.Events {
		return a.Events < b.Events
	}
	if a.Nodes != b.Nodes {
		return a.Nodes < b.Nodes
	}
	return a.Faults < b.Faults
}

// stop reports whether time is up or the caller gave up.
func (s *shrinker) stop() bool {
	switch {
	case s.stopped != "":
	case s.ctx.Err() != nil:
		s.stopped = StoppedCanceled
	case s.opts.Time > 0 && time.Since(s.started) >= s.opts.Time:
		s.stopped = StoppedTime
	}
	return s.stopped != ""
}

// cut tries the current run without everything after its violation.
func (s *shrinker) cut() {
	s.phase = "cut after the violation"
	b := s.cur.base
	keep := make([]bool, len(b.entries))
	cut := false
	for i, e := range b.entries {
		keep[i] = e.step <= s.cur.v.Decided()
		cut = cut || !keep[i]
	}
	if !cut || s.stop() {
		return
	}
	if r := s.try(b, keep, policy{}, b.nodes); r != nil {
		s.cur = r
	}
}

// ddminPhase removes the entries of one class the violation does not
// need, then cuts the result.
func (s *shrinker) ddminPhase(name string, class func(*entry) bool) {
	if s.stop() {
		return
	}
	s.phase = name
	b := s.cur.base
	var items []int
	for i := range b.entries {
		if b.schedulable(i) && class(&b.entries[i]) {
			items = append(items, i)
		}
	}
	var last *run
	ddmin(items, func(kept []int) bool {
		keep := make([]bool, len(b.entries))
		for i := range keep {
			keep[i] = true
		}
		for _, i := range items {
			keep[i] = false
		}
		for _, i := range kept {
			keep[i] = true
		}
		r := s.try(b, keep, policy{}, b.nodes)
		if r != nil {
			last = r
		}
		return r != nil
	}, s.stop)
	if last != nil {
		s.cur = last
		s.cut()
	}
}

// timePhase runs the current run with every delivery as early as it may
// come.
func (s *shrinker) timePhase() {
	if s.stop() {
		return
	}
	s.phase = "earlier deliveries"
	b := s.cur.base
	if r := s.try(b, all(len(b.entries)), policy{early: true, downMin: s.cfg.DownMin}, b.nodes); r != nil && r.size.less(s.cur.size) {
		s.cur = r
		s.cut()
	}
}

// faultsEarlierPhase moves the crashes and restarts the run injects
// earlier, all together: by half the time before the first, then a
// quarter, down to a sixteenth, keeping the first shift that still fails.
func (s *shrinker) faultsEarlierPhase() {
	b := s.cur.base
	// The time before the first crash counts from the schedule's start:
	// a fork's continuation cannot move anything before its fork.
	first := time.Duration(-1)
	for _, e := range b.entries[b.fixed:] {
		if e.Kind == node.KindCrash {
			first = e.At - b.from
			break
		}
	}
	for div := time.Duration(2); first > 0 && div <= 16; div *= 2 {
		if s.stop() {
			return
		}
		s.phase = "earlier crashes"
		r := s.try(b, all(len(b.entries)), policy{shift: first / div}, b.nodes)
		if r != nil && r.size.less(s.cur.size) {
			s.cur = r
			s.cut()
			return
		}
	}
}

// nodesPhase tries every smaller node count the system accepts, smallest
// first, keeping the schedule of the nodes that remain; messages the
// base never had are lost, or else delivered.
func (s *shrinker) nodesPhase() {
	b := s.cur.base
	if s.fork != nil {
		return // the world at the fork fixes the nodes
	}
	if b == s.nodesTried {
		return // the same candidates failed at the end of the last round
	}
	s.nodesTried = b
	for n := 1; n < b.nodes; n++ {
		cfg := s.cfg
		cfg.Nodes, cfg.MaxDown = n, 0
		if sim.CheckConfig(s.sys, cfg.WithDefaults(s.sys)) != nil {
			continue
		}
		pols := []policy{{}, {deliverNew: true}}
		if s.lossless {
			pols = pols[1:] // try makes every policy deliver new messages
		}
		for _, pol := range pols {
			if s.stop() {
				return
			}
			s.phase = fmt.Sprintf("%d nodes", n)
			if r := s.try(b, onFewerNodes(b, s.sys.NodeIDs(n)), pol, n); r != nil {
				s.cur = r
				s.cut()
				return
			}
		}
	}
}

// onFewerNodes keeps every entry but the crashes and restarts of the
// nodes a candidate on ids removed: the simulator refuses to inject them
// into a run without those nodes, which failed the candidate. Their other
// entries stay kept: they never come, so the run goes on to its deadline,
// as a redrawn scenario's violation may need.
func onFewerNodes(b *base, ids []node.ID) []bool {
	keep := all(len(b.entries))
	for i, e := range b.entries {
		if (e.Kind == node.KindCrash || e.Kind == node.KindRestart) && !slices.Contains(ids, e.Node) {
			keep[i] = false
		}
	}
	return keep
}

func all(n int) []bool {
	keep := make([]bool, n)
	for i := range keep {
		keep[i] = true
	}
	return keep
}

// try runs one candidate and checks it; nil unless it fails the target
// predicate while it runs.
func (s *shrinker) try(b *base, keep []bool, pol policy, nodes int) *run {
	s.candidates++
	defer s.progress()
	if s.lossless {
		pol.deliverNew = true
	}
	slack := 2 * s.cfg.LatencyMax
	ch := newChooser(b, keep, pol, slack)
	cfg := s.cfg
	cfg.Nodes, cfg.MaxDown = nodes, 0
	cfg = cfg.WithDefaults(s.sys)
	cfg.Chooser, cfg.Observe = ch, ch.observe
	cfg.HandlerBound = s.opts.HandlerBound
	cfg.Stop = func() bool { return s.ctx.Err() != nil }
	var buf bytes.Buffer
	var err error
	if s.fork != nil {
		// A continuation has no scenario (RunFrom does not run it), so
		// there is nothing to filter.
		_, err = s.fork(cfg, &buf)
	} else {
		_, err = sim.Run(s.filtered(b, keep, nodes), cfg, &buf)
	}
	if err != nil {
		return nil // a candidate that panics or errs does not fail the same way
	}
	r, err := s.asRun(buf.Bytes())
	var evalErr *predicates.EvalError
	if errors.As(err, &evalErr) {
		s.unevaluated++
	}
	if err != nil || r == nil {
		return nil
	}
	s.accepted++
	if r.size.less(s.best.size) {
		s.best = r
	}
	return r
}

func (s *shrinker) progress() {
	if s.opts.Progress != nil {
		s.opts.Progress(Progress{Phase: s.phase, Candidates: s.candidates, Events: s.best.size.Events,
			Start: s.start.Events, Elapsed: time.Since(s.started)})
	}
}

// filtered is the system with a scenario that does only some of its
// actions (inputs, crashes, restarts), which are queued at exact times
// and which no chooser may skip. With the base's nodes the scenario draws
// the base's actions again, and a candidate does only those it keeps:
// otherwise actions an earlier phase removed, and inputs the base lost
// to a down node, came back. With other nodes it draws actions of its
// own (a join's time), which no entry names; the candidate does them all.
func (s *shrinker) filtered(b *base, keep []bool, nodes int) *system.System {
	if s.sys.Scenario == nil {
		return s.sys
	}
	sys := *s.sys
	scenario := s.sys.Scenario
	// Inputs are told apart by their encoding, as the run encodes them.
	codec := s.sys.Codec
	if c, err := codec.ForTrace(cmp.Or(s.cfg.Codec, node.CodecName)); err == nil {
		codec = c
	}
	f := newFilter(b, keep, nodes)
	sys.Scenario = func(ctl system.Controller) {
		g := *f
		g.Controller, g.codec = ctl, codec
		scenario(&g)
	}
	return &sys
}

// newFilter is the filter of a candidate of b keeping keep on nodes
// nodes, without its controller and codec.
func newFilter(b *base, keep []bool, nodes int) *filter {
	f := &filter{kept: map[key]bool{}, drop: map[key]bool{}, redrawn: nodes != b.nodes}
	for i, e := range b.entries {
		if e.key.by >= 0 || e.Kind == node.KindInit {
			continue
		}
		set := f.drop
		if keep[i] {
			set = f.kept
		}
		set[e.key] = true
		if b.looseOK(i) {
			set[e.key.loose()] = true
		}
	}
	return f
}

// filter is the scenario's controller leaving some of its actions out.
type filter struct {
	system.Controller
	codec *node.Codec
	// kept and drop hold actions by key, inputs also by key.loose.
	kept, drop map[key]bool
	// redrawn: the candidate has other nodes than its base, and its
	// scenario draws actions the base cannot name; they are done.
	redrawn bool
}

// does says whether the scenario's action k happens: kept, or (with
// redrawn nodes) not left out. An input whose payload differs from the
// base's (a scenario that picks it from the nodes' state: randtree's
// contact among the joined nodes) is matched by its node and time
// (base.looseOK).
func (f *filter) does(k key) bool {
	switch {
	case f.kept[k]:
		return true
	case f.drop[k]:
		return false
	case k.kind == node.KindInput && f.kept[k.loose()]:
		return true
	case k.kind == node.KindInput && f.drop[k.loose()]:
		return false
	}
	return f.redrawn
}

func (f *filter) Input(id node.ID, m node.Message) {
	k := key{kind: node.KindInput, node: id, by: -1, at: f.Now()}
	if _, payload, err := f.codec.Encode(m); err == nil {
		k.digest = payloadDigest(payload)
	}
	if f.does(k) {
		f.Controller.Input(id, m)
	}
}

func (f *filter) Crash(id node.ID) {
	if f.does(key{kind: node.KindCrash, node: id, by: -1, at: f.Now()}) {
		f.Controller.Crash(id)
	}
}

func (f *filter) Restart(id node.ID) {
	if f.does(key{kind: node.KindRestart, node: id, by: -1, at: f.Now()}) {
		f.Controller.Restart(id)
	}
}

// result writes the best run with a header naming the original, checks
// it once more, and finds out whether its schedule re-runs it.
func (s *shrinker) result() (*Result, error) {
	data, err := s.relabel(s.best)
	if err != nil {
		return nil, err
	}
	target := func(v *predicates.Violation) bool { return v.Predicate == s.target && v.Finding() }
	chk, err := simtest.CheckTrace(s.sys, s.cfg, nil, data, s.opts.Script, s.checkOptions(target))
	if err != nil {
		return nil, fmt.Errorf("checking the shrunk trace: %w", err)
	}
	var v *predicates.Violation
	for _, f := range chk.Failing {
		if f.Predicate == s.target {
			v = f
			break
		}
	}
	if v == nil {
		return nil, fmt.Errorf("the shrunk trace no longer violates %s (a bug in shrink: please report it)", s.target)
	}
	res := &Result{Trace: data, Predicate: s.target, Violation: v, Report: chk.Report,
		Before: s.start, After: s.best.size, Candidates: s.candidates, Accepted: s.accepted, Unevaluated: s.unevaluated,
		CutOnly: s.best == s.afterCut && s.best.size.less(s.start),
		Stopped: s.stopped, Elapsed: time.Since(s.started)}
	res.Schedule, res.NoSchedule = s.schedule(data)
	return res, nil
}

// relabel rewrites a run's trace with shrunk_from in its header, the
// events and end record as they are.
func (s *shrinker) relabel(r *run) ([]byte, error) {
	h := *r.file.Header
	h.Run = maps.Clone(h.Run)
	h.Run["shrunk_from"] = record.ListValue([]string{s.opts.From})
	h.Run["shrunk_for"] = s.target
	if s.fork != nil {
		// Candidates continue a world rebuilt from the fork trace, which
		// RunFrom names as the parent; the kept steps are the parent's.
		h.Run["fork_of"] = s.forkOf
	}
	var buf bytes.Buffer
	w, err := record.NewWriter(&buf, h, record.WriterOptions{})
	if err != nil {
		return nil, err
	}
	for _, ev := range r.file.Events {
		if err := w.Append(ev); err != nil {
			return nil, err
		}
	}
	end := record.End{}
	if n := len(r.file.Ends); n > 0 {
		end = r.file.Ends[n-1]
	}
	if err := w.Close(end); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// schedule is the shrunk run's schedule if `replay sim --schedule` re-runs
// it event for event: not when the scenario's inputs or crashes were left
// out, since a schedule cannot say that a scenario action did not happen.
func (s *shrinker) schedule(data []byte) (*sim.Schedule, string) {
	if s.fork != nil {
		return nil, fmt.Sprintf("a fork: its steps #0..#%d are the recording's, replayed, and a schedule re-runs a simulated run from its start; the trace is the reproduction", s.forkAt)
	}
	f, err := record.Read(bytes.NewReader(data), s.opts.From, int64(len(data)))
	if err != nil {
		return nil, err.Error()
	}
	sc, err := sim.ScheduleOf(f)
	if err != nil {
		return nil, err.Error()
	}
	var buf bytes.Buffer
	res, err := sim.Run(s.sys, sc.Config().WithDefaults(s.sys), &buf)
	switch {
	case errors.As(err, new(*sim.ScheduleMismatch)):
		return nil, "the shrunk run leaves out actions of the system's scenario (inputs, crashes), which a schedule cannot express; the trace is the reproduction"
	case err != nil:
		return nil, err.Error()
	case res.Steps != len(sc.Events):
		return nil, fmt.Sprintf("re-running the schedule made %d events, not %d", res.Steps, len(sc.Events))
	}
	return sc, ""
}
