package live

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/system"
)

// The test system: every node gossips its counter to its peers on a timer;
// an input Add appends to the node's list, persists it and echoes it to
// the node itself.

type Add struct{ Value string }
type Echo struct{ Value string }
type Gossip struct{ Count int }

type tnode struct {
	Self     node.ID
	Added    []string
	Echoed   []string
	Heard    map[node.ID]int
	Restored []string // read back from Disk at Init
	Ticks    int
}

func (t *tnode) Init(env node.Env) {
	t.Self = env.Self()
	t.Heard = map[node.ID]int{}
	if b, ok := env.Disk().Get("added"); ok {
		if err := node.Unmarshal(b, &t.Restored); err != nil {
			panic(err)
		}
		t.Added = append(t.Added, t.Restored...)
	}
	env.After(5*time.Millisecond, "gossip")
}

func (t *tnode) Receive(env node.Env, from node.ID, m node.Message) {
	switch m := m.(type) {
	case Gossip:
		t.Heard[from] = m.Count
	case Echo:
		t.Echoed = append(t.Echoed, m.Value)
	}
}

func (t *tnode) Timer(env node.Env, tm node.Timer) {
	t.Ticks++
	for _, p := range env.Peers() {
		env.Send(p, Gossip{Count: t.Ticks})
	}
	env.After(5*time.Millisecond, "gossip")
}

func (t *tnode) Input(env node.Env, in node.Message) {
	a := in.(Add)
	t.Added = append(t.Added, a.Value)
	b, err := node.Marshal(t.Added)
	if err != nil {
		panic(err)
	}
	env.Disk().Put("added", b)
	env.Send(env.Self(), Echo(a))
}

var testSystem = &system.System{
	Name:  "livetest",
	Codec: node.NewCodec().MustRegister(Add{}, Echo{}, Gossip{}),
	New:   func(node.ID, system.Config) node.Handler { return &tnode{} },
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// cluster reserves a listener per node on 127.0.0.1.
func cluster(t *testing.T, n int) (map[node.ID]string, map[node.ID]net.Listener) {
	t.Helper()
	addrs := map[node.ID]string{}
	lns := map[node.ID]net.Listener{}
	for i := 1; i <= n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		id := node.ID(strconv.Itoa(i))
		addrs[id], lns[id] = ln.Addr().String(), ln
	}
	return addrs, lns
}

func startNode(t *testing.T, id node.ID, addrs map[node.ID]string, ln net.Listener, dir string) *Node {
	t.Helper()
	n, err := Start(Options{System: testSystem, ID: id, Addrs: addrs, DataDir: dir, Listener: ln, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func readState(t *testing.T, n *Node) tnode {
	t.Helper()
	var out tnode
	err := n.Read(context.Background(), func(h node.Handler) {
		c := *h.(*tnode)
		c.Added = append([]string(nil), c.Added...)
		c.Echoed = append([]string(nil), c.Echoed...)
		c.Heard = map[node.ID]int{}
		for k, v := range h.(*tnode).Heard {
			c.Heard[k] = v
		}
		out = c
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNodesExchangeMessagesOverTCP(t *testing.T) {
	addrs, lns := cluster(t, 3)
	var nodes []*Node
	for i := 1; i <= 3; i++ {
		id := node.ID(strconv.Itoa(i))
		nodes = append(nodes, startNode(t, id, addrs, lns[id], t.TempDir()))
	}
	defer func() {
		for _, n := range nodes {
			if err := n.Close("test over"); err != nil {
				t.Error(err)
			}
		}
	}()
	// Every node hears every peer's gossip.
	waitFor(t, "gossip from every peer", func() bool {
		for _, n := range nodes {
			if len(readState(t, n).Heard) != 2 {
				return false
			}
		}
		return true
	})
	// An input returns after its own event; InputWait waits for the echo
	// that a later event (the message to self) delivers.
	ctx := context.Background()
	if err := nodes[0].Input(ctx, Add{Value: "a"}); err != nil {
		t.Fatal(err)
	}
	if got := readState(t, nodes[0]).Added; len(got) != 1 || got[0] != "a" {
		t.Fatalf("after Input, Added = %v", got)
	}
	err := nodes[0].InputWait(ctx, Add{Value: "b"}, func(h node.Handler) bool {
		e := h.(*tnode).Echoed
		return len(e) > 0 && e[len(e)-1] == "b"
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := readState(t, nodes[0]).Echoed; len(got) != 2 || got[1] != "b" {
		t.Fatalf("after InputWait, Echoed = %v", got)
	}
	// A condition that never holds ends with the caller's context.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err = nodes[1].InputWait(short, Add{Value: "c"}, func(node.Handler) bool { return false })
	if err != context.DeadlineExceeded {
		t.Fatalf("InputWait with an unmet condition returned %v", err)
	}
	if err := nodes[1].Input(ctx, Gossip{}); err == nil {
		// Gossip is registered, so encoding works, but the handler
		// panics on a non-Add input: the node must fail, not hang.
		t.Fatal("an input the handler panics on reported no error")
	}
	select {
	case <-nodes[1].Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a failed node did not stop")
	}
	if nodes[1].Err() == nil {
		t.Fatal("a failed node reports no error")
	}
}

func TestUnreachablePeerDoesNotBlock(t *testing.T) {
	addrs, lns := cluster(t, 3)
	lns["3"].Close() // node 3 never runs: every send to it is dropped
	a := startNode(t, "1", addrs, lns["1"], t.TempDir())
	b := startNode(t, "2", addrs, lns["2"], t.TempDir())
	defer a.Close("test over")
	defer b.Close("test over")
	waitFor(t, "1 and 2 to hear each other for a while", func() bool {
		return readState(t, a).Heard["2"] > 50 && readState(t, b).Heard["1"] > 50
	})
	if a.Stats().Dropped == 0 {
		t.Fatal("no send to the missing node was counted as dropped")
	}
	if _, ok := readState(t, a).Heard["3"]; ok {
		t.Fatal("heard from a node that never ran")
	}
}

func TestRestartContinuesSeqAndDisk(t *testing.T) {
	addrs, lns := cluster(t, 1)
	dir := t.TempDir()
	n := startNode(t, "1", addrs, lns["1"], dir)
	if n.Restarted() {
		t.Fatal("a fresh data directory reported as a restart")
	}
	ctx := context.Background()
	for i := range 5 {
		if err := n.Input(ctx, Add{Value: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var seq, lamport uint64
	n.Read(ctx, func(node.Handler) { seq, lamport = n.inst.Seq(), n.inst.Lamport() })
	if err := n.Close("first run over"); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", addrs["1"])
	if err != nil {
		t.Fatal(err)
	}
	n2 := startNode(t, "1", addrs, ln, dir)
	defer n2.Close("test over")
	if !n2.Restarted() {
		t.Fatal("a used data directory not reported as a restart")
	}
	st := readState(t, n2)
	if want := []string{"0", "1", "2", "3", "4"}; fmt.Sprint(st.Restored) != fmt.Sprint(want) {
		t.Fatalf("restored %v from disk, want %v", st.Restored, want)
	}
	var seq2, lamport2 uint64
	n2.Read(ctx, func(node.Handler) { seq2, lamport2 = n2.inst.Seq(), n2.inst.Lamport() })
	if seq2 <= seq || lamport2 <= lamport {
		t.Fatalf("restarted at seq %d Lamport %d; the first run reached seq %d Lamport %d", seq2, lamport2, seq, lamport)
	}
}

func TestFrameRoundTripAndRejection(t *testing.T) {
	f := frame{From: "n2", Seq: 1 << 40, Index: 7, Lamport: 99, Type: "raftpb.Message", Payload: []byte{1, 2, 3}}
	body := encodeFrame(nil, &f)
	var buf bytes.Buffer
	if err := writeFrame(&buf, body); err != nil {
		t.Fatal(err)
	}
	got, err := readFrame(&buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := decodeFrame(got)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(g) != fmt.Sprint(f) {
		t.Fatalf("round trip: %+v, want %+v", g, f)
	}
	for cut := range len(body) {
		if _, err := decodeFrame(body[:cut]); err == nil {
			t.Fatalf("a frame cut to %d of %d bytes decoded", cut, len(body))
		}
	}
	if _, err := decodeFrame(append(body, 0)); err == nil {
		t.Fatal("a frame with trailing bytes decoded")
	}
	var huge bytes.Buffer
	huge.Write([]byte{0xff, 0xff, 0xff, 0xff})
	if _, err := readFrame(&huge, nil); err == nil {
		t.Fatal("a 4 GiB frame length was accepted")
	}
	if _, _, err := decodeHello(encodeHello("sys", "1")); err != nil {
		t.Fatal(err)
	}
	bad := appendString(nil, "someone-else/1")
	bad = appendString(bad, "sys")
	bad = appendString(bad, "1")
	if _, _, err := decodeHello(bad); err == nil {
		t.Fatal("a foreign hello was accepted")
	}
}

func TestForeignConnectionRejected(t *testing.T) {
	addrs, lns := cluster(t, 2)
	a := startNode(t, "1", addrs, lns["1"], t.TempDir())
	defer a.Close("test over")
	c, err := net.Dial("tcp", addrs["1"])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Another system's node: the connection is closed, nothing delivered.
	writeFrame(c, encodeHello("othersystem", "2"))
	writeFrame(c, encodeFrame(nil, &frame{From: "2", Seq: 1, Type: "live.Gossip", Payload: []byte{0xa1}}))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("the node kept a foreign connection open and wrote to it")
	}
	if got := readState(t, a).Heard["2"]; got != 0 {
		t.Fatalf("a foreign node's gossip was delivered (%d)", got)
	}
}

func TestTraceDirNeedsRecordBuild(t *testing.T) {
	if Recording {
		t.Skip("this binary records; the recording tests cover it")
	}
	addrs, lns := cluster(t, 1)
	_, err := Start(Options{System: testSystem, ID: "1", Addrs: addrs, DataDir: t.TempDir(),
		Listener: lns["1"], TraceDir: t.TempDir(), Logger: quietLogger()})
	if err != errNotRecording {
		t.Fatalf("Start with a trace dir in a build without -tags record: %v", err)
	}
}

// sizeLog is a file whose size is noted after every write.
type sizeLog struct {
	*os.File
	sizes []int64
	total int64
}

func (s *sizeLog) Write(p []byte) (int, error) {
	n, err := s.File.Write(p)
	s.total += int64(n)
	s.sizes = append(s.sizes, s.total)
	return n, err
}

func TestUnitFileLeavesJoinableTails(t *testing.T) {
	// A trace written through a unitFile, cut after any of its file
	// writes (a kill -9 can only strike between writes) and followed by a
	// new segment, must read back without damage.
	f, err := os.Create(filepath.Join(t.TempDir(), "t.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	sl := &sizeLog{File: f}
	u := &unitFile{f: sl}
	h := record.Header{System: "livetest", Nodes: []node.ID{"1"}, Recorded: []node.ID{"1"}, Bug: "none",
		Types: testSystem.Codec.Names(), Driver: "live"}
	w, err := record.NewWriter(u, h, record.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		ev := &node.Event{Node: "1", Seq: uint64(i + 1), Lamport: uint64(i + 1), Kind: node.KindInput,
			MsgType: "live.Add", Payload: make([]byte, r.IntN(400)), Time: int64(i)}
		if i == 0 {
			ev.Kind, ev.MsgType, ev.Payload = node.KindInit, "", nil
		}
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			if err := w.Flush(); err != nil { // a block boundary, as the flush interval makes
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(record.End{Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	var next bytes.Buffer
	h.Segment = 1
	w2, _ := record.NewWriter(&next, h, record.WriterOptions{})
	w2.Append(&node.Event{Node: "1", Seq: 100000, Lamport: 100000, Kind: node.KindRestart})
	w2.Close(record.End{Reason: "test"})
	if len(sl.sizes) < 20 {
		t.Fatalf("only %d file writes: the test needs many", len(sl.sizes))
	}
	for _, size := range sl.sizes {
		data := append(append([]byte(nil), full[:size]...), next.Bytes()...)
		tf, err := record.Read(bytes.NewReader(data), "cut.lz4", int64(len(data)))
		if err != nil {
			t.Fatalf("cut after a write at %d: %v", size, err)
		}
		if tf.Damage != nil {
			t.Fatalf("cut after a write at %d of %d: %v", size, len(full), tf.Damage)
		}
		if last := tf.Events[len(tf.Events)-1]; last.Kind != node.KindRestart {
			t.Fatalf("cut at %d: the new segment's event was not read", size)
		}
	}
}

// fullDisk accepts limit bytes, then fails with a short write, as a full
// disk does; it records truncations.
type fullDisk struct {
	data      []byte
	limit     int
	truncated []int64
}

func (d *fullDisk) Write(p []byte) (int, error) {
	room := d.limit - len(d.data)
	if len(p) <= room {
		d.data = append(d.data, p...)
		return len(p), nil
	}
	d.data = append(d.data, p[:room]...)
	return room, fmt.Errorf("write t.lz4: %w", syscall.ENOSPC)
}

func (d *fullDisk) Truncate(size int64) error {
	d.truncated = append(d.truncated, size)
	d.data = d.data[:size]
	return nil
}

func TestUnitFileCutsPartialWriteBack(t *testing.T) {
	// No timed flushes, so every write but the last is a whole 256 KiB
	// block: the second fails with about 144 KiB free, room for the stop
	// notice. (With timed flushes the failing write could be a small one
	// that left too little room, and the notice is then rightly not
	// written, so the test depended on timing.)
	d := &fullDisk{limit: 400 << 10}
	u := &unitFile{f: d}
	stopped := make(chan error, 1)
	h := record.Header{System: "livetest", Nodes: []node.ID{"1"}, Recorded: []node.ID{"1"}, Bug: "none",
		Types: testSystem.Codec.Names(), Driver: "live"}
	w, err := record.NewWriter(u, h, record.WriterOptions{Lossy: true,
		OnError: func(err error) { stopped <- err }})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		payload := make([]byte, 200)
		for j := range payload {
			payload[j] = byte(r.Uint32()) // incompressible, so the disk fills
		}
		w.Append(&node.Event{Node: "1", Seq: uint64(i + 1), Lamport: uint64(i + 1), Kind: node.KindInput,
			MsgType: "live.Add", Payload: payload, Time: int64(i)})
	}
	w.Close(record.End{Reason: "test"})
	select {
	case err := <-stopped:
		if !strings.Contains(err.Error(), "recording stopped: disk full at seq") {
			t.Fatalf("OnError was told %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnError was not called when the disk filled")
	}
	if len(d.truncated) == 0 {
		t.Fatal("the partial write was not cut back")
	}
	f, err := record.Read(bytes.NewReader(d.data), "full.lz4", int64(len(d.data)))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Events) == 0 {
		t.Fatal("nothing recorded before the disk filled is readable")
	}
	if f.Damage != nil {
		t.Fatalf("the file ends inside a block: %v", f.Damage)
	}
	// The space the cut-back write freed holds the writer's stop notice.
	last := f.Events[len(f.Events)-1].Seq
	if want := fmt.Sprintf("recording stopped: disk full at seq %d", last); len(f.Gaps) != 1 || f.Gaps[0].Reason != want || f.Gaps[0].From != last+1 {
		t.Fatalf("gaps %+v, want one from %d saying %q", f.Gaps, last+1, want)
	}
}

// A live node ran a cluster its system's Validate refuses (the simulator
// exits 2 for the same nodes): a new user's primary-backup store started
// with three of its four nodes.
func TestStartRunsValidate(t *testing.T) {
	sys := *testSystem
	sys.Validate = func(cfg system.Config) error {
		if len(cfg.Nodes) < 3 {
			return fmt.Errorf("want at least 3 nodes, have %d", len(cfg.Nodes))
		}
		return nil
	}
	addrs, lns := cluster(t, 2)
	_, err := Start(Options{System: &sys, ID: "1", Addrs: addrs, DataDir: t.TempDir(), Listener: lns["1"], Logger: quietLogger()})
	if err == nil || !strings.Contains(err.Error(), "want at least 3 nodes, have 2") {
		t.Fatalf("Start of a cluster Validate refuses: %v", err)
	}
}
