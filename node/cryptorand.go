package node

import (
	"bytes"
	cryptorand "crypto/rand"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
)

// Third-party handler code may read crypto/rand directly: etcd raft draws
// its randomized election timeout with crypto/rand.Int(crypto/rand.Reader,
// ...). InterceptCryptoRand makes such reads replayable: while a handler
// runs, its goroutine's reads are served by the driver's Source and
// recorded; every other read (a transport's TLS, another goroutine) goes to
// the real reader untouched.

var (
	interceptOnce sync.Once
	// intercepting is read on every dispatch, from whichever goroutine
	// drives the node (tests run drivers in parallel), while the first
	// caller of InterceptCryptoRand sets it: hence atomic.
	intercepting atomic.Bool
	original     io.Reader
	dispatching  sync.Map // goroutine id -> *Instance
)

// InterceptCryptoRand installs the interception, once per process. Drivers
// call it for systems that declare they read crypto/rand.
func InterceptCryptoRand() {
	interceptOnce.Do(func() {
		original = cryptorand.Reader
		cryptorand.Reader = routingReader{}
		intercepting.Store(true)
	})
}

type routingReader struct{}

func (routingReader) Read(p []byte) (int, error) {
	if in, ok := dispatching.Load(goroutineID()); ok {
		if in.(*Instance).ReadCrypto(p) {
			return len(p), nil
		}
	}
	return original.Read(p)
}

// goroutineID parses the current goroutine's ID from its stack header
// ("goroutine 123 [running]:"). Go has no public API for it; this is only
// paid while interception is installed.
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// enterDispatch registers in as the handler running on this goroutine.
//
// Reading the goroutine ID costs a stack trace, so each instance reads it
// once: a node's events always run on one goroutine (the live runtime's
// loop, the simulator's or the replayer's single goroutine), or moves only
// with a Rebind. Were an instance dispatched elsewhere without one, its
// handler's crypto/rand reads would reach the real reader unrecorded, and
// replay would report the divergence at that event.
func (in *Instance) enterDispatch() (leave func()) {
	if !intercepting.Load() {
		return func() {}
	}
	if in.gid == 0 {
		in.gid = goroutineID()
	}
	dispatching.Store(in.gid, in)
	return in.leaveDispatch
}

func (in *Instance) leaveDispatch() { dispatching.Delete(in.gid) }

// Rebind says that the instance's events run on the calling goroutine from
// now on. The instance reads its goroutine's ID once (it costs a stack
// trace), so a driver that hands a running instance to another goroutine
// (replay check --jobs hands its pass's replay to a segment) calls Rebind
// there before dispatching: otherwise the handler's crypto/rand reads would
// not be routed to the recording.
func (in *Instance) Rebind() { in.gid = 0 }
