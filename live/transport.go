package live

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replaycheck/replaycheck/node"
)

// Wire format. A connection carries frames in one direction, from the
// dialling node to the listening one. Every frame is a 4-byte big-endian
// body length and a body. The first frame is a hello:
//
//	magic "replaycheck-live/1", string system, string sender
//
// then one frame per message:
//
//	string sender, uvarint seq, uvarint index, uvarint send-Lamport,
//	string type, bytes payload
//
// where strings and bytes are a uvarint length and the bytes, and (sender,
// seq, index) is the message id of the trace format.
const (
	wireMagic = "replaycheck-live/1"
	// maxFrame caps a frame so that a damaged or foreign stream cannot
	// make a node allocate without bound.
	maxFrame = 64 << 20
)

// Timing of the transport.
const (
	dialTimeout  = time.Second
	writeTimeout = 2 * time.Second
	backoffMin   = 50 * time.Millisecond
	backoffMax   = 2 * time.Second
	// peerQueue is how many frames may wait for a peer's connection;
	// beyond it sends to that peer are dropped, so a slow peer never
	// stalls the event loop.
	peerQueue = 4096
)

// frame is one message on the wire.
type frame struct {
	From    node.ID
	Seq     uint64
	Index   uint32
	Lamport uint64
	Type    string
	Payload []byte
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func encodeHello(system string, from node.ID) []byte {
	b := appendString(nil, wireMagic)
	b = appendString(b, system)
	return appendString(b, string(from))
}

func encodeFrame(b []byte, f *frame) []byte {
	b = appendString(b, string(f.From))
	b = binary.AppendUvarint(b, f.Seq)
	b = binary.AppendUvarint(b, uint64(f.Index))
	b = binary.AppendUvarint(b, f.Lamport)
	b = appendString(b, f.Type)
	b = binary.AppendUvarint(b, uint64(len(f.Payload)))
	return append(b, f.Payload...)
}

// wireReader decodes a frame body; the first error sticks.
type wireReader struct {
	b   []byte
	err error
}

func (r *wireReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("malformed varint")
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *wireReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("field of %d bytes in a frame with %d left", n, len(r.b))
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *wireReader) str() string { return string(r.bytes()) }

func decodeHello(body []byte) (system string, from node.ID, err error) {
	r := wireReader{b: body}
	magic := r.str()
	system = r.str()
	from = node.ID(r.str())
	if r.err == nil && magic != wireMagic {
		r.err = fmt.Errorf("peer speaks %q, not %q", magic, wireMagic)
	}
	return system, from, r.err
}

func decodeFrame(body []byte) (frame, error) {
	r := wireReader{b: body}
	var f frame
	f.From = node.ID(r.str())
	f.Seq = r.uvarint()
	idx := r.uvarint()
	f.Lamport = r.uvarint()
	f.Type = r.str()
	f.Payload = r.bytes()
	if r.err == nil && idx > 1<<32-1 {
		r.err = fmt.Errorf("message index %d out of range", idx)
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d unexpected bytes after the payload", len(r.b))
	}
	f.Index = uint32(idx)
	return f, r.err
}

func writeFrame(w io.Writer, body []byte) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

func readFrame(r io.Reader, buf []byte) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("frame of %d bytes exceeds the %d-byte limit", n, maxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// TransportStats count what the transport did. Sent counts messages
// written to a peer's connection; Dropped those never written: the
// peer's queue of 4,096 was full, it could not be dialled (after a
// failed dial the transport waits 50 ms, doubling up to 2 s, before it
// dials again, and drops what is sent meanwhile), or a write failed.
// Received counts frames delivered to this node; Rejected connections
// and frames refused (another system or protocol, a malformed frame).
type TransportStats struct {
	Sent, Dropped, Received, Rejected int64
}

// transport connects one node to its peers over TCP: one outgoing
// connection per peer, written by that peer's goroutine; incoming
// connections are read by one goroutine each and hand messages to deliver.
type transport struct {
	self    node.ID
	system  string
	known   map[node.ID]bool
	ln      net.Listener
	peers   map[node.ID]*peer
	deliver func(f frame) bool // false: the node is stopping
	log     *slog.Logger

	sent, dropped, received, rejected atomic.Int64

	stop  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool
}

func newTransport(self node.ID, system string, addrs map[node.ID]string, ln net.Listener,
	deliver func(frame) bool, log *slog.Logger) *transport {
	t := &transport{
		self: self, system: system, known: map[node.ID]bool{}, ln: ln, peers: map[node.ID]*peer{},
		deliver: deliver, log: log, stop: make(chan struct{}), conns: map[net.Conn]bool{},
	}
	for id, addr := range addrs {
		t.known[id] = true
		if id == self {
			continue
		}
		p := &peer{t: t, id: id, addr: addr, out: make(chan []byte, peerQueue)}
		t.peers[id] = p
		t.wg.Add(1)
		go p.run()
	}
	t.wg.Add(1)
	go t.accept()
	return t
}

// send queues a message for a peer without blocking; if the queue is full
// the message is dropped, as a congested network would.
func (t *transport) send(to node.ID, f *frame) {
	p := t.peers[to]
	body := encodeFrame(make([]byte, 0, 32+len(f.Type)+len(f.Payload)), f)
	select {
	case p.out <- body:
	default:
		t.dropped.Add(1)
	}
}

func (t *transport) stats() TransportStats {
	return TransportStats{Sent: t.sent.Load(), Dropped: t.dropped.Load(), Received: t.received.Load(), Rejected: t.rejected.Load()}
}

func (t *transport) close() {
	close(t.stop)
	t.ln.Close()
	t.mu.Lock()
	for c := range t.conns {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
}

func (t *transport) track(c net.Conn, on bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if on {
		select {
		case <-t.stop:
			return false
		default:
		}
		t.conns[c] = true
	} else {
		delete(t.conns, c)
	}
	return true
}

func (t *transport) accept() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			select {
			case <-t.stop:
				return
			default:
			}
			t.log.Warn("accept failed", "err", err)
			time.Sleep(backoffMin)
			continue
		}
		if !t.track(c, true) {
			c.Close()
			return
		}
		t.wg.Add(1)
		go t.readConn(c)
	}
}

// readConn reads one incoming connection until it fails or the transport
// stops. A connection that does not speak our protocol for our system is
// closed.
func (t *transport) readConn(c net.Conn) {
	defer t.wg.Done()
	defer t.track(c, false)
	defer c.Close()
	br := bufio.NewReaderSize(c, 64<<10)
	body, err := readFrame(br, nil)
	if err != nil {
		return
	}
	system, from, err := decodeHello(body)
	switch {
	case err != nil:
		t.log.Warn("rejected connection", "remote", c.RemoteAddr(), "err", err)
		return
	case system != t.system:
		t.log.Warn("rejected connection from another system", "remote", c.RemoteAddr(), "system", system)
		return
	case !t.known[from] || from == t.self:
		t.log.Warn("rejected connection from an unknown node", "remote", c.RemoteAddr(), "node", from)
		return
	}
	var buf []byte
	for {
		body, err := readFrame(br, buf)
		if err != nil {
			return
		}
		buf = body
		f, err := decodeFrame(body)
		if err != nil || f.From != from {
			t.rejected.Add(1)
			t.log.Warn("dropping connection after a malformed frame", "peer", from, "err", err)
			return
		}
		// The frame's buffer is reused: the payload must be copied.
		f.Payload = append([]byte(nil), f.Payload...)
		t.received.Add(1)
		if !t.deliver(f) {
			return
		}
	}
}

// peer writes frames to one peer, connecting on demand with exponential
// backoff. Frames that arrive while the peer is unreachable are dropped:
// the node sees a lossy network, never a blocked one.
type peer struct {
	t    *transport
	id   node.ID
	addr string
	out  chan []byte
}

func (p *peer) run() {
	defer p.t.wg.Done()
	var (
		conn    net.Conn
		bw      *bufio.Writer
		backoff = backoffMin
		retryAt time.Time
	)
	disconnect := func() {
		if conn != nil {
			p.t.track(conn, false)
			conn.Close()
			conn, bw = nil, nil
		}
	}
	defer disconnect()
	for {
		var body []byte
		select {
		case body = <-p.out:
		case <-p.t.stop:
			return
		}
		if conn == nil {
			if time.Now().Before(retryAt) {
				p.t.dropped.Add(1)
				continue
			}
			c, err := net.DialTimeout("tcp", p.addr, dialTimeout)
			if err == nil && !p.t.track(c, true) {
				c.Close()
				return
			}
			if err == nil {
				bw = bufio.NewWriterSize(c, 64<<10)
				c.SetWriteDeadline(time.Now().Add(writeTimeout))
				err = writeFrame(bw, encodeHello(p.t.system, p.t.self))
				if err != nil {
					p.t.track(c, false)
					c.Close()
				}
			}
			if err != nil {
				p.t.dropped.Add(1)
				retryAt = time.Now().Add(backoff)
				backoff = min(2*backoff, backoffMax)
				continue
			}
			conn = c
			backoff = backoffMin
		}
		// Write this frame and whatever else is queued, then flush once.
		conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		n := int64(1)
		err := writeFrame(bw, body)
		for more := true; more && err == nil && bw.Buffered() < 256<<10; {
			select {
			case b := <-p.out:
				err = writeFrame(bw, b)
				n++
			default:
				more = false
			}
		}
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			p.t.dropped.Add(n)
			p.t.log.Debug("lost connection to peer", "peer", p.id, "err", err)
			disconnect()
			retryAt = time.Now().Add(backoff)
			continue
		}
		p.t.sent.Add(n)
	}
}
