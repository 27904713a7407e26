package node

import (
	"bytes"
	cryptorand "crypto/rand"
	"encoding/binary"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

type mapMsg struct {
	M map[string]int
	S []string
}

type ptrMsg struct{ X int }

// ownMsg brings its own encoding, as protobuf types do.
type ownMsg struct{ V uint32 }

func (m *ownMsg) Marshal() ([]byte, error) { return binary.BigEndian.AppendUint32(nil, m.V), nil }
func (m *ownMsg) Unmarshal(b []byte) error {
	if len(b) != 4 {
		return errors.New("want 4 bytes")
	}
	m.V = binary.BigEndian.Uint32(b)
	return nil
}

func TestCodecCanonical(t *testing.T) {
	c := NewCodec().MustRegister(mapMsg{})
	var first []byte
	for i := range 50 {
		m := mapMsg{M: map[string]int{}, S: []string{"a"}}
		keys := []string{"z", "a", "m", "q", "b", "y"}
		if i%2 == 1 {
			for j := len(keys) - 1; j >= 0; j-- {
				m.M[keys[j]] = j
			}
		} else {
			for j, k := range keys {
				m.M[k] = j
			}
		}
		name, b, err := c.Encode(m)
		if err != nil || name != "node.mapMsg" {
			t.Fatalf("encode: %q %v", name, err)
		}
		if first == nil {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Fatal("equal values encoded to different bytes")
		}
	}
	v, err := c.Decode("node.mapMsg", first)
	if err != nil || v.(mapMsg).M["q"] != 3 {
		t.Fatalf("decode: %+v %v", v, err)
	}
}

func TestCodecPointerAndOwnEncoding(t *testing.T) {
	c := NewCodec().MustRegister(&ptrMsg{}, ownMsg{})
	name, b, err := c.Encode(&ptrMsg{X: 5})
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Decode(name, b)
	if err != nil || v.(*ptrMsg).X != 5 {
		t.Fatalf("pointer type round trip: %#v %v", v, err)
	}
	name, b, err = c.Encode(ownMsg{V: 0xdeadbeef})
	if err != nil || !bytes.Equal(b, []byte{0xde, 0xad, 0xbe, 0xef}) {
		t.Fatalf("own encoding not used: %x %v", b, err)
	}
	v, err = c.Decode(name, b)
	if err != nil || v.(ownMsg).V != 0xdeadbeef {
		t.Fatalf("own decoding: %#v %v", v, err)
	}
	if _, _, err := c.Encode(mapMsg{}); err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Fatalf("unregistered type: %v", err)
	}
	if _, err := c.Decode("nope.Nope", nil); err == nil {
		t.Fatal("decoding an unknown name succeeded")
	}
	if err := c.Register("node.ptrMsg", mapMsg{}); err == nil {
		t.Fatal("one name registered for two types")
	}
}

// recorder is a test handler that exercises every Env method.
type recorder struct {
	Env   Env
	Seen  []string
	First TimerID
	Panic bool
}

func (r *recorder) Init(env Env) {
	r.Env = env
	r.First = env.After(time.Second, "t1")
	env.After(2*time.Second, "t2")
	if b, ok := env.Disk().Get("k"); ok {
		r.Seen = append(r.Seen, "disk:"+string(b))
	}
}

func (r *recorder) Receive(env Env, from ID, m Message) {
	if r.Panic {
		panic("receive failed")
	}
	r.Seen = append(r.Seen, string(from)+":"+m.(ptrMsg2).S)
	env.Now()
	env.Rand().Uint64()
	env.Rand().Uint64() // one seed per event
	env.Cancel(r.First)
	env.Cancel(r.First) // cancelling twice records once
	env.Disk().Put("k", []byte("v"))
	env.Send("b", ptrMsg2{S: "reply"})
	env.Log().Info("got", "from", from)
}

func (r *recorder) Timer(env Env, t Timer) { r.Seen = append(r.Seen, "timer:"+t.Name) }

type ptrMsg2 struct{ S string }

type fixedSource struct {
	now   int64
	seeds int
	store *MemStore
}

func (s *fixedSource) Clock() int64                      { return s.now }
func (s *fixedSource) Seed() uint64                      { s.seeds++; return 42 }
func (s *fixedSource) DiskGet(key string) ([]byte, bool) { return s.store.Get(key) }
func (s *fixedSource) CryptoRead(p []byte)               {}

func newTestInstance() (*Instance, *fixedSource, *recorder) {
	h := &recorder{}
	store := NewMemStore()
	in := NewInstance(Config{ID: "a", Nodes: []ID{"a", "b"}, New: func() Handler { h = &recorder{Panic: h.Panic}; return h },
		Codec: NewCodec().MustRegister(ptrMsg2{}), Store: store})
	return in, &fixedSource{now: 1000, store: store}, h
}

func TestInstanceDispatch(t *testing.T) {
	in, src, _ := newTestInstance()
	ev := &Event{Kind: KindInit, Time: 1000}
	if err := in.Dispatch(ev, src); err != nil {
		t.Fatal(err)
	}
	if ev.Seq != 1 || ev.Lamport != 1 || len(ev.TimersSet) != 2 || ev.TimersSet[0].ID != 1 {
		t.Fatalf("init: %+v", ev)
	}
	if len(ev.Nondet) != 1 || ev.Nondet[0].Kind != NondetDisk || ev.Nondet[0].Found {
		t.Fatalf("init disk read not recorded: %+v", ev.Nondet)
	}
	_, payload, _ := in.Codec().Encode(ptrMsg2{S: "hi"})
	ev = &Event{Kind: KindRecv, Time: 2000, From: "b", MsgSeq: 7, SendLamport: 10, MsgType: "node.ptrMsg2", Payload: payload}
	if err := in.Dispatch(ev, src); err != nil {
		t.Fatal(err)
	}
	if ev.Lamport != 11 {
		t.Fatalf("receive clock %d, want max(1,10)+1 = 11", ev.Lamport)
	}
	kinds := []NondetKind{}
	for _, n := range ev.Nondet {
		kinds = append(kinds, n.Kind)
	}
	if len(kinds) != 2 || kinds[0] != NondetClock || kinds[1] != NondetSeed || src.seeds != 1 {
		t.Fatalf("nondeterminism recorded %v (seeds drawn %d)", kinds, src.seeds)
	}
	if len(ev.TimersCancelled) != 1 || in.TimerPending(1) || !in.TimerPending(2) {
		t.Fatalf("cancel: %v pending1=%v", ev.TimersCancelled, in.TimerPending(1))
	}
	if ev.DiskWrites != 1 || ev.DiskDigest == 0 || len(ev.Sends) != 1 || ev.Sends[0].To != "b" {
		t.Fatalf("effects: %+v", ev)
	}
	if len(ev.Logs) != 1 || ev.Logs[0].Msg != "got" || !strings.Contains(ev.Logs[0].Attrs, "from=b") {
		t.Fatalf("logs: %+v", ev.Logs)
	}
	// A timer that is not pending cannot fire.
	if err := in.Dispatch(&Event{Kind: KindTimer, TimerID: 1, TimerName: "t1"}, src); err == nil {
		t.Fatal("a cancelled timer fired")
	}
}

func TestEnvOutsideEventPanics(t *testing.T) {
	in, src, _ := newTestInstance()
	in.Dispatch(&Event{Kind: KindInit}, src)
	h := in.Handler().(*recorder)
	defer func() {
		if recover() == nil {
			t.Fatal("using Env after its event did not panic")
		}
	}()
	h.Env.Send("b", ptrMsg2{})
}

func TestCrashRestart(t *testing.T) {
	in, src, _ := newTestInstance()
	in.Dispatch(&Event{Kind: KindInit}, src)
	in.Store().Put("k", []byte("kept"))
	if err := in.Dispatch(&Event{Kind: KindCrash}, src); err != nil {
		t.Fatal(err)
	}
	if in.Up() || len(in.Timers()) != 0 {
		t.Fatal("crash kept the node up or its timers")
	}
	if err := in.Dispatch(&Event{Kind: KindRecv, From: "b"}, src); err == nil {
		t.Fatal("a crashed node received a message")
	}
	ev := &Event{Kind: KindRestart}
	if err := in.Dispatch(ev, src); err != nil {
		t.Fatal(err)
	}
	h := in.Handler().(*recorder)
	if len(h.Seen) != 1 || h.Seen[0] != "disk:kept" {
		t.Fatalf("restart did not see the disk: %v", h.Seen)
	}
	if ev.Seq != 3 || ev.TimersSet[0].ID != 1 {
		t.Fatalf("restart: seq %d, first timer id %d", ev.Seq, ev.TimersSet[0].ID)
	}
}

func TestHandlerPanicReported(t *testing.T) {
	in, src, h := newTestInstance()
	h.Panic = true
	in.Dispatch(&Event{Kind: KindInit}, src)
	_, payload, _ := in.Codec().Encode(ptrMsg2{S: "x"})
	err := in.Dispatch(&Event{Kind: KindRecv, From: "b", MsgType: "node.ptrMsg2", Payload: payload}, src)
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "receive failed" || pe.Node != "a" || pe.Seq != 2 || pe.Stack == "" {
		t.Fatalf("panic error: %v", err)
	}
	// It says where: the handler's method and line, not the runtime's
	// or the dispatcher's (a new user's hunt printed the value alone).
	if w := pe.Where(); !strings.Contains(w, ".Receive (node_test.go:") || !strings.Contains(err.Error(), " at "+w+": receive failed") {
		t.Fatalf("where %q in %v", w, err)
	}
}

func TestSourceErrorAbortsDispatch(t *testing.T) {
	in, _, _ := newTestInstance()
	want := errors.New("recording has no disk read here")
	err := in.Dispatch(&Event{Kind: KindInit}, abortingSource{want})
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want the source's error", err)
	}
}

type abortingSource struct{ err error }

func (s abortingSource) Clock() int64 { panic(&SourceError{s.err}) }
func (s abortingSource) Seed() uint64 { panic(&SourceError{s.err}) }
func (s abortingSource) DiskGet(string) ([]byte, bool) {
	panic(&SourceError{s.err})
}
func (s abortingSource) CryptoRead([]byte) { panic(&SourceError{s.err}) }

// cryptoUser reads crypto/rand the way etcd raft does.
type cryptoUser struct{ Drawn []byte }

func (c *cryptoUser) Init(env Env) {}
func (c *cryptoUser) Receive(env Env, from ID, m Message) {
	b := make([]byte, 4)
	cryptorand.Read(b)
	n, _ := cryptorand.Int(cryptorand.Reader, big.NewInt(1000))
	c.Drawn = append(b, byte(n.Int64()))
}
func (c *cryptoUser) Timer(env Env, t Timer) {}

type cryptoSource struct{ fixedSource }

func (s *cryptoSource) CryptoRead(p []byte) {
	for i := range p {
		p[i] = 7
	}
}

func TestCryptoRandIntercepted(t *testing.T) {
	InterceptCryptoRand()
	h := &cryptoUser{}
	in := NewInstance(Config{ID: "a", Nodes: []ID{"a"}, New: func() Handler { return h }, Codec: NewCodec().MustRegister(ptrMsg2{}), Store: NewMemStore()})
	src := &cryptoSource{fixedSource{store: NewMemStore()}}
	in.Dispatch(&Event{Kind: KindInit}, src)
	_, payload, _ := in.Codec().Encode(ptrMsg2{})
	ev := &Event{Kind: KindRecv, From: "a", MsgType: "node.ptrMsg2", Payload: payload}
	if err := in.Dispatch(ev, src); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Drawn[:4], []byte{7, 7, 7, 7}) {
		t.Fatalf("crypto/rand.Read inside a handler was not served by the source: %v", h.Drawn)
	}
	crypto := 0
	for _, n := range ev.Nondet {
		if n.Kind == NondetCrypto {
			crypto++
		}
	}
	if crypto < 2 {
		t.Fatalf("crypto reads recorded: %d, want 2 (Read and Int)", crypto)
	}
	// Outside a dispatch, and on other goroutines, the real reader serves.
	b := make([]byte, 16)
	cryptorand.Read(b)
	if bytes.Equal(b, bytes.Repeat([]byte{7}, 16)) {
		t.Fatal("a read outside any dispatch was intercepted")
	}
}
