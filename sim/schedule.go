package sim

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/system"
)

// ScheduleMagic opens every schedule file.
const ScheduleMagic = "replaycheck-schedule 1"

// A Schedule is one simulated execution as data: the settings that build
// its nodes, and every event in the order the simulator ran it, with its
// virtual time and the randomness its handler drew. Replaying it (the
// Schedule chooser) re-runs exactly that execution; editing it (dropping
// a delivery, moving a crash) asks for a neighbouring one. The text form
// is one line per event, so two schedules diff line by line.
type Schedule struct {
	// Note, when set, is written as a comment after the first line (a
	// schedule recovered from a damaged trace says so in itself).
	Note    string
	System  string
	Bug     string
	Nodes   int
	Params  map[string]string
	Seed    uint64 // the scenario's generator
	Latency [2]time.Duration
	// NoStateHashes, HashEvery and HashBytes as in Config.
	NoStateHashes bool
	HashEvery     int
	HashBytes     int
	// CausalClocks as in Config (the schedule line "clocks causal").
	CausalClocks bool
	// Codec as in Config (the schedule line "codec NAME", written only
	// for a recording whose codec is not this build's).
	Codec string
	// Origin says what made the execution (a chooser's description or a
	// trace), for people; replay ignores it.
	Origin string
	Events []ScheduledEvent
}

// ScheduledEvent is one line of a schedule.
type ScheduledEvent struct {
	At time.Duration
	Pending
	// The handler's randomness: Env.Rand's seed (when HasSeed) and the
	// bytes of its crypto/rand reads, in order.
	Seed    uint64
	HasSeed bool
	Crypto  []byte
	// Line is where the event was read from a schedule file (0: it came
	// from a trace), for errors.
	Line int
	// Scripted: a crash or restart the scenario asked for (by=scenario),
	// queued by a scenario action due at its time (node.Event.Scripted).
	Scripted bool
}

// ScheduleOf reads the schedule of a simulated trace: its events in the
// order the simulator ran them (the file's order), with their times and
// drawn randomness.
func ScheduleOf(f *record.File) (*Schedule, error) {
	if err := simulated(f); err != nil {
		return nil, err
	}
	return scheduleOf(f, entries(f.Events))
}

// ScheduleOfFile is ScheduleOf of the trace at path, read one event at a
// time: each is kept as its schedule entry, not whole (a schedule of a
// 1M-event trace held every event, 1.5 GB).
func ScheduleOfFile(path string) (*Schedule, error) {
	// In chunks, copied into one slice at the end: a slice grown by
	// append allocated five times its final size on the way, and held
	// two of them at once.
	const chunk = 4096
	var chunks [][]ScheduledEvent
	f, err := record.ScanFileReusing(path, func(ev *node.Event) error {
		if len(chunks) == 0 || len(chunks[len(chunks)-1]) == chunk {
			chunks = append(chunks, make([]ScheduledEvent, 0, chunk))
		}
		last := &chunks[len(chunks)-1]
		*last = append(*last, scheduled(ev))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := simulated(f); err != nil {
		return nil, err
	}
	n := 0
	for _, c := range chunks {
		n += len(c)
	}
	all := make([]ScheduledEvent, 0, n)
	for i, c := range chunks {
		all = append(all, c...)
		chunks[i] = nil
	}
	return scheduleOf(f, all)
}

// simulated refuses a trace the simulator did not make.
func simulated(f *record.File) error {
	if d := f.Header.Driver; d != "sim" {
		return fmt.Errorf("%s: a schedule exists only for simulated runs (this trace's driver is %q)", f.Path, d)
	}
	return nil
}

// entries are the schedule entries of events, timed from the epoch as
// scheduleOf takes them.
func entries(events []*node.Event) []ScheduledEvent {
	out := make([]ScheduledEvent, 0, len(events))
	for _, ev := range events {
		out = append(out, scheduled(ev))
	}
	return out
}

// scheduled is ev's schedule entry, its time from the epoch until
// scheduleOf counts it from the run's start.
func scheduled(ev *node.Event) ScheduledEvent {
	se := ScheduledEvent{At: time.Duration(ev.Time), Pending: Pending{Kind: ev.Kind, Node: ev.Node}, Scripted: ev.Scripted}
	switch ev.Kind {
	case node.KindRecv:
		se.Msg, se.MsgType = ev.Msg(), ev.MsgType
	case node.KindTimer:
		se.Timer, se.TimerName = ev.TimerID, ev.TimerName
	case node.KindInput:
		se.MsgType, se.InputDigest = ev.MsgType, payloadDigest(ev.Payload)
	case node.KindTask:
		se.Task, se.TaskName = ev.Task, ev.TaskName
	}
	for _, nd := range ev.Nondet {
		switch nd.Kind {
		case node.NondetSeed:
			se.Seed, se.HasSeed = uint64(nd.Int), true
		case node.NondetCrypto:
			se.Crypto = append(se.Crypto, nd.Bytes...)
		}
	}
	return se
}

// ContinuationOf reads the schedule of a fork's continuation: the events
// after the fork step (the file's events after fork_at, in the order the
// simulator ran them), with the settings of the run that made them. The
// kept steps #0..#fork_at are the parent's, replayed rather than
// scheduled, so they are not in it; at is the fork step. The schedule
// cannot be run by itself (`replay sim --schedule` starts from time zero):
// it is a continuation of the world at the fork step.
func ContinuationOf(f *record.File) (sc *Schedule, at int, err error) {
	if d := f.Header.Driver; d != ForkDriver {
		return nil, 0, fmt.Errorf("%s: a continuation exists only for forks (this trace's driver is %q)", f.Path, d)
	}
	at, err = strconv.Atoi(f.Header.Run["fork_at"])
	if err != nil || at < 0 {
		return nil, 0, fmt.Errorf("%s: the header's fork_at %q: want a step number", f.Path, f.Header.Run["fork_at"])
	}
	if at >= len(f.Events) {
		return nil, 0, fmt.Errorf("%s: forked at #%d but holds %d events", f.Path, at, len(f.Events))
	}
	sc, err = scheduleOf(f, entries(f.Events[at+1:]))
	return sc, at, err
}

// scheduleOf is the schedule of events (entries timed from the epoch),
// which the simulator ran in this order, under the settings of f's
// header.
func scheduleOf(f *record.File, events []ScheduledEvent) (*Schedule, error) {
	h := f.Header
	if len(f.Segments) > 1 {
		return nil, fmt.Errorf("%s: %d writer sessions; a simulated trace has one", f.Path, len(f.Segments))
	}
	sc := &Schedule{System: h.System, Bug: h.Bug, Nodes: len(h.Nodes), Params: h.Params, NoStateHashes: !h.StateHashes,
		HashEvery: h.HashEvery, HashBytes: h.HashBytes}
	if h.StateHashes && h.HashEvery == 0 && h.HashBytes == 0 {
		sc.HashEvery = 1 // a trace from before spacing: every event
	}
	run := h.Run
	var err error
	if sc.Seed, err = strconv.ParseUint(run["seed"], 10, 64); err != nil {
		return nil, fmt.Errorf("%s: the header's seed %q: %w", f.Path, run["seed"], err)
	}
	if sc.Latency, err = parseRange(run["latency"]); err != nil {
		return nil, fmt.Errorf("%s: the header's latency %q: %w", f.Path, run["latency"], err)
	}
	sc.CausalClocks = run["clocks"] == "causal"
	if c := h.Codec; c != node.CodecName {
		sc.Codec = c
	}
	sc.Origin = run["chooser"]
	if sc.Origin == "" {
		sc.Origin = "seeded seed=" + run["seed"]
	}
	sc.Events = events
	for i := range sc.Events {
		sc.Events[i].At -= time.Duration(h.Start)
	}
	if f.Damage != nil {
		return sc, fmt.Errorf("%s: damaged; the schedule holds the %d events before the damage: %w", f.Path, len(sc.Events), f.Damage)
	}
	return sc, nil
}

// ParseDurationRange reads MIN-MAX durations (e.g. 1ms-10ms), with
// 0 <= MIN <= MAX: latency and down-time ranges, on the command line and
// in schedules and trace headers.
func ParseDurationRange(s string) (lo, hi time.Duration, err error) {
	a, b, ok := strings.Cut(s, "-")
	lo, err1 := time.ParseDuration(a)
	hi, err2 := time.ParseDuration(b)
	if !ok || err1 != nil || err2 != nil || lo < 0 || hi < lo {
		return 0, 0, errors.New("want MIN-MAX durations with 0 <= MIN <= MAX, e.g. 1ms-10ms")
	}
	return lo, hi, nil
}

// parseRange reads a run's latency range, which a run always has above 0.
func parseRange(s string) ([2]time.Duration, error) {
	lo, hi, err := ParseDurationRange(s)
	if err == nil && lo == 0 {
		err = errors.New("want 0 < MIN <= MAX")
	}
	return [2]time.Duration{lo, hi}, err
}

// Config is the simulator configuration that replays the schedule under
// the Schedule chooser: its nodes and settings, no churn (crashes are
// events of the schedule), and limits that never cut it short.
func (sc *Schedule) Config() Config {
	cfg := Config{
		Seed: sc.Seed, Nodes: sc.Nodes, Bug: sc.Bug, Params: sc.Params,
		LatencyMin: sc.Latency[0], LatencyMax: sc.Latency[1],
		Steps: len(sc.Events) + 1, Time: time.Duration(maxTime),
		NoStateHashes: sc.NoStateHashes,
		HashEvery:     sc.HashEvery,
		HashBytes:     sc.HashBytes,
		CausalClocks:  sc.CausalClocks,
		Codec:         sc.Codec,
		Churn:         0,
	}
	cfg.Chooser = NewScheduleChooser(sc)
	return cfg
}

// parseHashes reads a state-hashes line: on, off, every K or bytes B.
func (sc *Schedule) parseHashes(args []string) error {
	bad := fmt.Errorf("state-hashes %q: want on, off, every K or bytes B", strings.Join(args, " "))
	switch {
	case len(args) == 1 && args[0] == "on":
		sc.NoStateHashes = false
	case len(args) == 1 && args[0] == "off":
		sc.NoStateHashes = true
	case len(args) == 2 && (args[0] == "every" || args[0] == "bytes"):
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 || n > 1<<30 {
			return bad
		}
		if args[0] == "every" {
			sc.HashEvery = n
		} else {
			sc.HashBytes = n
		}
	default:
		return bad
	}
	return nil
}

// maxTime is the last instant a run can reach.
const maxTime = int64(^uint64(0) >> 1)

// Format writes the schedule as text.
func (sc *Schedule) Format(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, ScheduleMagic)
	if sc.Note != "" {
		for line := range strings.SplitSeq(sc.Note, "\n") {
			fmt.Fprintln(bw, "# "+line)
		}
	}
	fmt.Fprintln(bw, "# One line per event, in the order the simulator ran them:")
	fmt.Fprintln(bw, "#   TIME init|crash|restart NODE [by=scenario]  (by=scenario: ctl.Crash, ctl.Restart)")
	fmt.Fprintln(bw, "#   TIME recv NODE FROM/SEQ/INDEX TYPE      (a message delivery)")
	fmt.Fprintln(bw, "#   TIME timer NODE ID NAME")
	fmt.Fprintln(bw, "#   TIME input NODE TYPE PAYLOAD-DIGEST")
	fmt.Fprintln(bw, "#   TIME task NODE ID NAME                 (a task resumes)")
	fmt.Fprintln(bw, "# then the handler's randomness, if it drew any: seed=HEX crypto=HEX.")
	fmt.Fprintln(bw, "# Replay with: replay sim SYSTEM --schedule FILE")
	fmt.Fprintf(bw, "system %s\n", token(sc.System))
	fmt.Fprintf(bw, "bug %s\n", token(sc.Bug))
	fmt.Fprintf(bw, "nodes %d\n", sc.Nodes)
	for _, k := range slices.Sorted(maps.Keys(sc.Params)) {
		fmt.Fprintf(bw, "param %s\n", token(k+"="+sc.Params[k]))
	}
	fmt.Fprintf(bw, "seed %d\n", sc.Seed)
	fmt.Fprintf(bw, "latency %v-%v\n", sc.Latency[0], sc.Latency[1])
	switch {
	case sc.NoStateHashes:
		fmt.Fprintln(bw, "state-hashes off")
	case sc.HashBytes > 0:
		fmt.Fprintf(bw, "state-hashes bytes %d\n", sc.HashBytes)
	case sc.HashEvery > 0:
		fmt.Fprintf(bw, "state-hashes every %d\n", sc.HashEvery)
	}
	if sc.Codec != "" {
		fmt.Fprintln(bw, "codec", sc.Codec)
	}
	if sc.CausalClocks {
		fmt.Fprintln(bw, "clocks causal")
	}
	if sc.Origin != "" {
		fmt.Fprintf(bw, "origin %s\n", sc.Origin)
	}
	fmt.Fprintln(bw)
	for _, e := range sc.Events {
		fmt.Fprintf(bw, "%v %s", e.At, e.Pending)
		if e.Scripted {
			fmt.Fprint(bw, " by=scenario")
		}
		if e.HasSeed {
			fmt.Fprintf(bw, " seed=%016x", e.Seed)
		}
		if len(e.Crypto) > 0 {
			fmt.Fprintf(bw, " crypto=%s", hex.EncodeToString(e.Crypto))
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}

// MaxScheduleLine bounds one line of a schedule file (crypto bytes are
// the only long part).
const MaxScheduleLine = 1 << 20

// ParseSchedule reads a schedule in the text form Format writes. Errors
// name the line.
func ParseSchedule(r io.Reader, name string) (*Schedule, error) {
	sc := &Schedule{Params: map[string]string{}}
	in := bufio.NewScanner(r)
	in.Buffer(make([]byte, 64<<10), MaxScheduleLine)
	n := 0
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, n, fmt.Sprintf(format, args...))
	}
	seen := map[string]bool{}
	for in.Scan() {
		n++
		line := strings.TrimSpace(in.Text())
		if n == 1 {
			if line != ScheduleMagic {
				return nil, fail("not a replaycheck schedule (the first line should be %q)", ScheduleMagic)
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f, err := tokens(line)
		if err != nil {
			return nil, fail("%v", err)
		}
		if len(sc.Events) == 0 && !startsWithDuration(f[0]) {
			if seen[f[0]] && f[0] != "param" {
				return nil, fail("%s given twice", f[0])
			}
			seen[f[0]] = true
			if err := sc.setting(f); err != nil {
				return nil, fail("%v", err)
			}
			continue
		}
		e, err := parseEvent(f)
		if err != nil {
			return nil, fail("%v", err)
		}
		e.Line = n
		if k := len(sc.Events); k > 0 && e.At < sc.Events[k-1].At {
			return nil, fail("time %v is before the previous line's %v (events are listed in the order they ran)", e.At, sc.Events[k-1].At)
		}
		sc.Events = append(sc.Events, e)
	}
	if err := in.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: a line longer than %d bytes: not a schedule line (a schedule's longest, its randomness, is far shorter)", name, n+1, MaxScheduleLine)
		}
		return nil, fmt.Errorf("%s:%d: %w", name, n+1, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: empty file, not a replaycheck schedule", name)
	}
	for _, k := range []string{"system", "nodes", "seed", "latency"} {
		if !seen[k] {
			return nil, fmt.Errorf("%s: no %q line", name, k)
		}
	}
	if sc.Bug == "" {
		sc.Bug = "none"
	}
	return sc, nil
}

func startsWithDuration(s string) bool {
	_, err := time.ParseDuration(s)
	return err == nil
}

func (sc *Schedule) setting(f []string) error {
	arg := func() (string, error) {
		if len(f) != 2 {
			return "", fmt.Errorf("%s: want one value", f[0])
		}
		return f[1], nil
	}
	v, err := arg()
	if err != nil && f[0] != "origin" && f[0] != "state-hashes" {
		return err
	}
	switch f[0] {
	case "system":
		sc.System = v
	case "bug":
		sc.Bug = v
	case "nodes":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxNodes {
			return fmt.Errorf("nodes %q: want 1..%d", v, MaxNodes)
		}
		sc.Nodes = n
	case "param":
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return fmt.Errorf("param %q: want KEY=VALUE", v)
		}
		if _, dup := sc.Params[k]; dup {
			return fmt.Errorf("param %s given twice", k)
		}
		sc.Params[k] = val
	case "seed":
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("seed %q: want a number", v)
		}
		sc.Seed = s
	case "latency":
		r, err := parseRange(v)
		if err != nil {
			return fmt.Errorf("latency %q: %v", v, err)
		}
		sc.Latency = r
	case "state-hashes":
		if err := sc.parseHashes(f[1:]); err != nil {
			return err
		}
	case "codec":
		if err := node.SupportedCodec(v); err != nil {
			return err
		}
		sc.Codec = v
	case "clocks":
		causal, err := ParseClocks(v)
		if err != nil {
			return err
		}
		sc.CausalClocks = causal
	case "origin":
		sc.Origin = strings.Join(f[1:], " ")
	default:
		return fmt.Errorf("unknown setting %q (want system, bug, nodes, param, seed, latency, state-hashes, clocks, codec, origin, or an event line starting with its time)", f[0])
	}
	return nil
}

func parseEvent(f []string) (ScheduledEvent, error) {
	var e ScheduledEvent
	at, err := time.ParseDuration(f[0])
	if err != nil || at < 0 {
		return e, fmt.Errorf("time %q: want a duration since the start such as 1.5ms", f[0])
	}
	e.At = at
	if len(f) < 3 {
		return e, errors.New("want TIME KIND NODE ...")
	}
	kind, err := node.ParseKind(f[1])
	if err != nil {
		return e, err
	}
	e.Kind, e.Node = kind, node.ID(f[2])
	rest := f[3:]
	need := func(n int, shape string) error {
		if len(rest) < n {
			return fmt.Errorf("%s: want %s", f[1], shape)
		}
		return nil
	}
	switch kind {
	case node.KindRecv:
		if err := need(2, "TIME recv NODE FROM/SEQ/INDEX TYPE"); err != nil {
			return e, err
		}
		if e.Msg, err = parseMsgID(rest[0]); err != nil {
			return e, err
		}
		e.MsgType, rest = rest[1], rest[2:]
	case node.KindTimer:
		if err := need(2, "TIME timer NODE ID NAME"); err != nil {
			return e, err
		}
		id, err := strconv.ParseUint(rest[0], 10, 64)
		if err != nil {
			return e, fmt.Errorf("timer id %q: want a number", rest[0])
		}
		e.Timer, e.TimerName, rest = node.TimerID(id), rest[1], rest[2:]
	case node.KindInput:
		if err := need(2, "TIME input NODE TYPE DIGEST"); err != nil {
			return e, err
		}
		d, err := strconv.ParseUint(rest[1], 16, 64)
		if err != nil {
			return e, fmt.Errorf("input digest %q: want 16 hex digits", rest[1])
		}
		e.MsgType, e.InputDigest, rest = rest[0], d, rest[2:]
	case node.KindTask:
		if err := need(2, "TIME task NODE ID NAME"); err != nil {
			return e, err
		}
		id, err := strconv.ParseUint(rest[0], 10, 64)
		if err != nil {
			return e, fmt.Errorf("task id %q: want a number", rest[0])
		}
		e.Task, e.TaskName, rest = node.TaskID(id), rest[1], rest[2:]
	}
	for _, kv := range rest {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "seed":
			s, err := strconv.ParseUint(v, 16, 64)
			if err != nil {
				return e, fmt.Errorf("seed=%q: want hex", v)
			}
			e.Seed, e.HasSeed = s, true
		case "crypto":
			b, err := hex.DecodeString(v)
			if err != nil {
				return e, fmt.Errorf("crypto=%q: want hex bytes", v)
			}
			e.Crypto = b
		case "by":
			if v != "scenario" || kind != node.KindCrash && kind != node.KindRestart {
				return e, fmt.Errorf("by=%q: only a crash or restart says by=scenario", v)
			}
			e.Scripted = true
		default:
			return e, fmt.Errorf("unexpected %q (after the event come only by=scenario, seed=HEX and crypto=HEX)", kv)
		}
	}
	return e, nil
}

func parseMsgID(s string) (node.MsgID, error) {
	// From the right: a node name may itself hold a slash.
	j := strings.LastIndexByte(s, '/')
	i := -1
	if j > 0 {
		i = strings.LastIndexByte(s[:j], '/')
	}
	if i <= 0 {
		return node.MsgID{}, fmt.Errorf("message %q: want FROM/SEQ/INDEX", s)
	}
	seq, err1 := strconv.ParseUint(s[i+1:j], 10, 64)
	idx, err2 := strconv.ParseUint(s[j+1:], 10, 32)
	if err1 != nil || err2 != nil {
		return node.MsgID{}, fmt.Errorf("message %q: want FROM/SEQ/INDEX with numbers", s)
	}
	return node.MsgID{From: node.ID(s[:i]), Seq: seq, Index: uint32(idx)}, nil
}

// Check reports a schedule that cannot belong to sys.
func (sc *Schedule) Check(sys *system.System) error {
	if sc.System != sys.Name {
		return fmt.Errorf("the schedule is for system %q, not %q", sc.System, sys.Name)
	}
	if err := sys.CheckBug(sc.Bug); err != nil {
		return err
	}
	ids := sys.NodeIDs(sc.Nodes)
	known := map[node.ID]bool{}
	for _, id := range ids {
		known[id] = true
	}
	for i, e := range sc.Events {
		for _, id := range []node.ID{e.Node, e.Msg.From} {
			if id != "" && !known[id] {
				where := fmt.Sprintf("event %d", i+1)
				if e.Line > 0 {
					where = fmt.Sprintf("line %d", e.Line)
				}
				return fmt.Errorf("%s: %s is not a node of this run (%d nodes: %s ... %s)", where, id, len(ids), ids[0], ids[len(ids)-1])
			}
		}
	}
	return nil
}

// ScheduleChooser replays a schedule: at every decision it runs the
// schedule's next event at its time, with the randomness it lists, and
// stops when the schedule ends. A schedule line whose event is not
// pending (the program now behaves differently, or the schedule was
// edited into an impossible one) stops the run with an error naming the
// line.
type ScheduleChooser struct {
	sc   *Schedule
	next int // index of the next event
	// firstFault is the 1-based line of the schedule's first crash or
	// restart when none says by=scenario (0: none, or some do): a
	// schedule from before the mark (session 37) that fails after it
	// may be one whose scenario crashed nodes itself.
	firstFault int
	cur        *ScheduledEvent
	advanced   bool // time was advanced to the next event's
	// deliveries counts, per message, the deliveries still to come: a
	// message the schedule never delivers is lost when sent, one it
	// delivers twice was duplicated.
	deliveries map[node.MsgID]int
	crypto     []byte
}

// NewScheduleChooser returns a chooser that replays sc.
func NewScheduleChooser(sc *Schedule) *ScheduleChooser {
	c := &ScheduleChooser{sc: sc, deliveries: map[node.MsgID]int{}}
	for i, e := range sc.Events {
		if e.Kind == node.KindRecv {
			c.deliveries[e.Msg]++
		}
		if (e.Kind == node.KindCrash || e.Kind == node.KindRestart) && c.firstFault == 0 {
			c.firstFault = i + 1
		}
		if e.Scripted {
			c.firstFault = -1
		}
	}
	return c
}

func (c *ScheduleChooser) Describe() string {
	return fmt.Sprintf("schedule of %d events (%s)", len(c.sc.Events), c.sc.Origin)
}

// Next runs the schedule's next event.
func (c *ScheduleChooser) Next(ch *Choice) (d Decision, err error) {
	defer func() {
		var m *ScheduleMismatch
		if c.firstFault > 0 && errors.As(err, &m) && m.Line > c.firstFault {
			m.Unmarked = true
		}
	}()
	if c.next >= len(c.sc.Events) {
		return Decision{Stop: "schedule done"}, nil
	}
	e := &c.sc.Events[c.next]
	line := c.next + 1
	c.next++
	c.cur, c.crypto = e, e.Crypto
	var near *ScheduleMismatch // the event is pending, but not as written
	for i, p := range ch.Enabled() {
		if p.Kind != e.Kind || p.Node != e.Node || !p.sameIdentity(e.Pending) {
			continue
		}
		switch {
		case p.MsgType != e.MsgType || p.TimerName != e.TimerName || p.TaskName != e.TaskName:
			near = &ScheduleMismatch{Line: line, Event: *e, Why: fmt.Sprintf("the pending event is %s", p)}
		case e.At < max(ch.Now(), p.Earliest) || e.At > p.Latest:
			near = &ScheduleMismatch{Line: line, Event: *e,
				Why: fmt.Sprintf("it is pending, but may run only between %v and %v", max(ch.Now(), p.Earliest), p.Latest)}
		default:
			c.advanced = false
			return Decision{Index: i, At: e.At}, nil
		}
	}
	if near != nil {
		return Decision{}, near
	}
	// A scenario action due by then may be what queues it (an input).
	if !c.advanced && e.Kind != node.KindCrash && e.Kind != node.KindRestart {
		c.advanced, c.next = true, c.next-1
		return Decision{Advance: true, At: e.At}, nil
	}
	c.advanced = false
	switch e.Kind {
	case node.KindCrash, node.KindRestart:
		// A scenario's ctl.Crash queues its crash from an action due at
		// that very time, which sees the node up (ctl.Handler) before
		// it crashes: the actions due by then run one at a time, until
		// one queued this crash (taken above, after the actions queued
		// before it). A fault a chooser or churn injected ran before
		// the actions of its own instant: it is injected now.
		if e.Scripted && ch.dueBy(e.At) {
			c.next--
			return Decision{Advance: true, AdvanceOne: true, At: e.At}, nil
		}
		// An impossible fault is a line of the schedule, as an event that
		// is not pending is (the simulator's own refusal named no line).
		up := slices.Contains(ch.Up(), e.Node)
		switch {
		case e.Kind == node.KindCrash && !up:
			return Decision{}, &ScheduleMismatch{Line: line, Event: *e, Why: "the node is not running then (down, or not started)"}
		case e.Kind == node.KindRestart && up:
			return Decision{}, &ScheduleMismatch{Line: line, Event: *e, Why: "the node is running then"}
		case e.Kind == node.KindRestart && !ch.Started(e.Node):
			return Decision{}, &ScheduleMismatch{Line: line, Event: *e, Why: "the node has not started then (its init comes first)"}
		case e.Kind == node.KindCrash:
			return Decision{Crash: e.Node, At: e.At}, nil
		}
		return Decision{Restart: e.Node, At: e.At}, nil
	}
	var names []string
	for _, p := range ch.Enabled() {
		names = append(names, p.String())
	}
	if len(names) == 0 {
		names = []string{"nothing"}
	}
	return Decision{}, &ScheduleMismatch{Line: line, Event: *e, Pending: names}
}

// ScheduleMismatch is the error of a schedule whose next event cannot
// happen: the program now behaves differently from the run the schedule
// was taken from, or the schedule was edited into an impossible run.
type ScheduleMismatch struct {
	Line    int // 1-based index of the event in the schedule
	Event   ScheduledEvent
	Pending []string // what could run instead
	Why     string   // set when the event is pending but cannot run as written
	// Unmarked: the schedule's crashes and restarts, before this line,
	// say none of them was the scenario's (by=scenario), as a trace
	// recorded before that mark says of all of them.
	Unmarked bool
}

func (e *ScheduleMismatch) Error() string {
	msg := e.message()
	if e.Unmarked {
		msg += "; if the scenario crashes or restarts nodes itself (ctl.Crash, ctl.Restart), a trace recorded before release marks of that (by=scenario, docs/migration.md, \"Session 37\") cannot say so: record the run again"
	}
	return msg
}

func (e *ScheduleMismatch) message() string {
	where := fmt.Sprintf("schedule event %d", e.Line)
	if e.Event.Line > 0 {
		where = fmt.Sprintf("schedule line %d (event %d)", e.Event.Line, e.Line)
	}
	if e.Why != "" {
		return fmt.Sprintf("%s, %v %s: %s", where, e.Event.At, e.Event.Pending, e.Why)
	}
	return fmt.Sprintf("%s, %v %s, is not pending then (a schedule edited into an impossible run, or a program that now behaves differently); pending: %s",
		where, e.Event.At, e.Event.Pending, strings.Join(e.Pending, "; "))
}

func (p Pending) sameIdentity(q Pending) bool {
	switch p.Kind {
	case node.KindRecv:
		return p.Msg == q.Msg
	case node.KindTimer:
		return p.Timer == q.Timer
	case node.KindInput:
		return p.MsgType == q.MsgType && p.InputDigest == q.InputDigest
	case node.KindTask:
		return p.Task == q.Task
	}
	return true
}

// Lose loses the messages the schedule never delivers.
func (c *ScheduleChooser) Lose(msg node.MsgID, _ node.ID, _ float64) bool {
	return c.deliveries[msg] == 0
}

// Duplicate duplicates the messages the schedule delivers twice.
func (c *ScheduleChooser) Duplicate(msg node.MsgID, _ node.ID, _ float64) bool {
	if c.deliveries[msg] > 1 {
		c.deliveries[msg] = 1 // the copy is queued now; no third
		return true
	}
	return false
}

// Latency opens the widest window: the schedule's time picks within it.
func (c *ScheduleChooser) Latency(lo, _ time.Duration) time.Duration { return lo }

// ChurnWait never comes: crashes are events of the schedule.
func (c *ScheduleChooser) ChurnWait(float64) time.Duration { return time.Duration(maxTime) }

func (c *ScheduleChooser) DownFor(lo, _ time.Duration) time.Duration { return lo }

// mismatch is the error of the current event's nondeterminism not being
// what the schedule lists: like an event that cannot happen, the run has
// left its schedule.
func (c *ScheduleChooser) mismatch(why string) *ScheduleMismatch {
	m := &ScheduleMismatch{Line: c.next, Why: why}
	if c.cur != nil {
		m.Event = *c.cur
	}
	return m
}

// Seed serves the seed the schedule lists for the current event.
func (c *ScheduleChooser) Seed() uint64 {
	if c.cur == nil || !c.cur.HasSeed {
		panic(&node.SourceError{Err: c.mismatch("the handler drew a random seed the schedule does not list")})
	}
	return c.cur.Seed
}

// CryptoRead serves the crypto bytes the schedule lists for the current
// event, in order.
func (c *ScheduleChooser) CryptoRead(p []byte) {
	if len(c.crypto) < len(p) {
		panic(&node.SourceError{Err: c.mismatch(fmt.Sprintf("the handler read %d crypto/rand bytes the schedule does not list", len(p)))})
	}
	copy(p, c.crypto)
	c.crypto = c.crypto[len(p):]
}
