// Package chainrep is chain replication (van Renesse and Schneider, OSDI
// 2004): servers s1..sK form a chain; a client writes at the head and reads
// at the tail; a master watches the servers by heartbeats and repairs the
// chain when one fails. It is the example of a deep bug that random seeds
// miss: the seeded bug needs two neighbouring servers to fail within one
// round of the master's failure detector.
//
// Nodes are "client", "master" and "s1".."sK" (K = nodes-2). The chain
// starts as s1, s2, ..., sK and only ever shrinks: servers are fail-stop,
// so a server that restarts after a crash finds on its disk that it has run
// before and stays out (Retired); the master never re-adds a server.
//
// Updates flow down the chain. The head gives a client's Write the next
// sequence number and streams the Update to its successor; every server
// appends what its predecessor streams (it trusts that stream: an update
// at or below its last is a duplicate, anything above is appended) and
// streams it on; the tail acknowledges to the client. Chain replication
// assumes reliable FIFO links between servers. The simulator delivers
// every message to a live node (no loss by default) but reorders them, so
// each Forward carries a per-link number and receivers deliver in that
// order. Reads go to the tail, which answers with the key's latest value
// and its sequence number.
//
// The master declares a server failed when it has not heard a heartbeat
// for failAfter (five heartbeat periods, far above the simulator's default
// 10 ms maximum latency, so a live server is never suspected). Heartbeats
// and checks keep to rounds of the common clock, so servers that crash in
// the same 50 ms round are declared failed in the same check. It then
// removes every server that failed in that round from the chain at once,
// and tells each remaining server its predecessor and successor in a new
// configuration (Reconfig, numbered by Version). A server whose successor
// changed restreams its history from Resume, the successor's last sequence
// number as the successor itself last reported it, so the successor gets
// everything it lacks (duplicates are ignored) and never a hole. A server
// that becomes the tail acknowledges the updates its old successor may not
// have. The master and the client keep what they need on disk and recover
// after a crash.
//
// Seeded bug (--bug):
//
//   - neighbour-failure: the master repairs the failures of a round one at
//     a time. When it repairs f whose predecessor in the pre-repair chain
//     failed too, it assumes that neighbour's repair has already made p
//     (the live predecessor) resend what the servers after f lack, so it
//     only re-routes p to f's successor, with no resume point. But that
//     resend went to the failed neighbour: p carries on streaming from
//     where it stood, and the updates it had streamed into the two dead
//     servers (every write it took while the failure went undetected)
//     never reach the survivor, whose history gets a hole. With a single
//     failure, or failures that are not neighbours, every repair has its
//     resume point and the buggy master is correct.
package chainrep

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// Node IDs besides the servers.
const (
	ClientID node.ID = "client"
	MasterID node.ID = "master"
)

// BugNeighbourFailure is the seeded bug's name.
const BugNeighbourFailure = "neighbour-failure"

// Timing. The failure detector works in rounds of the common (virtual)
// clock: servers beat at the start of every round, the master checks in
// the middle of it. Servers that crash in the same round therefore miss
// the same heartbeats and are declared failed in the same check, whatever
// the latencies (up to half a round). failAfter must exceed a round plus
// the largest latency by a wide margin: a false suspicion would remove a
// live server.
const (
	round          = 50 * time.Millisecond
	heartbeatEvery = round
	detectEvery    = round
	detectPhase    = round / 2
	failAfter      = 5 * round
	writeEvery     = 100 * time.Millisecond
	readEvery      = 150 * time.Millisecond
	retryEvery     = 200 * time.Millisecond
	retryAfter     = 500 * time.Millisecond
	// maxPending caps the client's unacknowledged writes. It is well above
	// what a healthy chain leaves pending, so writes keep coming while a
	// failure is being detected.
	maxPending = 16
	maxReads   = 2
	keepReads  = 8
)

// Keys the client writes and reads.
var keys = []string{"a", "b", "c"}

// Write asks the head to apply an update. Req identifies the client's
// request across retries.
type Write struct {
	Req      uint64
	Key, Val string
}

// Update is one entry of the replicated history.
type Update struct {
	Seq      uint64
	Key, Val string
	Req      uint64
}

// Forward streams one update to the successor. Link numbers the messages
// of one sender to one receiver, for in-order delivery; Version is the
// sender's configuration.
type Forward struct {
	Version uint64
	Link    uint64
	U       Update
}

// Ack tells the client that the tail holds its write, at Seq.
type Ack struct {
	Req, Seq uint64
}

// Status asks the tail to acknowledge Req again if it holds it (the first
// Ack may have reached a crashed client, or come from a tail that failed).
type Status struct {
	Req uint64
}

// Read asks the tail for a key's latest value.
type Read struct {
	Req uint64
	Key string
}

// ReadReply answers a Read; Seq is the update that wrote Val (0: never
// written).
type ReadReply struct {
	Req      uint64
	Key, Val string
	Seq      uint64
}

// Heartbeat tells the master a server is alive, its configuration and its
// last sequence number.
type Heartbeat struct {
	Version, Last uint64
}

// Reconfig gives a server its place in configuration Version. A server
// whose successor changes streams from Resume (0: from where it stands);
// one that becomes the tail acknowledges its updates from AckFrom.
type Reconfig struct {
	Version    uint64
	Pred, Succ node.ID
	Resume     uint64
	AckFrom    uint64
}

// Removed tells a server the master has taken it out of the chain.
type Removed struct{}

// GetView asks the master for the current head and tail.
type GetView struct{}

// View is the chain as the client needs it.
type View struct {
	Version    uint64
	Head, Tail node.ID
}

// ServerIndex returns i for server "si", or 0 for any other node.
func ServerIndex(id node.ID) int {
	s, ok := strings.CutPrefix(string(id), "s")
	if !ok {
		return 0
	}
	i, err := strconv.Atoi(s)
	if err != nil || i < 1 {
		return 0
	}
	return i
}

// initialChain lists the servers of a run in chain order.
func initialChain(nodes []node.ID) []node.ID {
	var chain []node.ID
	for _, id := range nodes {
		if ServerIndex(id) > 0 {
			chain = append(chain, id)
		}
	}
	slices.SortFunc(chain, func(a, b node.ID) int { return ServerIndex(a) - ServerIndex(b) })
	return chain
}

// neighbour returns the server d places from id in chain (d = -1: the
// predecessor, +1: the successor), or "".
func neighbour(chain []node.ID, id node.ID, d int) node.ID {
	i := slices.Index(chain, id)
	if i < 0 || i+d < 0 || i+d >= len(chain) {
		return ""
	}
	return chain[i+d]
}

func get(env node.Env, key string, v any) bool {
	b, ok := env.Disk().Get(key)
	if !ok {
		return false
	}
	if err := node.Unmarshal(b, v); err != nil {
		panic(fmt.Sprintf("chainrep: corrupt %q on disk: %v", key, err))
	}
	return true
}

func put(env node.Env, key string, v any) {
	b, err := node.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("chainrep: encode %q: %v", key, err))
	}
	env.Disk().Put(key, b)
}

// untilPhase is the wait from now to the next time t > now with
// t mod period == phase.
func untilPhase(now time.Time, period, phase time.Duration) time.Duration {
	d := (phase - time.Duration(now.UnixNano())%period + period) % period
	if d == 0 {
		d = period
	}
	return d
}

// jitter spreads periodic timers so nodes do not tick in lockstep.
func jitter(env node.Env, d time.Duration) time.Duration {
	return d/2 + time.Duration(env.Rand().Int64N(int64(d)))
}

// ---------------------------------------------------------------- server

// Server is one replica in the chain.
type Server struct {
	Self node.ID
	// Retired: this server restarted after a crash (or the master removed
	// it) and is out of the chain for good.
	Retired    bool
	Version    uint64
	Pred, Succ node.ID
	History    []Update
	// NextIdx is the index in History of the next update to stream to
	// Succ.
	NextIdx int
	// Out counts the Forwards sent to each server, In those delivered
	// from each, in order; Early holds the ones that overtook others.
	Out   map[node.ID]uint64
	In    map[node.ID]uint64
	Early map[node.ID]map[uint64]Forward
}

const keyStarted = "started"

func newServer(id node.ID, cfg system.Config) *Server {
	chain := initialChain(cfg.Nodes)
	return &Server{
		Self: id, Pred: neighbour(chain, id, -1), Succ: neighbour(chain, id, +1),
		Out: map[node.ID]uint64{}, In: map[node.ID]uint64{}, Early: map[node.ID]map[uint64]Forward{},
	}
}

// Init implements node.Handler. A server that finds its mark on disk has
// crashed before: fail-stop, it stays out of the chain.
func (s *Server) Init(env node.Env) {
	if _, ok := env.Disk().Get(keyStarted); ok {
		s.retire(env, "restarted after a crash")
		return
	}
	env.Disk().Put(keyStarted, []byte{1})
	env.After(untilPhase(env.Now(), heartbeatEvery, 0), "heartbeat")
}

func (s *Server) retire(env node.Env, why string) {
	env.Log().Info("server retires", "why", why)
	s.Retired, s.Pred, s.Succ = true, "", ""
}

func (s *Server) last() uint64 {
	if len(s.History) == 0 {
		return 0
	}
	return s.History[len(s.History)-1].Seq
}

// isTail and isHead: this server's view, which is what it acts on.
func (s *Server) isTail() bool { return !s.Retired && s.Succ == "" }
func (s *Server) isHead() bool { return !s.Retired && s.Pred == "" }

// Timer implements node.Handler.
func (s *Server) Timer(env node.Env, t node.Timer) {
	if t.Name != "heartbeat" || s.Retired {
		return
	}
	env.Send(MasterID, Heartbeat{Version: s.Version, Last: s.last()})
	env.After(untilPhase(env.Now(), heartbeatEvery, 0), "heartbeat")
}

// Receive implements node.Handler.
func (s *Server) Receive(env node.Env, from node.ID, m node.Message) {
	if s.Retired {
		return
	}
	switch m := m.(type) {
	case Write:
		s.onWrite(env, m)
	case Forward:
		s.onForward(env, from, m)
	case Reconfig:
		s.onReconfig(env, m)
	case Removed:
		s.retire(env, "removed by the master")
	case Read:
		if s.isTail() {
			var r ReadReply
			for i := len(s.History) - 1; i >= 0; i-- {
				if u := s.History[i]; u.Key == m.Key {
					r = ReadReply{Key: u.Key, Val: u.Val, Seq: u.Seq}
					break
				}
			}
			r.Req, r.Key = m.Req, m.Key
			env.Send(from, r)
		}
	case Status:
		if s.isTail() {
			if i := s.find(m.Req); i >= 0 {
				env.Send(ClientID, Ack{Req: m.Req, Seq: s.History[i].Seq})
			}
		}
	}
}

// find returns the index of the update for client request req, or -1.
func (s *Server) find(req uint64) int {
	for i := len(s.History) - 1; i >= 0; i-- {
		if s.History[i].Req == req {
			return i
		}
	}
	return -1
}

// onWrite: only the head takes writes; a retried write it already holds
// is not applied twice (the client asks the tail for its Ack).
func (s *Server) onWrite(env node.Env, w Write) {
	if !s.isHead() || s.find(w.Req) >= 0 {
		return
	}
	s.apply(env, Update{Seq: s.last() + 1, Key: w.Key, Val: w.Val, Req: w.Req})
}

// apply appends an update, acknowledges it at the tail and streams it on.
func (s *Server) apply(env node.Env, u Update) {
	s.History = append(s.History, u)
	if s.isTail() {
		env.Send(ClientID, Ack{Req: u.Req, Seq: u.Seq})
	}
	s.pump(env)
}

// pump streams every update the successor has not been sent.
func (s *Server) pump(env node.Env) {
	if s.Succ == "" {
		s.NextIdx = len(s.History)
		return
	}
	for ; s.NextIdx < len(s.History); s.NextIdx++ {
		s.Out[s.Succ]++
		env.Send(s.Succ, Forward{Version: s.Version, Link: s.Out[s.Succ], U: s.History[s.NextIdx]})
	}
}

// onForward delivers Forwards from one sender in the order sent.
func (s *Server) onForward(env node.Env, from node.ID, f Forward) {
	next := s.In[from] + 1
	switch {
	case f.Link < next:
		return // duplicate
	case f.Link > next:
		if s.Early[from] == nil {
			s.Early[from] = map[uint64]Forward{}
		}
		s.Early[from][f.Link] = f
		return
	}
	for {
		s.In[from] = f.Link
		s.deliver(env, from, f)
		g, ok := s.Early[from][f.Link+1]
		if !ok {
			break
		}
		delete(s.Early[from], g.Link)
		f = g
	}
	if len(s.Early[from]) == 0 {
		delete(s.Early, from)
	}
}

// deliver applies one update of the predecessor's stream.
func (s *Server) deliver(env node.Env, from node.ID, f Forward) {
	if from != s.Pred {
		if f.Version <= s.Version {
			return // from a predecessor of an older configuration
		}
		// The sender is already in a newer configuration where it
		// precedes this server; the master's Reconfig is on its way.
		s.Pred = from
	}
	if f.U.Seq <= s.last() {
		return // already held: a restream after a repair
	}
	s.apply(env, f.U)
}

// onReconfig takes this server's place in a newer configuration.
func (s *Server) onReconfig(env node.Env, r Reconfig) {
	if r.Version <= s.Version {
		return
	}
	s.Version, s.Pred = r.Version, r.Pred
	if r.Succ == s.Succ {
		return
	}
	env.Log().Info("new successor", "version", r.Version, "succ", r.Succ, "resume", r.Resume)
	s.Succ = r.Succ
	if s.Succ == "" {
		// The old tail may not have acknowledged everything it had.
		for _, u := range s.History {
			if u.Seq >= r.AckFrom {
				env.Send(ClientID, Ack{Req: u.Req, Seq: u.Seq})
			}
		}
		s.NextIdx = len(s.History)
		return
	}
	if r.Resume > 0 {
		s.NextIdx, _ = slices.BinarySearchFunc(s.History, r.Resume, func(u Update, seq uint64) int {
			return cmp.Compare(u.Seq, seq)
		})
	}
	s.pump(env)
}

// ---------------------------------------------------------------- master

// Master monitors the servers and reconfigures the chain.
type Master struct {
	Version uint64
	Chain   []node.ID
	// LastHeard and LastSeq come from heartbeats; they are not persisted
	// (after a restart every server gets a fresh failAfter to be heard).
	LastHeard map[node.ID]time.Time
	LastSeq   map[node.ID]uint64

	bug     string
	initial []node.ID `replay:"-"` // the servers, fixed
}

// membership is what the master keeps on disk.
type membership struct {
	Version uint64
	Chain   []node.ID
}

const keyChain = "chain"

func newMaster(cfg system.Config) *Master {
	return &Master{
		bug: cfg.Bug, initial: initialChain(cfg.Nodes),
		LastHeard: map[node.ID]time.Time{}, LastSeq: map[node.ID]uint64{},
	}
}

// Init implements node.Handler.
func (m *Master) Init(env node.Env) {
	var mb membership
	if get(env, keyChain, &mb) {
		m.Version, m.Chain = mb.Version, mb.Chain
		env.Log().Info("master recovers", "version", m.Version, "chain", fmt.Sprint(m.Chain))
	} else {
		m.Chain = m.initial
		m.save(env)
	}
	now := env.Now()
	for _, id := range m.Chain {
		m.LastHeard[id] = now
	}
	env.Send(ClientID, m.view())
	env.After(untilPhase(now, detectEvery, detectPhase), "detect")
}

func (m *Master) save(env node.Env) {
	put(env, keyChain, membership{Version: m.Version, Chain: m.Chain})
}

func (m *Master) view() View {
	v := View{Version: m.Version}
	if len(m.Chain) > 0 {
		v.Head, v.Tail = m.Chain[0], m.Chain[len(m.Chain)-1]
	}
	return v
}

// Receive implements node.Handler.
func (m *Master) Receive(env node.Env, from node.ID, msg node.Message) {
	switch msg := msg.(type) {
	case Heartbeat:
		if !slices.Contains(m.Chain, from) {
			env.Send(from, Removed{})
			return
		}
		m.LastHeard[from] = env.Now()
		m.LastSeq[from] = max(m.LastSeq[from], msg.Last)
		if msg.Version < m.Version {
			// Its Reconfig was lost (or overtaken): send its place again.
			r := m.place(from)
			r.AckFrom = 1
			env.Send(from, r)
		}
	case GetView:
		env.Send(from, m.view())
	}
}

// Timer implements node.Handler.
func (m *Master) Timer(env node.Env, t node.Timer) {
	if t.Name != "detect" {
		return
	}
	now := env.Now()
	var failed []node.ID
	for _, id := range m.Chain {
		if now.Sub(m.LastHeard[id]) > failAfter {
			failed = append(failed, id)
		}
	}
	if len(failed) > 0 {
		m.repair(env, failed)
	}
	env.After(untilPhase(now, detectEvery, detectPhase), "detect")
}

// place is server id's Reconfig in the current chain, resuming its stream
// from its successor's last reported sequence number.
func (m *Master) place(id node.ID) Reconfig {
	r := Reconfig{Version: m.Version, Pred: neighbour(m.Chain, id, -1), Succ: neighbour(m.Chain, id, +1)}
	if r.Succ != "" {
		r.Resume = m.LastSeq[r.Succ] + 1
	}
	return r
}

// repair removes the servers that failed in this detection round.
func (m *Master) repair(env node.Env, failed []node.ID) {
	env.Log().Info("servers failed", "failed", fmt.Sprint(failed), "chain", fmt.Sprint(m.Chain))
	if m.bug != BugNeighbourFailure {
		m.reconfigure(env, failed, "")
		return
	}
	// BUG: one failure at a time. When f's predecessor in the pre-repair
	// chain failed too, the repair assumes that neighbour's repair already
	// had p resend what the servers after f lack, and only re-routes p.
	old := slices.Clone(m.Chain)
	for _, f := range failed {
		var reroute node.ID
		if p := neighbour(m.Chain, f, -1); p != "" && p != neighbour(old, f, -1) {
			reroute = p
		}
		m.reconfigure(env, []node.ID{f}, reroute)
	}
}

// reconfigure removes failed from the chain as one new configuration and
// tells every remaining server its place. reroute, if set, gets its new
// successor without a resume point (the seeded bug).
func (m *Master) reconfigure(env node.Env, failed []node.ID, reroute node.ID) {
	old := m.Chain
	m.Chain = slices.DeleteFunc(slices.Clone(old), func(id node.ID) bool { return slices.Contains(failed, id) })
	m.Version++
	m.save(env)
	for _, id := range m.Chain {
		r := m.place(id)
		oldSucc := neighbour(old, id, +1)
		switch {
		case r.Succ == "" && oldSucc != "":
			r.AckFrom = m.LastSeq[oldSucc] + 1
		case id == reroute:
			r.Resume = 0
		}
		env.Send(id, r)
	}
	for _, f := range failed {
		env.Send(f, Removed{}) // in case it is alive after all
		delete(m.LastHeard, f)
		delete(m.LastSeq, f)
	}
	env.Log().Info("chain reconfigured", "version", m.Version, "chain", fmt.Sprint(m.Chain))
	env.Send(ClientID, m.view())
}

// ---------------------------------------------------------------- client

// PendingWrite is a write the tail has not acknowledged yet.
type PendingWrite struct {
	Key, Val string
	First    time.Time // first sent
	Last     time.Time // last (re)sent
}

// PendingRead is a read in flight. Acked is the latest sequence number
// the client had seen acknowledged for Key when it sent the read.
type PendingRead struct {
	Key   string
	Acked uint64
	Sent  time.Time
}

// ReadResult is a completed read: the tail answered Got for Key, while the
// client had seen Acked acknowledged when it asked.
type ReadResult struct {
	Req   uint64
	Key   string
	Acked uint64
	Got   uint64
	From  node.ID
}

// Client writes a steady stream of updates over a few keys and reads them
// back from the tail.
type Client struct {
	View    View
	NextReq uint64
	// Acked is, per key, the latest sequence number acknowledged to this
	// client. It is on disk, with NextReq and Writes.
	Acked  map[string]uint64
	Writes map[uint64]PendingWrite
	Reads  map[uint64]PendingRead
	// Done holds the latest completed reads, newest last.
	Done []ReadResult

	hasMaster bool `replay:"-"` // fixed by the run's nodes
}

type clientDisk struct {
	NextReq uint64
	Acked   map[string]uint64
	Writes  map[uint64]PendingWrite
}

const keyClient = "client"

func newClient(cfg system.Config) *Client {
	c := &Client{
		Acked: map[string]uint64{}, Writes: map[uint64]PendingWrite{}, Reads: map[uint64]PendingRead{},
		hasMaster: slices.Contains(cfg.Nodes, MasterID),
	}
	if chain := initialChain(cfg.Nodes); len(chain) > 0 {
		c.View = View{Head: chain[0], Tail: chain[len(chain)-1]}
	}
	return c
}

// Init implements node.Handler: recover the requests and acknowledgements
// from disk, and ask the master where the chain is now.
func (c *Client) Init(env node.Env) {
	var d clientDisk
	if get(env, keyClient, &d) {
		c.NextReq = d.NextReq
		if d.Acked != nil {
			c.Acked = d.Acked
		}
		if d.Writes != nil {
			c.Writes = d.Writes
		}
		c.askView(env)
	}
	env.After(jitter(env, writeEvery), "write")
	env.After(jitter(env, readEvery), "read")
	env.After(retryEvery, "retry")
}

func (c *Client) save(env node.Env) {
	put(env, keyClient, clientDisk{NextReq: c.NextReq, Acked: c.Acked, Writes: c.Writes})
}

func (c *Client) askView(env node.Env) {
	if c.hasMaster {
		env.Send(MasterID, GetView{})
	}
}

// Timer implements node.Handler.
func (c *Client) Timer(env node.Env, t node.Timer) {
	now := env.Now()
	switch t.Name {
	case "write":
		if c.View.Head != "" && len(c.Writes) < maxPending {
			c.NextReq++
			key := keys[env.Rand().IntN(len(keys))]
			w := PendingWrite{Key: key, Val: fmt.Sprintf("%s%d", key, c.NextReq), First: now, Last: now}
			c.Writes[c.NextReq] = w
			c.save(env)
			env.Send(c.View.Head, Write{Req: c.NextReq, Key: w.Key, Val: w.Val})
		}
		env.After(writeEvery, "write")
	case "read":
		if c.View.Tail != "" && len(c.Reads) < maxReads {
			c.NextReq++
			key := keys[env.Rand().IntN(len(keys))]
			c.Reads[c.NextReq] = PendingRead{Key: key, Acked: c.Acked[key], Sent: now}
			c.save(env)
			env.Send(c.View.Tail, Read{Req: c.NextReq, Key: key})
		}
		env.After(readEvery, "read")
	case "retry":
		c.retry(env, now)
		env.After(retryEvery, "retry")
	}
}

// retry resends writes that have waited too long (to the head, which
// ignores one it holds, and asks the tail for the Ack), gives up on late
// reads, and asks the master for a fresh view of the chain.
func (c *Client) retry(env node.Env, now time.Time) {
	late := false
	for _, req := range slices.Sorted(maps.Keys(c.Writes)) {
		w := c.Writes[req]
		if now.Sub(w.Last) < retryAfter {
			continue
		}
		late = true
		w.Last = now
		c.Writes[req] = w
		if c.View.Head != "" {
			env.Send(c.View.Head, Write{Req: req, Key: w.Key, Val: w.Val})
		}
		if c.View.Tail != "" {
			env.Send(c.View.Tail, Status{Req: req})
		}
	}
	for _, req := range slices.Sorted(maps.Keys(c.Reads)) {
		if now.Sub(c.Reads[req].Sent) >= retryAfter {
			late = true
			delete(c.Reads, req)
		}
	}
	if late {
		c.askView(env)
	}
}

// Receive implements node.Handler.
func (c *Client) Receive(env node.Env, from node.ID, m node.Message) {
	switch m := m.(type) {
	case View:
		if m.Version >= c.View.Version {
			c.View = m
		}
	case Ack:
		w, ok := c.Writes[m.Req]
		if !ok {
			return
		}
		delete(c.Writes, m.Req)
		c.Acked[w.Key] = max(c.Acked[w.Key], m.Seq)
		c.save(env)
	case ReadReply:
		r, ok := c.Reads[m.Req]
		if !ok {
			return
		}
		delete(c.Reads, m.Req)
		c.Done = append(c.Done, ReadResult{Req: m.Req, Key: r.Key, Acked: r.Acked, Got: m.Seq, From: from})
		if len(c.Done) > keepReads {
			c.Done = slices.Delete(c.Done, 0, len(c.Done)-keepReads)
		}
	}
}

// ---------------------------------------------------------------- system

// New builds the handler for node id.
func New(id node.ID, cfg system.Config) node.Handler {
	switch id {
	case ClientID:
		return newClient(cfg)
	case MasterID:
		return newMaster(cfg)
	}
	return newServer(id, cfg)
}

// nodeName: "client", "master", then the servers.
func nodeName(i int) node.ID {
	switch i {
	case 0:
		return ClientID
	case 1:
		return MasterID
	}
	return node.ID(fmt.Sprintf("s%d", i-1))
}

// System describes chain replication to the drivers.
var System = &system.System{
	Name:    "chainrep",
	Summary: "chain replication: writes at the head, reads at the tail, a master repairs the chain when servers fail",
	Codec: node.NewCodec().MustRegister(Write{}, Forward{}, Ack{}, Status{}, Read{}, ReadReply{},
		Heartbeat{}, Reconfig{}, Removed{}, GetView{}, View{}),
	New: New,
	Bugs: []system.Bug{
		{Name: BugNeighbourFailure, Summary: "two neighbouring servers failing in one detection round: the master re-routes around them without a resume point, a hole in the survivor's history"},
	},
	NodeName: nodeName,
	Sim: system.SimDefaults{
		Nodes: 6,
		Dup:   0.02,
		// Servers fail only by churn, rarely: two neighbours failing
		// within one detection round (about 50 ms) is what the bug needs,
		// and random seeds almost never produce it.
		Churn:   0.005,
		DownMin: 200 * time.Millisecond,
		DownMax: time.Second,
		Steps:   200_000,
		Time:    20 * time.Second,
	},
	Scenario: scenario,
	Params: []system.Param{
		{Name: "crash", Summary: "crashes the scenario makes: NODE[+NODE...]@TIME, comma-separated (e.g. s2+s3@3s); each restarts a second later"},
	},
	Validate: validate,
}
