// Package transport is a reliable in-order transport over the simulated
// lossy network, the transport case study of the WiDS Checker paper.
//
// Every node streams application messages to its peers. A sender opens a
// connection to a peer lazily, with an ID drawn from a counter on its disk,
// so the connections of one sender are ordered even across its restarts.
// Packets carry the connection ID and a sequence number; until the first
// acknowledgement arrives they carry the SYN flag, which tells the
// receiver to start a new connection. The receiver buffers packets that
// arrive early, delivers in order and acknowledges cumulatively; the
// sender keeps a window of unacknowledged packets in flight, retransmits
// them on a backed-off timer, and resends the oldest at once on the third
// duplicate acknowledgement (fast retransmit). A crash
// loses every connection: a restarted sender opens new ones, and a
// restarted receiver answers data for a connection it does not know with a
// Reset, after which the sender reopens and resends what is unacknowledged.
// Receivers remember durably the highest connection ID they accepted from
// each peer, so a delayed SYN of an older connection is recognised.
//
// Seeded bug (--bug):
//
//   - stale-syn: the receiver takes any SYN of a connection other than its
//     current one to mean that the peer restarted. A delayed SYN of an old
//     connection then replaces the new one; the new connection's data is
//     answered with acknowledgements of the old one, which the sender
//     ignores, and its messages are never acknowledged (a liveness bug).
package transport

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// Window and retransmission timing. The initial timeout exceeds the
// default scenario's worst round trip (2 x 80 ms).
const (
	window     = 16
	rtoInitial = 200 * time.Millisecond
	rtoMax     = 800 * time.Millisecond
	dupAcks    = 3 // duplicate acknowledgements that trigger a fast retransmit
)

// Submit is the external input: the application hands message number N
// for peer To to the transport.
type Submit struct {
	To   node.ID
	N    int
	Body string
}

// Packet carries one application message of a connection.
type Packet struct {
	Conn uint64
	Seq  uint64
	SYN  bool
	N    int
	Body string
}

// Ack acknowledges every packet of connection Conn below Next.
type Ack struct {
	Conn uint64
	Next uint64
}

// Reset tells a sender that the receiver has no connection Conn (it
// restarted): open a new one.
type Reset struct {
	Conn uint64
}

// Pending is an unacknowledged application message.
type Pending struct {
	Seq    uint64
	N      int
	Body   string
	SentAt time.Time // when the application submitted it
	Sent   bool      // transmitted at least once on this connection
}

// SendConn is the sending half of a connection to Peer.
type SendConn struct {
	Peer        node.ID
	Conn        uint64
	Next        uint64 // sequence number of the next new message
	Unacked     []Pending
	Established bool // the peer acknowledged the SYN
	RTO         time.Duration
	DupAcks     int // acknowledgements in a row that acknowledged nothing new
	timer       node.TimerID
}

// RecvConn is the receiving half of a connection from Peer.
type RecvConn struct {
	Peer      node.ID
	Conn      uint64
	Expected  uint64 // next sequence number to deliver
	LastN     int    // application number of the last message delivered
	Delivered int
	// Early holds packets that arrived ahead of Expected (seq -> packet).
	Early map[uint64]Packet
}

// Endpoint is one node's transport: its connections to and from peers.
type Endpoint struct {
	Self      node.ID
	Sending   map[node.ID]*SendConn
	Receiving map[node.ID]*RecvConn
	// Highest is the highest connection ID accepted from each peer; it is
	// on disk too, since a restarted receiver must still refuse old SYNs.
	Highest  map[node.ID]uint64
	NextConn uint64 // next connection ID to open; on disk
	bug      string
}

// New builds an endpoint.
func New(id node.ID, cfg system.Config) node.Handler {
	return &Endpoint{
		Self: id, bug: cfg.Bug,
		Sending: map[node.ID]*SendConn{}, Receiving: map[node.ID]*RecvConn{}, Highest: map[node.ID]uint64{},
	}
}

const (
	keyNextConn = "next-conn"
	keyHighest  = "highest/"
)

// Init implements node.Handler: reload the connection counter and the
// highest connection IDs accepted; every connection itself is gone.
func (e *Endpoint) Init(env node.Env) {
	e.get(env, keyNextConn, &e.NextConn)
	if e.NextConn == 0 {
		e.NextConn = 1
	}
	for _, p := range env.Peers() {
		var h uint64
		if e.get(env, keyHighest+string(p), &h) {
			e.Highest[p] = h
		}
	}
}

func (e *Endpoint) get(env node.Env, key string, v any) bool {
	b, ok := env.Disk().Get(key)
	if !ok {
		return false
	}
	if err := node.Unmarshal(b, v); err != nil {
		panic(fmt.Sprintf("transport: corrupt %q on disk: %v", key, err))
	}
	return true
}

func (e *Endpoint) put(env node.Env, key string, v any) {
	b, err := node.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("transport: encode %q: %v", key, err))
	}
	env.Disk().Put(key, b)
}

// Input implements node.Inputter: queue an application message.
func (e *Endpoint) Input(env node.Env, in node.Message) {
	s, ok := in.(Submit)
	if !ok || s.To == e.Self {
		return
	}
	c := e.Sending[s.To]
	if c == nil {
		c = &SendConn{Peer: s.To}
		e.Sending[s.To] = c
		e.open(env, c)
	}
	c.Unacked = append(c.Unacked, Pending{Seq: c.Next, N: s.N, Body: s.Body, SentAt: env.Now()})
	c.Next++
	e.pump(env, c)
}

// open starts a new connection on c, renumbering what is unacknowledged.
func (e *Endpoint) open(env node.Env, c *SendConn) {
	c.Conn = e.NextConn
	e.NextConn++
	e.put(env, keyNextConn, e.NextConn)
	c.Established, c.RTO, c.DupAcks = false, rtoInitial, 0
	c.Next = 1
	for i := range c.Unacked {
		c.Unacked[i].Seq, c.Unacked[i].Sent = c.Next, false
		c.Next++
	}
	if c.timer != 0 {
		env.Cancel(c.timer)
		c.timer = 0
	}
	env.Log().Info("open connection", "peer", c.Peer, "conn", c.Conn, "unacked", len(c.Unacked))
}

// pump transmits the packets that entered the window and arms the
// retransmission timer.
func (e *Endpoint) pump(env node.Env, c *SendConn) {
	for i := range min(window, len(c.Unacked)) {
		if !c.Unacked[i].Sent {
			e.transmit(env, c, c.Unacked[i])
			c.Unacked[i].Sent = true
		}
	}
	if len(c.Unacked) > 0 && c.timer == 0 {
		c.timer = env.After(c.RTO, "rto "+string(c.Peer))
	}
}

func (e *Endpoint) transmit(env node.Env, c *SendConn, p Pending) {
	env.Send(c.Peer, Packet{Conn: c.Conn, Seq: p.Seq, SYN: !c.Established, N: p.N, Body: p.Body})
}

// Timer implements node.Handler: retransmit the window and back off.
func (e *Endpoint) Timer(env node.Env, t node.Timer) {
	peer, ok := strings.CutPrefix(t.Name, "rto ")
	c := e.Sending[node.ID(peer)]
	if !ok || c == nil || c.timer != t.ID {
		return
	}
	c.timer = 0
	for i := range min(window, len(c.Unacked)) {
		e.transmit(env, c, c.Unacked[i])
	}
	c.RTO = min(2*c.RTO, rtoMax)
	e.pump(env, c)
}

// Receive implements node.Handler.
func (e *Endpoint) Receive(env node.Env, from node.ID, m node.Message) {
	switch m := m.(type) {
	case Packet:
		e.onPacket(env, from, m)
	case Ack:
		e.onAck(env, from, m)
	case Reset:
		if c := e.Sending[from]; c != nil && c.Conn == m.Conn {
			e.open(env, c)
			e.pump(env, c)
		}
	}
}

func (e *Endpoint) onAck(env node.Env, from node.ID, a Ack) {
	c := e.Sending[from]
	if c == nil || a.Conn != c.Conn {
		return // for a connection this incarnation no longer has
	}
	c.Established = true
	acked := 0
	for acked < len(c.Unacked) && c.Unacked[acked].Seq < a.Next {
		acked++
	}
	if acked == 0 {
		if len(c.Unacked) > 0 && a.Next == c.Unacked[0].Seq {
			c.DupAcks++
			if c.DupAcks == dupAcks {
				c.DupAcks = 0
				e.transmit(env, c, c.Unacked[0])
			}
		}
		return
	}
	c.Unacked = slices.Delete(c.Unacked, 0, acked)
	c.RTO, c.DupAcks = rtoInitial, 0
	env.Cancel(c.timer)
	c.timer = 0
	e.pump(env, c)
}

func (e *Endpoint) onPacket(env node.Env, from node.ID, p Packet) {
	r := e.Receiving[from]
	if p.SYN && e.acceptsSYN(from, r, p.Conn) {
		env.Log().Info("new connection", "peer", from, "conn", p.Conn)
		r = &RecvConn{Peer: from, Conn: p.Conn, Expected: 1}
		e.Receiving[from] = r
		if p.Conn > e.Highest[from] {
			e.Highest[from] = p.Conn
			e.put(env, keyHighest+string(from), p.Conn)
		}
	}
	if r == nil {
		env.Send(from, Reset{Conn: p.Conn})
		return
	}
	if p.Conn != r.Conn {
		if !p.SYN {
			// Data of a connection this end does not have: say which
			// one it has.
			env.Send(from, Ack{Conn: r.Conn, Next: r.Expected})
		}
		return
	}
	if p.Seq > r.Expected && p.Seq < r.Expected+window {
		if r.Early == nil {
			r.Early = map[uint64]Packet{}
		}
		r.Early[p.Seq] = p
	}
	for p.Seq == r.Expected {
		r.Expected++
		r.LastN = p.N
		r.Delivered++
		next, ok := r.Early[r.Expected]
		if !ok {
			break
		}
		delete(r.Early, r.Expected)
		p = next
	}
	env.Send(from, Ack{Conn: r.Conn, Next: r.Expected})
}

// acceptsSYN decides whether a SYN starts a new connection from peer.
func (e *Endpoint) acceptsSYN(peer node.ID, current *RecvConn, conn uint64) bool {
	if e.bug == "stale-syn" {
		// A SYN for any other connection is taken to mean the peer
		// restarted.
		return current == nil || conn != current.Conn
	}
	return conn > e.Highest[peer]
}

// System describes the transport to the drivers.
var System = &system.System{
	Name:    "transport",
	Summary: "reliable in-order transport: SYN-flagged connections, cumulative ACKs, retransmission, resets on restart",
	Codec:   node.NewCodec().MustRegister(Submit{}, Packet{}, Ack{}, Reset{}),
	New:     New,
	Bugs: []system.Bug{
		{Name: "stale-syn", Summary: "a delayed SYN of an old connection replaces the new one, whose messages are then never acknowledged"},
	},
	Sim: system.SimDefaults{
		Nodes:      4,
		LatencyMax: 80 * time.Millisecond,
		Drop:       0.05,
		Dup:        0.1,
		Steps:      200_000,
		Time:       16 * time.Second,
	},
	Scenario: scenario,
	Validate: validate,
}

// maxNodes bounds a run: the scenario schedules every message of every
// ordered pair of nodes up front (about 300 per pair), so memory grows
// with the square of the number of nodes (0.65 GB at 50).
const maxNodes = 32

func validate(cfg system.Config) error {
	if err := cfg.CheckParams(); err != nil {
		return fmt.Errorf("transport: %w", err)
	}
	if n := len(cfg.Nodes); n > maxNodes {
		return fmt.Errorf("transport: %d nodes: at most %d (every node streams to every other, scheduled up front)", n, maxNodes)
	}
	return nil
}

// Scenario timing: applications stream until trafficEnd and crashes stop
// at the same time, so everything must be acknowledged by the end.
const (
	trafficEnd = 12 * time.Second
)

// scenario: every node streams numbered messages to every other node, one
// every 20-60 ms. Every 0.8-2 s a random node goes through a crash loop:
// it crashes 1-3 times in a row, each time down for 5-40 ms and up for
// 10-80 ms in between. A crash loop is when packets of connections that no
// longer exist are still in flight: SYNs of a connection the restarted
// sender just replaced, and SYNs sent to a receiver that has since
// restarted.
func scenario(ctl system.Controller) {
	r := ctl.Rand()
	nodes := ctl.Nodes()
	for _, from := range nodes {
		for _, to := range nodes {
			if from == to {
				continue
			}
			n := 0
			for at := 100*time.Millisecond + time.Duration(r.Int64N(int64(40*time.Millisecond))); at < trafficEnd; at += 20*time.Millisecond + time.Duration(r.Int64N(int64(40*time.Millisecond))) {
				n++
				s := Submit{To: to, N: n, Body: fmt.Sprintf("%s>%s#%d", from, to, n)}
				ctl.At(at, func() {
					if ctl.Handler(from) != nil {
						ctl.Input(from, s)
					}
				})
			}
		}
	}
	for at := 500 * time.Millisecond; at < trafficEnd; at += 800*time.Millisecond + time.Duration(r.Int64N(int64(1200*time.Millisecond))) {
		victim := nodes[r.IntN(len(nodes))]
		t := at
		for range 1 + r.IntN(3) {
			down := 5*time.Millisecond + time.Duration(r.Int64N(int64(35*time.Millisecond)))
			ctl.At(t, func() { ctl.Crash(victim) })
			ctl.At(t+down, func() { ctl.Restart(victim) })
			t += down + 10*time.Millisecond + time.Duration(r.Int64N(int64(70*time.Millisecond)))
		}
	}
}
