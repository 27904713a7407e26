// Package raftkv is a replicated key-value store on etcd's raft library
// (go.etcd.io/raft/v3, RawNode): code nobody here wrote, run unchanged
// under the simulator, the live runtime and the replayer.
//
// Each node drives one RawNode: a timer ticks it, received messages are
// stepped into it, and after every event the node handles Ready: it
// persists the HardState and new entries to its Disk, sends the messages,
// applies committed entries to its map, and advances. A restarted node
// rebuilds its raft log from the Disk and re-applies the committed
// entries. Client writes (Put) arrive as inputs and are proposed; a write
// is answered once the entry is applied on the node that received it.
//
// raft draws its randomized election timeout from crypto/rand; the system
// sets CryptoRand so that those reads are recorded and replayed.
//
// The handler's exported fields copy what predicates need from raft after
// every event (term, vote, leader, role, commit index, the log's terms and
// chained digests, the applied index, the map); raft's own structures are
// tagged replay:"-".
package raftkv

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/cespare/xxhash/v2"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// Put is a client write: set Key to Value. Req identifies the request so
// that the node that received it can answer once it is applied. Puts are
// both the input and the payload of raft log entries.
type Put struct {
	Req   uint64
	Key   string
	Value string
}

// Message carries one raftpb.Message between nodes. raftpb's messages are
// protocol buffers (APIv2) with no Marshal method of their own; Message
// gives them one, with deterministic encoding, which is what the codec
// needs to compare a replayed send with the recorded one.
type Message struct {
	M *raftpb.Message
}

var marshalOpts = proto.MarshalOptions{Deterministic: true}

// Marshal implements node.Marshaler.
func (m *Message) Marshal() ([]byte, error) { return marshalOpts.Marshal(m.M) }

// maxSizePerMsg is raft's MaxSizePerMsg here: the most bytes of entries
// one append carries (one entry more may go over it).
const maxSizePerMsg = 1 << 20

// maxEntriesPerMessage bounds the entries of a message this system can
// have sent: raft fills an append up to maxSizePerMsg, and a real entry
// (its term and index set) takes at least 4 bytes of it. A trace is
// input: a forged message of 30 million empty entries (60 MB, 250 KB
// compressed) took 25 s and 4 GB to decode, before anything looked at
// it.
const maxEntriesPerMessage = maxSizePerMsg/4 + 1

// Unmarshal implements node.Unmarshaler.
func (m *Message) Unmarshal(b []byte) error {
	if n := countEntries(b); n > maxEntriesPerMessage {
		return fmt.Errorf("more than %d log entries and responses in one raft message, more than raftkv sends in one (MaxSizePerMsg %d bytes)", maxEntriesPerMessage, maxSizePerMsg)
	}
	m.M = new(raftpb.Message)
	return proto.Unmarshal(b, m.M)
}

// entriesField and responsesField are raftpb.Message's field numbers of
// Entries and of Responses (messages, with entries of their own).
var (
	messageFields  = (&raftpb.Message{}).ProtoReflect().Descriptor().Fields()
	entriesField   = messageFields.ByName("entries").Number()
	responsesField = messageFields.ByName("responses").Number()
)

// countEntries counts the entries and responses of an encoded
// raftpb.Message, and those of its responses, without decoding them;
// what does not parse is left for proto.Unmarshal to report. It stops
// counting past maxEntriesPerMessage, and counts responses nested deeper
// than raft nests them (one level) as too many.
func countEntries(b []byte) int { return countEntriesAt(b, 0) }

func countEntriesAt(b []byte, depth int) int {
	if depth > 8 {
		return maxEntriesPerMessage + 1
	}
	n := 0
	for len(b) > 0 && n <= maxEntriesPerMessage {
		num, typ, tagLen := protowire.ConsumeTag(b)
		if tagLen < 0 {
			return n
		}
		valLen := protowire.ConsumeFieldValue(num, typ, b[tagLen:])
		if valLen < 0 {
			return n
		}
		switch num {
		case entriesField:
			n++
		case responsesField:
			// A forged message hid its millions of empty elements in
			// responses, which are messages too.
			n++
			if inner, m := protowire.ConsumeBytes(b[tagLen:]); m >= 0 && typ == protowire.BytesType {
				n += countEntriesAt(inner, depth+1)
			}
		}
		b = b[tagLen+valLen:]
	}
	return n
}

// Entry is one entry of a node's raft log as predicates see it.
type Entry struct {
	Index uint64
	Term  uint64
	// Chain digests this entry and every entry before it (type, term,
	// data), so equal chains at an index mean equal logs up to it.
	Chain uint64
	// Req is the request id of a Put entry (0 for other entries).
	Req uint64
}

// Completion says what became of a request this node proposed.
type Completion struct {
	Req uint64
	Err string // "" when the write was applied
}

// Node is one raftkv node. Exported fields are its observed state.
type Node struct {
	ID   uint64
	Term uint64
	Vote uint64
	// Lead is the leader this node knows of (0: none).
	Lead uint64
	// Role is "follower", "pre-candidate", "candidate" or "leader".
	Role    string
	Commit  uint64
	Applied uint64
	// Log is the node's raft log, from index 1 (raftkv does not compact).
	Log []Entry
	// KV is the state machine: every applied Put.
	KV map[string]string

	peers   []node.ID
	tick    time.Duration
	rn      *raft.RawNode       `replay:"-"`
	storage *raft.MemoryStorage `replay:"-"`
	logger  *raftLogger         `replay:"-"`
	// completed lists the requests proposed here that finished during the
	// current event; the live application reads it after each event.
	completed []Completion `replay:"-"`
}

// Raft timing: a tick every TickInterval; a follower that hears no leader
// for ElectionTicks (randomized up to twice that by raft) campaigns.
const (
	DefaultTick   = 50 * time.Millisecond
	ElectionTicks = 10
	HeartbeatTick = 1
)

// Disk keys.
const (
	keyHardState = "hs"
	keyLast      = "last"
)

func entryKey(i uint64) string { return fmt.Sprintf("e/%016x", i) }

// RaftID is the raft id of a node: its node ID read as a number (raft ids
// must be positive integers; node IDs are "1", "2", ...).
func RaftID(id node.ID) (uint64, error) {
	n, err := strconv.ParseUint(string(id), 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("raftkv node IDs are positive integers, not %q", id)
	}
	return n, nil
}

// New builds a node. It panics on a node ID that is not a positive integer:
// the system cannot run with one.
func New(id node.ID, cfg system.Config) node.Handler {
	rid, err := RaftID(id)
	if err != nil {
		panic(err)
	}
	for _, p := range cfg.Nodes {
		if _, err := RaftID(p); err != nil {
			panic(err)
		}
	}
	return &Node{ID: rid, peers: cfg.Nodes, tick: tickParam(cfg), KV: map[string]string{}}
}

// tickParam reads the "tick" parameter (a duration; default DefaultTick).
func tickParam(cfg system.Config) time.Duration {
	d, err := time.ParseDuration(cfg.Param("tick", DefaultTick.String()))
	if err != nil || d <= 0 {
		return DefaultTick
	}
	return d
}

// Init implements node.Handler: start raft, from the Disk if this node ran
// before, and start ticking.
func (n *Node) Init(env node.Env) {
	n.logger = &raftLogger{}
	n.logger.env = env
	defer n.leave()
	n.storage = raft.NewMemoryStorage()
	hs, restarted := n.load(env)
	c := &raft.Config{
		ID: n.ID, ElectionTick: ElectionTicks, HeartbeatTick: HeartbeatTick, Storage: n.storage,
		MaxSizePerMsg: maxSizePerMsg, MaxInflightMsgs: 256, MaxUncommittedEntriesSize: 1 << 30,
		CheckQuorum: true, PreVote: true, Logger: n.logger,
	}
	rn, err := raft.NewRawNode(c)
	if err != nil {
		panic(fmt.Sprintf("raftkv: start raft: %v", err))
	}
	n.rn = rn
	if !restarted {
		peers := make([]raft.Peer, len(n.peers))
		for i, p := range n.peers {
			peers[i].ID, _ = RaftID(p)
		}
		if err := rn.Bootstrap(peers); err != nil {
			panic(fmt.Sprintf("raftkv: bootstrap: %v", err))
		}
	} else {
		env.Log().Info("restarted from disk", "term", hs.GetTerm(), "commit", hs.GetCommit(), "entries", len(n.Log))
	}
	n.ready(env)
	env.After(n.tick, "tick")
}

// load rebuilds the raft log from the Disk; it reports whether there was
// one.
func (n *Node) load(env node.Env) (*raftpb.HardState, bool) {
	d := env.Disk()
	b, ok := d.Get(keyHardState)
	if !ok {
		return nil, false
	}
	hs := new(raftpb.HardState)
	if err := proto.Unmarshal(b, hs); err != nil {
		panic(fmt.Sprintf("raftkv: corrupt hard state on disk: %v", err))
	}
	var last uint64
	if b, ok := d.Get(keyLast); ok && len(b) == 8 {
		last = binary.LittleEndian.Uint64(b)
	}
	ents := make([]*raftpb.Entry, 0, last)
	for i := uint64(1); i <= last; i++ {
		b, ok := d.Get(entryKey(i))
		if !ok {
			panic(fmt.Sprintf("raftkv: entry %d of %d missing on disk", i, last))
		}
		e := new(raftpb.Entry)
		if err := proto.Unmarshal(b, e); err != nil {
			panic(fmt.Sprintf("raftkv: corrupt entry %d on disk: %v", i, err))
		}
		ents = append(ents, e)
	}
	if err := n.storage.Append(ents); err != nil {
		panic(fmt.Sprintf("raftkv: rebuild log: %v", err))
	}
	if err := n.storage.SetHardState(hs); err != nil {
		panic(fmt.Sprintf("raftkv: rebuild hard state: %v", err))
	}
	n.mirror(ents)
	return hs, true
}

// Receive implements node.Handler: step a raft message.
func (n *Node) Receive(env node.Env, from node.ID, m node.Message) {
	n.enter(env)
	defer n.leave()
	msg, ok := m.(Message)
	if !ok || msg.M == nil {
		return
	}
	// raft rejects messages from nodes it does not know as errors; a
	// lossy network makes stale ones normal, so they are only logged.
	if err := n.rn.Step(msg.M); err != nil {
		env.Log().Debug("step", "from", from, "type", msg.M.GetType().String(), "err", err)
	}
	n.ready(env)
}

// Timer implements node.Handler: tick raft.
func (n *Node) Timer(env node.Env, t node.Timer) {
	n.enter(env)
	defer n.leave()
	if t.Name != "tick" {
		return
	}
	n.rn.Tick()
	n.ready(env)
	env.After(n.tick, "tick")
}

// Input implements node.Inputter: propose a client write.
func (n *Node) Input(env node.Env, in node.Message) {
	n.enter(env)
	defer n.leave()
	p, ok := in.(Put)
	if !ok {
		return
	}
	data, err := node.Marshal(p)
	if err != nil {
		panic(err)
	}
	if err := n.rn.Propose(data); err != nil {
		// No leader known (or this node is not a voter): the client
		// should retry, possibly elsewhere.
		n.completed = append(n.completed, Completion{Req: p.Req, Err: err.Error()})
	}
	n.ready(env)
}

func (n *Node) enter(env node.Env) {
	n.completed = n.completed[:0]
	n.logger.env = env
}

func (n *Node) leave() { n.logger.env = nil }

// ready handles everything raft has for the application, then copies the
// observed fields out of raft.
func (n *Node) ready(env node.Env) {
	for n.rn.HasReady() {
		rd := n.rn.Ready()
		n.persist(env, rd)
		for _, m := range rd.Messages {
			env.Send(node.ID(strconv.FormatUint(m.GetTo(), 10)), Message{M: m})
		}
		n.apply(env, rd.CommittedEntries)
		n.rn.Advance(rd)
	}
	st := n.rn.BasicStatus()
	n.Term, n.Vote, n.Commit = st.HardState.GetTerm(), st.HardState.GetVote(), st.HardState.GetCommit()
	n.Lead = st.Lead
	n.Role = roleName(st.RaftState)
}

func roleName(s raft.StateType) string {
	switch s {
	case raft.StateLeader:
		return "leader"
	case raft.StateCandidate:
		return "candidate"
	case raft.StatePreCandidate:
		return "pre-candidate"
	}
	return "follower"
}

// persist writes the hard state and new entries to the Disk and to raft's
// storage, before the messages that depend on them are sent.
func (n *Node) persist(env node.Env, rd raft.Ready) {
	d := env.Disk()
	if !raft.IsEmptyHardState(rd.HardState) {
		b, err := marshalOpts.Marshal(rd.HardState)
		if err != nil {
			panic(err)
		}
		d.Put(keyHardState, b)
		if err := n.storage.SetHardState(rd.HardState); err != nil {
			panic(err)
		}
	}
	if len(rd.Entries) == 0 {
		return
	}
	oldLast := uint64(len(n.Log))
	for _, e := range rd.Entries {
		b, err := marshalOpts.Marshal(e)
		if err != nil {
			panic(err)
		}
		d.Put(entryKey(e.GetIndex()), b)
	}
	newLast := rd.Entries[len(rd.Entries)-1].GetIndex()
	// Entries past the new last one were overwritten by a new leader.
	for i := newLast + 1; i <= oldLast; i++ {
		d.Delete(entryKey(i))
	}
	var lb [8]byte
	binary.LittleEndian.PutUint64(lb[:], newLast)
	d.Put(keyLast, lb[:])
	if err := n.storage.Append(rd.Entries); err != nil {
		panic(fmt.Sprintf("raftkv: append to raft storage: %v", err))
	}
	n.mirror(rd.Entries)
}

// mirror updates Log with entries that replace the log from their first
// index on.
func (n *Node) mirror(ents []*raftpb.Entry) {
	if len(ents) == 0 {
		return
	}
	first := ents[0].GetIndex()
	if first == 0 || first > uint64(len(n.Log))+1 {
		panic(fmt.Sprintf("raftkv: entries from %d do not follow a log of %d", first, len(n.Log)))
	}
	n.Log = n.Log[:first-1]
	var chain uint64
	if first > 1 {
		chain = n.Log[first-2].Chain
	}
	for _, e := range ents {
		var hdr [24]byte
		binary.LittleEndian.PutUint64(hdr[0:], chain)
		binary.LittleEndian.PutUint64(hdr[8:], uint64(e.GetType()))
		binary.LittleEndian.PutUint64(hdr[16:], e.GetTerm())
		d := xxhash.New()
		d.Write(hdr[:])
		d.Write(e.GetData())
		chain = d.Sum64()
		le := Entry{Index: e.GetIndex(), Term: e.GetTerm(), Chain: chain}
		if e.GetType() == raftpb.EntryType_EntryNormal && len(e.GetData()) > 0 {
			var p Put
			if node.Unmarshal(e.GetData(), &p) == nil {
				le.Req = p.Req
			}
		}
		n.Log = append(n.Log, le)
	}
}

// apply applies committed entries to the map (and configuration changes
// to raft).
func (n *Node) apply(env node.Env, ents []*raftpb.Entry) {
	for _, e := range ents {
		switch e.GetType() {
		case raftpb.EntryType_EntryNormal:
			if len(e.GetData()) == 0 {
				break // a new leader's empty entry
			}
			var p Put
			if err := node.Unmarshal(e.GetData(), &p); err != nil {
				panic(fmt.Sprintf("raftkv: entry %d is not a Put: %v", e.GetIndex(), err))
			}
			n.KV[p.Key] = p.Value
			n.completed = append(n.completed, Completion{Req: p.Req})
		case raftpb.EntryType_EntryConfChange:
			var cc raftpb.ConfChange
			if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
				panic(fmt.Sprintf("raftkv: entry %d is not a ConfChange: %v", e.GetIndex(), err))
			}
			n.rn.ApplyConfChange(&cc)
		case raftpb.EntryType_EntryConfChangeV2:
			var cc raftpb.ConfChangeV2
			if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
				panic(fmt.Sprintf("raftkv: entry %d is not a ConfChangeV2: %v", e.GetIndex(), err))
			}
			n.rn.ApplyConfChange(&cc)
		}
		n.Applied = e.GetIndex()
	}
}

// Completed lists the requests that finished during the last event, at
// this node: applied ones (Err "") and proposals raft dropped. The live
// application reads it after each event to answer waiting clients.
func (n *Node) Completed() []Completion { return n.completed }

// IsLeader reports whether this node is raft's leader.
func (n *Node) IsLeader() bool { return n.Role == "leader" }

// raftLogger sends raft's log lines to the current event's logger, so they
// show at the event's step in the debugger and are regenerated by replay.
type raftLogger struct {
	env node.Env
}

func (l *raftLogger) out(level int, msg string) {
	if l.env == nil {
		return
	}
	switch level {
	case 0:
		l.env.Log().Debug(msg)
	case 1:
		l.env.Log().Info(msg)
	case 2:
		l.env.Log().Warn(msg)
	default:
		l.env.Log().Error(msg)
	}
}

func (l *raftLogger) Debug(v ...any)              { l.out(0, fmt.Sprint(v...)) }
func (l *raftLogger) Debugf(f string, v ...any)   { l.out(0, fmt.Sprintf(f, v...)) }
func (l *raftLogger) Info(v ...any)               { l.out(1, fmt.Sprint(v...)) }
func (l *raftLogger) Infof(f string, v ...any)    { l.out(1, fmt.Sprintf(f, v...)) }
func (l *raftLogger) Warning(v ...any)            { l.out(2, fmt.Sprint(v...)) }
func (l *raftLogger) Warningf(f string, v ...any) { l.out(2, fmt.Sprintf(f, v...)) }
func (l *raftLogger) Error(v ...any)              { l.out(3, fmt.Sprint(v...)) }
func (l *raftLogger) Errorf(f string, v ...any)   { l.out(3, fmt.Sprintf(f, v...)) }
func (l *raftLogger) Fatal(v ...any)              { panic(fmt.Sprint(v...)) }
func (l *raftLogger) Fatalf(f string, v ...any)   { panic(fmt.Sprintf(f, v...)) }
func (l *raftLogger) Panic(v ...any)              { panic(fmt.Sprint(v...)) }
func (l *raftLogger) Panicf(f string, v ...any)   { panic(fmt.Sprintf(f, v...)) }

// System describes raftkv to the drivers.
var System = &system.System{
	Name:    "raftkv",
	Summary: "replicated key-value store on etcd raft (RawNode); client writes are inputs, answered after commit",
	Codec:   codec(),
	New:     New,
	NodeName: func(i int) node.ID {
		return node.ID(strconv.Itoa(i + 1))
	},
	CryptoRand: true,
	Sim: system.SimDefaults{
		Nodes:      3,
		LatencyMax: 5 * time.Millisecond,
		Drop:       0.01,
		Steps:      200_000,
		Time:       6 * time.Second,
	},
	Scenario: scenario,
	Params: []system.Param{
		{Name: "tick", Default: DefaultTick.String(), Summary: fmt.Sprintf("etcd raft's tick: heartbeats every %d, elections after %d to %d", HeartbeatTick, ElectionTicks, 2*ElectionTicks)},
		{Name: "writes", Default: "300", Summary: fmt.Sprintf("client writes the scenario makes (0..%d)", maxWrites)},
	},
	Validate: validate,
}

// maxWrites bounds the "writes" parameter: the scenario schedules every
// write up front.
const maxWrites = 100_000

// validate refuses, before any node is built, parameters the simulated
// run cannot use. (tickParam and the scenario fall back to the defaults,
// which a live node started with a bad value still does.)
func validate(cfg system.Config) error {
	if v := cfg.Param("tick", ""); v != "" {
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			return fmt.Errorf("raftkv: --param tick=%q: want a positive duration, e.g. 10ms", v)
		}
	}
	if v := cfg.Param("writes", ""); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 || n > maxWrites {
			return fmt.Errorf("raftkv: --param writes=%q: want an integer in 0..%d", v, maxWrites)
		}
	}
	return nil
}

func codec() *node.Codec {
	c := node.NewCodec()
	// The wire type is raftpb.Message; the name says so in traces.
	if err := c.Register("raftpb.Message", Message{}); err != nil {
		panic(err)
	}
	return c.MustRegister(Put{})
}

// scenario: after the first election, a client writes every 10 ms to a
// random node, over 50 keys (so keys are overwritten); "writes" sets how
// many (default 300).
func scenario(ctl system.Controller) {
	writes, err := strconv.Atoi(ctl.Config().Param("writes", "300"))
	if err != nil || writes < 0 {
		writes = 300
	}
	nodes := ctl.Nodes()
	for i := range writes {
		at := time.Second + time.Duration(i)*10*time.Millisecond
		to := nodes[ctl.Rand().IntN(len(nodes))]
		p := Put{Req: uint64(i + 1), Key: fmt.Sprintf("k%02d", i%50), Value: fmt.Sprintf("v%d", i)}
		ctl.At(at, func() { ctl.Input(to, p) })
	}
}
