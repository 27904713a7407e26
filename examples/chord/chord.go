// Package chord is the Chord distributed hash table's ring maintenance, as
// the WiDS Checker paper debugged it: nodes sit on an identifier ring by
// the hash of their names; a node joins by looking up its own key
// (FindPred, answered iteratively), takes the successor list of the node
// that precedes that key and tells its successor about itself
// (UpdatePred, Chord's notify); periodic stabilization (GetPred) asks the
// successor for its predecessor and successor list; fix-fingers looks up
// one finger start per period; a node that leaves tells its neighbours.
// There are no transport errors in the simulator, so a request that gets
// no reply within a timeout counts as one: the peer is removed from the
// successor list, the fingers and the predecessor.
//
// Seeded bugs (--bug):
//
//   - succ-succ-hash: the successor list's second entry (the successor's
//     successor) is assigned the hash of the node's address instead of the
//     address; nothing notices until a successor leaves, then the ring
//     breaks.
//   - finger-slow: fix-fingers writes the entry it computed into a copy of
//     the table row, so fingers converge only through the nodes a node
//     happens to hear from, much later than needed (or never).
//   - finger-boundary: the "closer finger" test is written with the open
//     interval helper, whose (k, k) is the whole ring (right for a node
//     alone, asking whether a newcomer lies between itself and itself), so
//     a perfect finger (its node sits exactly at the finger's start, k) is
//     replaced by whichever node sends the next message, and fingers
//     oscillate.
//   - pred-self: a node's loopback UpdatePred (sent while it was alone)
//     arriving after its predecessor was cleared sets pred = self while its
//     successor list holds other nodes.
//   - pred-order: a node without a predecessor adopts its successor's
//     predecessor y before updating its successor list from the same
//     reply. When y lies between the node and its successor (a node that
//     joined concurrently), y should become the successor; taken first as
//     predecessor it is passed over as successor, and the old successor
//     now lies between the predecessor and the node.
//
// A member that loses every successor (the last one failed or left) is cut
// off from the ring: it drops out and rejoins through the nodes it still
// knows after a back-off. Only members serve the ring: a node out of it
// refuses FindPred and does not answer GetPred or Ping, so to its
// neighbours it looks failed. Soft state is lost in a crash; the Disk keeps whether the
// node was a member, created the ring or left, and its last successor
// list, so a restarted node rejoins on its own.
package chord

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// Inputs (the scenario's operator commands).

// CreateRing makes a node the first member of a new ring.
type CreateRing struct{}

// JoinRing asks a node to join the ring through Via.
type JoinRing struct{ Via node.ID }

// LeaveRing asks a node to leave the ring for good.
type LeaveRing struct{}

// Messages.

// FindPred asks for the predecessor of Key: the node n with Key in
// (n, successor(n)]. Lookups are iterative: the asker follows the hops.
type FindPred struct {
	Req uint64
	Key int
}

// FindPredReply answers a FindPred. Done: Node is Key's predecessor (the
// replier) and Succs its successor list. Otherwise Node is the next node
// to ask. Refused: the replier is not in a ring.
type FindPredReply struct {
	Req     uint64
	Key     int
	Refused bool
	Done    bool
	Node    node.ID
	Succs   []node.ID
}

// UpdatePred is Chord's notify: the sender believes it is the receiver's
// predecessor.
type UpdatePred struct{}

// GetPred asks a node (the sender's successor) for its predecessor and
// successor list.
type GetPred struct{ Req uint64 }

// GetPredReply answers GetPred.
type GetPredReply struct {
	Req   uint64
	Pred  node.ID
	Succs []node.ID
}

// Ping checks that a predecessor is alive; Pong answers it.
type Ping struct{ Req uint64 }

// Pong answers Ping.
type Pong struct{ Req uint64 }

// Leave tells a neighbour that the sender leaves the ring; Pred is the
// sender's predecessor, the receiver's new one if the sender was its
// predecessor.
type Leave struct{ Pred node.ID }

// Finger is one finger table entry: Node is the node believed to be the
// first at or after Start.
type Finger struct {
	Start int
	Node  node.ID
}

// Request kinds and lookup purposes.
const (
	KindFind    = "find"
	KindGetPred = "getpred"
	KindPing    = "ping"

	ForJoin   = "join"
	ForFinger = "finger"
)

// Request is a request awaiting its reply; it fails when its timeout
// fires first.
type Request struct {
	Kind    string
	Peer    node.ID
	Timer   node.TimerID
	Key     int    // find: the key looked up
	Purpose string // find: ForJoin or ForFinger
	Finger  int    // find for a finger: its index
	Hops    int    // find: hops taken so far
	Retries int    // find for a finger: restarts after a failed hop
}

// Node is one Chord node. Its exported fields are what predicates see.
type Node struct {
	Self node.ID
	Key  int
	// RingSize is the number of ring positions.
	RingSize int
	// Ring gives every node's position. It is the same map in every node
	// and never changes, so it is hidden from observed state: otherwise
	// every event would hash a map of all the nodes, a cost that grows with
	// the ring. Predicates read PredKey and SuccKey instead.
	Ring *Positions `replay:"-"`
	// Joined: the node is a ring member (it created the ring or its join
	// completed). Left: it left for good.
	Joined bool
	Left   bool
	// Pred is the predecessor ("" when unknown). Succs is the successor
	// list, nearest first; [Self] when the node is alone.
	Pred    node.ID
	Succs   []node.ID
	Fingers []Finger
	// PredKey and SuccKey are the ring positions of Pred and Succs[0]; -1
	// when the address is no node of the run (or Pred is ""). Derived
	// after every handler, so predicates need neither hashing nor Ring.
	PredKey int
	SuccKey int
	// NextFinger is the finger fix-fingers refreshes next.
	NextFinger int
	// Joining: a join is under way. The node asks JoinVia first, then
	// every other node of the run in order; JoinNext counts the JoinVia
	// entries asked and JoinScan is the index, in the run's node set, of
	// the next other node to ask. (Kept as a position rather than a list
	// of every node still to ask, which would cost O(nodes) per event.)
	Joining  bool
	JoinVia  []node.ID
	JoinNext int
	JoinScan int
	Pending  map[uint64]Request
	NextReq  uint64

	cfg config `replay:"-"`
	r   ring   `replay:"-"`
}

// config is a run's settings, fixed for every node.
type config struct {
	bug   string
	bits  int // the ring has 2^bits positions
	succs int // successor list length
}

// Timing. Latencies are 1-10 ms by default, so a request unanswered after
// 50 ms went to a node that is gone.
const (
	stabilizePeriod = 100 * time.Millisecond
	fingerPeriod    = 50 * time.Millisecond
	checkPeriod     = 200 * time.Millisecond
	requestTimeout  = 50 * time.Millisecond
	joinRetry       = 100 * time.Millisecond
	// A node cut off from every successor backs off before rejoining:
	// the ring around it is in trouble, and rejoining at once would only
	// add load.
	rejoinBackoff = time.Second
)

// Timer names.
const (
	timerStabilize = "stabilize"
	timerFingers   = "fix-fingers"
	timerCheckPred = "check-pred"
	timerTimeout   = "timeout"
	timerJoin      = "join-retry"
)

// Disk keys. Ring state is soft state rebuilt by joining; only what a
// restarted node needs to rejoin persists.
const (
	diskMember  = "member"  // the node has been a ring member
	diskCreator = "creator" // the node created the ring
	diskLeft    = "left"    // the node left for good
	diskSuccs   = "succs"   // the last successor list: whom to ask when rejoining
)

// Defaults of the system's parameters.
const (
	defaultBits  = 9
	defaultSuccs = 3
)

// New builds a node. Parameters: bits (ring of 2^bits positions, default
// 9) and succs (successor list length, default 3).
func New(id node.ID, cfg system.Config) node.Handler {
	bits, err := intParam(cfg, "bits", defaultBits, 4, 30)
	if err != nil {
		panic(err.Error())
	}
	succs, err := intParam(cfg, "succs", defaultSuccs, 1, 16)
	if err != nil {
		panic(err.Error())
	}
	// Every node needs the same table of positions: built once per run,
	// not once per node (O(nodes²) time and memory at scale).
	positions := cfg.Shared(fmt.Sprintf("chord.ring/%d", bits), func() any { return &Positions{m: ringPositions(cfg.Nodes, bits)} }).(*Positions)
	p := &Node{
		Self:     id,
		Key:      positions.m[id],
		RingSize: 1 << bits,
		Ring:     positions,
		Pending:  map[uint64]Request{},
		cfg:      config{bug: cfg.Bug, bits: bits, succs: succs},
		r:        ring{size: 1 << bits},
	}
	// Until it creates or joins a ring, a node is a ring of one.
	p.Succs = []node.ID{id}
	p.Fingers = make([]Finger, bits)
	for i := range p.Fingers {
		p.Fingers[i] = Finger{Start: (p.Key + 1<<i) % p.RingSize, Node: id}
	}
	p.deriveKeys()
	return p
}

func intParam(cfg system.Config, name string, def, lo, hi int) (int, error) {
	v, err := strconv.Atoi(cfg.Param(name, strconv.Itoa(def)))
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("chord: --param %s=%q: want an integer in %d..%d", name, cfg.Param(name, ""), lo, hi)
	}
	return v, nil
}

// validate refuses, before any node is built, a run New or the scenario
// could not do.
func validate(cfg system.Config) error {
	bits, err := intParam(cfg, "bits", defaultBits, 4, 30)
	if err != nil {
		return err
	}
	if _, err := intParam(cfg, "succs", defaultSuccs, 1, 16); err != nil {
		return err
	}
	if _, err := leaveAt(cfg); err != nil {
		return err
	}
	return fits(len(cfg.Nodes), bits)
}

// leaveAt is when the scenario's departure happens; 0 means none.
func leaveAt(cfg system.Config) (time.Duration, error) {
	v := cfg.Param("leave_at", defaultLeaveAt.String())
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("chord: --param leave_at=%q: want a duration of 0 or more, e.g. 2s (0: nobody leaves)", v)
	}
	return d, nil
}

// Init implements node.Handler: start the periodic timers and, after a
// restart, rejoin (or stay out if the node had left).
func (p *Node) Init(env node.Env) {
	defer p.deriveKeys()
	d := env.Disk()
	if _, ok := d.Get(diskLeft); ok {
		p.Left = true
		return
	}
	// First firings are spread over a whole period: nodes start at
	// different moments, not in lockstep.
	for _, t := range []struct {
		period time.Duration
		name   string
	}{{stabilizePeriod, timerStabilize}, {fingerPeriod, timerFingers}, {checkPeriod, timerCheckPred}} {
		env.After(1+time.Duration(env.Rand().Int64N(int64(t.period))), t.name)
	}
	if _, ok := d.Get(diskMember); ok {
		var last []node.ID
		if b, ok := d.Get(diskSuccs); ok {
			if err := node.Unmarshal(b, &last); err != nil {
				panic(fmt.Sprintf("chord: corrupt successor list on disk: %v", err))
			}
		}
		env.Log().Info("restarted: rejoining", "ask", fmt.Sprint(last))
		p.startJoin(env, last)
	}
}

// after sets a periodic timer with jitter of ±25%, so nodes do not run in
// lockstep.
func (p *Node) after(env node.Env, period time.Duration, name string) {
	d := period*3/4 + time.Duration(env.Rand().Int64N(int64(period/2)))
	env.After(d, name)
}

// Input implements node.Inputter.
func (p *Node) Input(env node.Env, in node.Message) {
	defer p.deriveKeys()
	if p.Left {
		return
	}
	switch m := in.(type) {
	case CreateRing:
		p.create(env)
	case JoinRing:
		p.startJoin(env, []node.ID{m.Via})
	case LeaveRing:
		p.leave(env)
	}
}

// Timer implements node.Handler.
func (p *Node) Timer(env node.Env, t node.Timer) {
	defer p.deriveKeys()
	if p.Left {
		return
	}
	switch t.Name {
	case timerStabilize:
		p.stabilize(env)
		p.after(env, stabilizePeriod, timerStabilize)
	case timerFingers:
		if p.Joined {
			p.fixFinger(env)
		}
		p.after(env, fingerPeriod, timerFingers)
	case timerCheckPred:
		if p.Joined && p.Pred != "" && p.Pred != p.Self {
			p.request(env, Request{Kind: KindPing, Peer: p.Pred})
		}
		p.after(env, checkPeriod, timerCheckPred)
	case timerTimeout:
		p.expire(env, t.ID)
	case timerJoin:
		if !p.Joined && p.Joining {
			p.startJoin(env, p.joinRemaining())
		}
	}
}

// Receive implements node.Handler.
func (p *Node) Receive(env node.Env, from node.ID, m node.Message) {
	defer p.deriveKeys()
	if p.Left {
		return // gone: a leaver answers nothing, like a closed process
	}
	switch m := m.(type) {
	case FindPred:
		p.onFindPred(env, from, m)
	case FindPredReply:
		p.onFindPredReply(env, from, m)
	case UpdatePred:
		p.onUpdatePred(from)
	case GetPred:
		if !p.Joined && from != p.Self {
			return // only members serve the ring; a node out of it is as good as gone
		}
		p.learn(from)
		env.Send(from, GetPredReply{Req: m.Req, Pred: p.Pred, Succs: slices.Clone(p.Succs)})
	case GetPredReply:
		p.onGetPredReply(env, from, m)
	case Ping:
		if !p.Joined {
			return
		}
		p.learn(from)
		env.Send(from, Pong{Req: m.Req})
	case Pong:
		if _, ok := p.take(env, m.Req, KindPing, from); ok {
			p.learn(from)
		}
	case Leave:
		p.onLeave(env, from, m)
	}
}

func (p *Node) succ() node.ID { return p.Succs[0] }

// deriveKeys sets PredKey and SuccKey from Pred and Succs, which any
// handler may have changed.
func (p *Node) deriveKeys() {
	p.PredKey, p.SuccKey = -1, -1
	if k, ok := p.Ring.Of(p.Pred); ok {
		p.PredKey = k
	}
	if len(p.Succs) > 0 {
		if k, ok := p.Ring.Of(p.Succs[0]); ok {
			p.SuccKey = k
		}
	}
}

// keyOf is a node's ring position. An address that is not a node of the
// run (a corrupted entry) hashes like any other name.
func (p *Node) keyOf(id node.ID) int {
	if k, ok := p.Ring.Of(id); ok {
		return k
	}
	return hashKey(string(id), p.cfg.bits)
}

// reachable reports whether an address names a node of the run. Sending
// to any other address is a transport error.
func (p *Node) reachable(id node.ID) bool {
	_, ok := p.Ring.Of(id)
	return ok
}

// create makes this node the first member of a ring.
func (p *Node) create(env node.Env) {
	if p.Joined {
		return
	}
	p.Joined, p.Joining, p.JoinVia, p.JoinNext, p.JoinScan = true, false, nil, 0, 0
	p.setSuccs(env, []node.ID{p.Self})
	p.resetFingers()
	env.Disk().Put(diskMember, []byte{1})
	env.Disk().Put(diskCreator, []byte{1})
	env.Log().Info("created the ring")
}

// startJoin begins (or restarts) a join: ask the given nodes first, then
// every other node of the run, for the predecessor of our key.
func (p *Node) startJoin(env node.Env, first []node.ID) {
	if p.Joined {
		return
	}
	p.Joining = true
	var via []node.ID
	for _, id := range first {
		if id != p.Self && p.reachable(id) && !slices.Contains(via, id) {
			via = append(via, id)
		}
	}
	p.JoinVia, p.JoinNext, p.JoinScan = via, 0, 0
	p.joinNext(env)
}

// joinRemaining is what is left of JoinVia.
func (p *Node) joinRemaining() []node.ID {
	if p.JoinNext >= len(p.JoinVia) {
		return nil
	}
	return slices.Clone(p.JoinVia[p.JoinNext:])
}

// nextJoinCandidate returns the next node to ask: JoinVia's, then every
// node of the run in order except this one and those JoinVia named.
func (p *Node) nextJoinCandidate(env node.Env) (node.ID, bool) {
	if p.JoinNext < len(p.JoinVia) {
		p.JoinNext++
		return p.JoinVia[p.JoinNext-1], true
	}
	members := node.MembersOf(env)
	for p.JoinScan < members.Len() {
		id := members.At(p.JoinScan)
		p.JoinScan++
		if id != p.Self && p.reachable(id) && !slices.Contains(p.JoinVia, id) {
			return id, true
		}
	}
	return "", false
}

// joinNext asks the next candidate; when none is left, the node that
// created the ring creates it again (everyone else was refused or silent:
// there is no ring left to join), and anyone else retries later.
func (p *Node) joinNext(env node.Env) {
	via, ok := p.nextJoinCandidate(env)
	if !ok {
		if _, ok := env.Disk().Get(diskCreator); ok {
			p.create(env)
			return
		}
		env.After(joinRetry, timerJoin)
		return
	}
	p.request(env, Request{Kind: KindFind, Peer: via, Key: p.Key, Purpose: ForJoin})
}

// completeJoin installs what the lookup of our key found: pred precedes
// our key and succs is its successor list, whose nodes follow us.
func (p *Node) completeJoin(env node.Env, pred node.ID, succs []node.ID) {
	if p.Joined {
		return
	}
	p.Joined, p.Joining, p.JoinVia, p.JoinNext, p.JoinScan = true, false, nil, 0, 0
	list := slices.DeleteFunc(slices.Clone(succs), func(id node.ID) bool { return id == p.Self })
	if len(list) == 0 {
		list = []node.ID{pred}
	}
	p.setSuccs(env, list)
	// Chord's join: the predecessor is unknown until someone notifies us
	// or our successor names one.
	p.Pred = ""
	p.resetFingers()
	env.Disk().Put(diskMember, []byte{1})
	env.Log().Info("joined", "pred", string(pred), "succs", fmt.Sprint(p.Succs))
	p.notify(env)
}

// leave announces the departure to both neighbours and stops for good.
func (p *Node) leave(env node.Env) {
	if !p.Joined {
		return
	}
	m := Leave{Pred: p.Pred}
	if p.Pred != "" && p.Pred != p.Self {
		p.send(env, p.Pred, m)
	}
	if s := p.succ(); s != p.Self && s != p.Pred {
		p.send(env, s, m)
	}
	p.Joined, p.Left = false, true
	env.Disk().Put(diskLeft, []byte{1})
	env.Log().Info("left the ring")
}

func (p *Node) onLeave(env node.Env, from node.ID, m Leave) {
	wasPred := p.Pred == from
	p.forget(env, from)
	if p.Joined && wasPred && m.Pred != "" && m.Pred != p.Self && p.reachable(m.Pred) {
		p.Pred = m.Pred
	}
}

// stabilize asks the successor for its predecessor and successor list.
// A node alone on the ring asks itself, which is how it notices that
// someone notified it.
func (p *Node) stabilize(env node.Env) {
	p.request(env, Request{Kind: KindGetPred, Peer: p.succ()})
}

func (p *Node) onGetPredReply(env node.Env, from node.ID, m GetPredReply) {
	if _, ok := p.take(env, m.Req, KindGetPred, from); !ok {
		return
	}
	p.learn(from)
	if from != p.succ() {
		return // the successor changed while we asked
	}
	if p.cfg.bug == "pred-order" {
		p.adoptPredecessor(m.Pred)
		p.updateSuccessors(env, from, m.Pred, m.Succs)
	} else {
		p.updateSuccessors(env, from, m.Pred, m.Succs)
		p.adoptPredecessor(m.Pred)
	}
	p.notify(env)
}

// updateSuccessors applies stabilization: the successor's predecessor y,
// if it lies between us and the successor, is our new successor; the rest
// of the list follows the successor's own list.
func (p *Node) updateSuccessors(env node.Env, s, y node.ID, theirs []node.ID) {
	list := []node.ID{s}
	if p.betterSuccessor(y, s) {
		list = []node.ID{y, s}
	}
	p.setSuccs(env, append(list, theirs...))
}

// betterSuccessor reports whether y lies between us and our successor s.
// Our own predecessor never qualifies, except for a node alone on the
// ring, whose first successor is its predecessor (the ring of two): in a
// larger ring the predecessor lies behind us.
func (p *Node) betterSuccessor(y, s node.ID) bool {
	if y == "" || y == p.Self || !p.reachable(y) {
		return false
	}
	if y == p.Pred && p.succ() != p.Self {
		return false
	}
	return p.r.between(p.keyOf(y), p.Key, p.keyOf(s))
}

// adoptPredecessor: a member without a predecessor (it just joined, or
// its predecessor failed) takes its successor's predecessor y. Once the
// successor list has been updated from the same reply, a y that is not
// our successor precedes us; that is why this runs second.
func (p *Node) adoptPredecessor(y node.ID) {
	if !p.Joined || p.Pred != "" || y == "" || y == p.Self || y == p.succ() || !p.reachable(y) {
		return
	}
	p.Pred = y
}

// notify tells the successor we believe we are its predecessor.
func (p *Node) notify(env node.Env) {
	p.send(env, p.succ(), UpdatePred{})
}

func (p *Node) onUpdatePred(from node.ID) {
	if !p.Joined && from != p.Self {
		return // not in a ring: only its own ring of one
	}
	if from == p.Self && p.succ() != p.Self && p.cfg.bug != "pred-self" {
		return // a loopback sent while alone; we are no longer alone
	}
	p.learn(from)
	if p.Pred != "" && !p.r.between(p.keyOf(from), p.keyOf(p.Pred), p.Key) {
		return // not closer than the predecessor we have
	}
	// Our successor lying between another notifier and us means either our
	// successor is stale or the notifier is not our predecessor: taking it
	// would cross our pointers, so wait for stabilization to sort the
	// successor out; the notifier tries again next round. (For a loopback
	// the question is void: (self, self) is the whole ring.)
	if s := p.succ(); from != p.Self && s != p.Self && s != from && p.r.between(p.keyOf(s), p.keyOf(from), p.Key) {
		return
	}
	p.Pred = from
}

// setSuccs installs a successor list: duplicates and self dropped, at most
// the configured length, [Self] when empty.
func (p *Node) setSuccs(env node.Env, list []node.ID) {
	out := make([]node.ID, 0, p.cfg.succs)
	for _, id := range list {
		if id == "" || id == p.Self || slices.Contains(out, id) {
			continue
		}
		out = append(out, id)
		if len(out) == p.cfg.succs {
			break
		}
	}
	if p.cfg.bug == "succ-succ-hash" && len(out) > 1 {
		out[1] = node.ID(strconv.Itoa(p.keyOf(out[1]))) // the hash where the address belongs
	}
	if len(out) == 0 {
		out = []node.ID{p.Self}
	}
	if slices.Equal(out, p.Succs) {
		return
	}
	p.Succs = out
	if p.Joined {
		b, err := node.Marshal(out)
		if err != nil {
			panic(err)
		}
		env.Disk().Put(diskSuccs, b)
	}
}

// forget removes a peer that failed or left from every table. A member
// left without any successor is cut off from the ring: it drops out and
// rejoins through the nodes it still knows, unless it knows none (it was
// the last but one member, and is now alone).
func (p *Node) forget(env node.Env, peer node.ID) {
	if peer == p.Self {
		return
	}
	succs := slices.DeleteFunc(slices.Clone(p.Succs), func(id node.ID) bool { return id == peer })
	if p.Pred == peer {
		p.Pred = ""
	}
	// A backup that lies between our predecessor and us is behind us: the
	// list that named it was stale (it skipped a node that was down then).
	if p.Pred != "" && p.Pred != p.Self {
		succs = slices.DeleteFunc(succs, func(id node.ID) bool {
			return p.reachable(id) && p.r.between(p.keyOf(id), p.keyOf(p.Pred), p.Key)
		})
	}
	if len(succs) == 0 {
		succs = []node.ID{p.Self}
		if p.Joined && p.Succs[0] != p.Self {
			if known := p.knownPeers(peer); len(known) > 0 {
				p.dropOut(env, known)
				return
			}
		}
	}
	p.Succs = succs
	for i := range p.Fingers {
		if p.Fingers[i].Node == peer {
			p.Fingers[i].Node = p.succ()
		}
	}
}

// knownPeers lists the predecessor and the fingers, but not the failed
// peer: the nodes a member cut off from its successors can still ask.
func (p *Node) knownPeers(failed node.ID) []node.ID {
	var known []node.ID
	add := func(id node.ID) {
		if id != "" && id != p.Self && id != failed && p.reachable(id) && !slices.Contains(known, id) {
			known = append(known, id)
		}
	}
	add(p.Pred)
	for _, f := range p.Fingers {
		add(f.Node)
	}
	return known
}

// dropOut leaves the ring without ceremony and rejoins a moment later
// through the given nodes.
func (p *Node) dropOut(env node.Env, via []node.ID) {
	env.Log().Info("lost every successor: rejoining", "ask", fmt.Sprint(via))
	p.Joined, p.Joining, p.JoinVia, p.JoinNext, p.JoinScan = false, true, via, 0, 0
	p.Pred, p.Succs = "", []node.ID{p.Self}
	p.resetFingers()
	env.After(rejoinBackoff, timerJoin)
}

// resetFingers points every finger at the successor, a valid (if slow)
// route until fix-fingers refines it.
func (p *Node) resetFingers() {
	for i := range p.Fingers {
		p.Fingers[i].Node = p.succ()
	}
}

// learn considers a node we just heard from as a better finger.
func (p *Node) learn(c node.ID) {
	if !p.Joined || c == p.Self || !p.reachable(c) {
		return
	}
	ck := p.keyOf(c)
	for i := range p.Fingers {
		f := &p.Fingers[i]
		if p.closerFinger(ck, f.Start, p.keyOf(f.Node)) {
			f.Node = c
		}
	}
}

// closerFinger reports whether a node at c is a better finger for start
// than the current one at f: c lies in [start, f).
func (p *Node) closerFinger(c, start, f int) bool {
	if p.cfg.bug == "finger-boundary" {
		return c == start || p.r.between(c, start, f)
	}
	// By distance from start: a finger exactly at its start (f == start)
	// cannot be improved on.
	return p.r.dist(start, c) < p.r.dist(start, f)
}

// fixFinger refreshes one finger per period, round robin.
func (p *Node) fixFinger(env node.Env) {
	i := p.NextFinger
	p.NextFinger = (i + 1) % len(p.Fingers)
	p.lookup(env, Request{Kind: KindFind, Key: p.Fingers[i].Start, Purpose: ForFinger, Finger: i})
}

// setFinger installs the result of fix-fingers' lookup.
func (p *Node) setFinger(i int, n node.ID) {
	if p.cfg.bug == "finger-slow" {
		for j, f := range p.Fingers {
			if j == i {
				f.Node = n // a copy of the row: the table keeps the old node
			}
		}
		return
	}
	p.Fingers[i].Node = n
}

// lookup starts an iterative lookup of req.Key's predecessor, answering
// it locally when the key lies between us and our successor.
func (p *Node) lookup(env node.Env, req Request) {
	if p.r.upTo(req.Key, p.Key, p.keyOf(p.succ())) {
		p.found(env, req, p.Self, p.Succs)
		return
	}
	req.Peer = p.closestPreceding(req.Key)
	p.request(env, req)
}

// closestPreceding is the known node closest before key (fingers and
// successors), or the successor.
func (p *Node) closestPreceding(key int) node.ID {
	best, bestDist := p.succ(), -1
	consider := func(id node.ID) {
		if id == "" || id == p.Self {
			return
		}
		k := p.keyOf(id)
		if p.r.between(k, p.Key, key) && p.r.dist(p.Key, k) > bestDist {
			best, bestDist = id, p.r.dist(p.Key, k)
		}
	}
	for _, f := range p.Fingers {
		consider(f.Node)
	}
	for _, s := range p.Succs {
		consider(s)
	}
	return best
}

func (p *Node) onFindPred(env node.Env, from node.ID, m FindPred) {
	reply := FindPredReply{Req: m.Req, Key: m.Key}
	switch {
	case !p.Joined:
		reply.Refused = true
	case p.r.upTo(m.Key, p.Key, p.keyOf(p.succ())):
		reply.Done, reply.Node, reply.Succs = true, p.Self, slices.Clone(p.Succs)
	default:
		reply.Node = p.closestPreceding(m.Key)
	}
	env.Send(from, reply)
}

// maxHops bounds an iterative lookup; more hops than ring bits means the
// route is going in circles through stale fingers.
func (p *Node) maxHops() int { return 2 * len(p.Fingers) }

func (p *Node) onFindPredReply(env node.Env, from node.ID, m FindPredReply) {
	req, ok := p.take(env, m.Req, KindFind, from)
	if !ok {
		return
	}
	switch {
	case m.Refused:
		p.lookupFailed(env, req)
	case m.Done:
		p.learn(from)
		p.found(env, req, m.Node, m.Succs)
	default:
		p.learn(from)
		if m.Node == "" || m.Node == from || req.Hops >= p.maxHops() {
			p.lookupFailed(env, req)
			return
		}
		req.Peer, req.Hops = m.Node, req.Hops+1
		p.request(env, req)
	}
}

// found completes a lookup: pred precedes the key, succs is its successor
// list.
func (p *Node) found(env node.Env, req Request, pred node.ID, succs []node.ID) {
	switch req.Purpose {
	case ForJoin:
		p.completeJoin(env, pred, succs)
	case ForFinger:
		if len(succs) > 0 && p.Joined {
			p.setFinger(req.Finger, succs[0])
		}
	}
}

// lookupFailed continues after a hop refused or failed: a join asks its
// next candidate; a finger lookup restarts from our own table a few times.
func (p *Node) lookupFailed(env node.Env, req Request) {
	switch req.Purpose {
	case ForJoin:
		if !p.Joined {
			p.joinNext(env)
		}
	case ForFinger:
		if p.Joined && req.Retries < 2 {
			req.Retries++
			req.Hops = 0
			p.lookup(env, req)
		}
	}
}

// request sends a request and arms its timeout. An address that names no
// node fails at once, as a connection to it would.
func (p *Node) request(env node.Env, req Request) {
	if !p.reachable(req.Peer) {
		p.failed(env, req)
		return
	}
	p.NextReq++
	id := p.NextReq
	var m node.Message
	switch req.Kind {
	case KindFind:
		m = FindPred{Req: id, Key: req.Key}
	case KindGetPred:
		m = GetPred{Req: id}
	case KindPing:
		m = Ping{Req: id}
	}
	env.Send(req.Peer, m)
	req.Timer = env.After(requestTimeout, timerTimeout)
	p.Pending[id] = req
}

// take claims the pending request a reply answers; stale and duplicate
// replies find none.
func (p *Node) take(env node.Env, id uint64, kind string, from node.ID) (Request, bool) {
	req, ok := p.Pending[id]
	if !ok || req.Kind != kind || req.Peer != from {
		return Request{}, false
	}
	delete(p.Pending, id)
	env.Cancel(req.Timer)
	return req, true
}

// expire fails the request whose timeout fired.
func (p *Node) expire(env node.Env, timer node.TimerID) {
	for _, id := range slices.Sorted(maps.Keys(p.Pending)) {
		if req := p.Pending[id]; req.Timer == timer {
			delete(p.Pending, id)
			p.failed(env, req)
			return
		}
	}
}

// failed handles a transport error: the peer is removed everywhere, then
// a lookup carries on without it.
func (p *Node) failed(env node.Env, req Request) {
	env.Log().Info("peer failed", "peer", string(req.Peer), "request", req.Kind)
	p.forget(env, req.Peer)
	if req.Kind == KindFind {
		p.lookupFailed(env, req)
	}
}

// send sends a one-way message; an address that names no node is a
// transport error.
func (p *Node) send(env node.Env, to node.ID, m node.Message) {
	if !p.reachable(to) {
		env.Log().Info("peer failed", "peer", string(to))
		p.forget(env, to)
		return
	}
	env.Send(to, m)
}

// System describes chord to the drivers.
var System = &system.System{
	Name:    "chord",
	Summary: "Chord ring maintenance: join, stabilize, fix-fingers, leave; 10 nodes join at once, one leaves",
	Codec: node.NewCodec().MustRegister(CreateRing{}, JoinRing{}, LeaveRing{},
		FindPred{}, FindPredReply{}, UpdatePred{}, GetPred{}, GetPredReply{}, Ping{}, Pong{}, Leave{}),
	New: New,
	Bugs: []system.Bug{
		{Name: "succ-succ-hash", Summary: "the successor's successor is stored as the hash of its address; the ring breaks after a node leaves"},
		{Name: "finger-slow", Summary: "fix-fingers updates a copy of the entry it computed; fingers converge much later than needed"},
		{Name: "finger-boundary", Summary: "the finger interval test treats (k, k) as the whole ring; a perfect finger is replaced by any node and fingers oscillate"},
		{Name: "pred-self", Summary: "a loopback UpdatePred arriving after the predecessor was cleared sets pred = self while successors exist"},
		{Name: "pred-order", Summary: "predecessor updated before the successor list; the successor then lies between predecessor and node"},
	},
	Sim: system.SimDefaults{
		Nodes: 10,
		Time:  5 * time.Second,
	},
	Scenario: scenario,
	Params: []system.Param{
		{Name: "bits", Default: strconv.Itoa(defaultBits), Summary: "the ring has 2^bits positions (4..30), which must hold every node"},
		{Name: "succs", Default: strconv.Itoa(defaultSuccs), Summary: "successor-list length (1..16)"},
		{Name: "leave_at", Default: defaultLeaveAt.String(), Summary: "when the scenario's node leaves the ring (0: nobody leaves)"},
	},
	Validate: validate,
}

// Scenario timing: joins spread over the first 50 ms, one departure at
// 2 s (parameter leave_at; 0 for none), when the ring has long stabilized.
const (
	joinFrom       = 10 * time.Millisecond
	joinTo         = 50 * time.Millisecond
	defaultLeaveAt = 2 * time.Second
)

// scenario: the first node creates the ring, every other node joins
// through it at a random moment of [10 ms, 50 ms), and a random node
// leaves at leave_at.
func scenario(ctl system.Controller) {
	nodes := ctl.Nodes()
	boot := nodes[0]
	ctl.At(0, func() { ctl.Input(boot, CreateRing{}) })
	for _, id := range nodes[1:] {
		at := joinFrom + time.Duration(ctl.Rand().Int64N(int64(joinTo-joinFrom)))
		ctl.At(at, func() { ctl.Input(id, JoinRing{Via: boot}) })
	}
	at, err := leaveAt(ctl.Config())
	if err != nil {
		panic(err.Error())
	}
	if at > 0 {
		leaver := nodes[ctl.Rand().IntN(len(nodes))]
		ctl.At(at, func() { ctl.Input(leaver, LeaveRing{}) })
	}
}
