package vet

import (
	"go/types"
	"strings"
)

// Kind is one category of nondeterminism. It is the diagnostic's Category,
// so `replay vet --json` and go vet's JSON output can be filtered by it.
type Kind string

const (
	Goroutine Kind = "goroutine"
	Select    Kind = "select"
	Channel   Kind = "channel"
	Clock     Kind = "clock"
	Timer     Kind = "timer"
	Rand      Kind = "rand"
	CryptoRnd Kind = "cryptorand"
	IO        Kind = "io"
	MapOrder  Kind = "maporder"
	Global    Kind = "global"
)

// kinds lists every Kind in the order summaries keep them, so that a
// function's summary (and the facts built from it) is deterministic.
var kinds = []Kind{Goroutine, Select, Channel, Clock, Timer, Rand, CryptoRnd, IO, MapOrder, Global}

// explain says, for one kind and the API that triggered it, why replay
// would diverge and what to use instead. what is how the finding names
// the construct ("time.Since", "go statement").
func explain(k Kind, what string) string {
	switch k {
	case Goroutine:
		return "a goroutine runs outside the event the runtime records, in an order the scheduler picks, so replay cannot reproduce its effects; do the work inside the handler, or split it into events with env.Send(env.Self(), ...) or env.After, or run it as a task with node.Go"
	case Select:
		return "select picks among ready channels at random and waits on channels the runtime does not record; handle messages in Receive and timeouts with env.After"
	case Channel:
		return what + ": a channel operation exchanges values with (or blocks on) another goroutine outside the recorded events; send messages with env.Send and handle them in Receive (in a task: t.Recv or t.Call; to wait for another task, a node.Mutex, node.Cond or node.Semaphore)"
	case Clock:
		switch what {
		case "time.Since":
			return "time.Since reads the wall clock, which is not recorded and differs on replay; use env.Now().Sub(t) (recorded; virtual in the simulator)"
		case "time.Until":
			return "time.Until reads the wall clock, which is not recorded and differs on replay; use t.Sub(env.Now()) (recorded; virtual in the simulator)"
		}
		return what + " reads the wall clock, which is not recorded and differs on replay; use env.Now() (recorded; virtual in the simulator)"
	case Timer:
		if what == "time.Sleep" {
			return "time.Sleep blocks the event on the wall clock, which the simulator and replayer do not run on; set env.After(d, name) and continue in Timer (in a task: t.Sleep(d))"
		}
		return what + " starts a real timer that fires on the wall clock, not as a recorded event; use env.After(d, name) and handle the firing in Timer (in a task: t.Sleep(d), or a timeout on t.Recv)"
	case Rand:
		return what + " draws from the process-wide generator, which is seeded at random and not recorded; use env.Rand() (seeded from a recorded per-event seed)"
	case CryptoRnd:
		return what + " reads random bytes the runtime does not record unless the system routes them; use env.Rand(), or set CryptoRand: true in the system.System so drivers record handler reads (node.InterceptCryptoRand)"
	case IO:
		return what + " does file, network or process I/O, which replay cannot reproduce and repeats on every replay; use env.Disk() for durable state, env.Send to talk to nodes, env.Log() to log"
	case Global:
		return what + ": a package-level variable is shared by every node that the simulator and the replayer run in one process, and keeps its value from one run to the next, so a replay reads other values than the recording did; keep the value in the handler's struct (a table every node reads and nobody writes: system.Config.Shared)"
	case MapOrder:
		msg := "map iteration order is random on every run and here it decides " + what + ", so a replay sends, schedules or stores in another order; range over slices.Sorted(maps.Keys(m)) instead"
		if strings.HasPrefix(what, "the order of appends") {
			// Only sort.* and slices.Sort* later in the function count as
			// sorting it: a hand-written sort was reported (a new user's).
			msg += " (sorted later by code of your own? vet knows only sort.* and slices.Sort* in this function: sort with them, or mark the range //replay:ok)"
		}
		return msg
	}
	return what
}

// The packages and functions the analyzer recognises. Functions are
// matched by package path and name; methods by package path alone (every
// method of an os.File or a net.Conn does I/O), minus pure helpers.

var clockFuncs = map[string]bool{"Now": true, "Since": true, "Until": true}

var timerFuncs = map[string]bool{"After": true, "Tick": true, "NewTimer": true, "NewTicker": true, "AfterFunc": true, "Sleep": true}

// ioPackages are the packages all of whose functions and methods touch
// files, the network, processes or the environment, except those in
// ioPure.
var ioPackages = map[string]bool{
	"os": true, "os/exec": true, "os/signal": true, "os/user": true,
	"net": true, "net/rpc": true, "net/smtp": true,
	"io/ioutil": true, "syscall": true,
}

// ioPure are functions and methods of ioPackages that compute without
// I/O (error predicates, address parsing), keyed "pkg.Name" or
// "pkg.Type.Method"; "pkg.Type.*" allows every method of a type.
var ioPure = map[string]bool{
	"os.IsExist": true, "os.IsNotExist": true, "os.IsPermission": true, "os.IsTimeout": true,
	"os.IsPathSeparator": true, "os.NewSyscallError": true, "os.Expand": true,
	"os.SyscallError.*": true, "os.PathError.*": true, "os.LinkError.*": true,
	"os.FileMode.*": true,
	"net.ParseIP":   true, "net.ParseCIDR": true, "net.ParseMAC": true, "net.IPv4": true,
	"net.IPv4Mask": true, "net.CIDRMask": true, "net.JoinHostPort": true, "net.SplitHostPort": true,
	"net.IP.*": true, "net.IPMask.*": true, "net.IPNet.*": true, "net.HardwareAddr.*": true,
	"net.AddrError.*": true, "net.OpError.*": true, "net.DNSError.*": true, "net.ParseError.*": true,
	"net.UnknownNetworkError.*": true, "net.InvalidAddrError.*": true,
	"net.TCPAddr.*": true, "net.UDPAddr.*": true, "net.IPAddr.*": true, "net.UnixAddr.*": true,
}

// ioSome are the I/O functions of packages that are otherwise pure.
var ioSome = map[string]bool{
	"net/http.Get": true, "net/http.Head": true, "net/http.Post": true, "net/http.PostForm": true,
	"net/http.ListenAndServe": true, "net/http.ListenAndServeTLS": true, "net/http.Serve": true, "net/http.ServeTLS": true,
	"net/http.Client.*": true, "net/http.Server.*": true, "net/http.Transport.*": true, "net/http.RoundTripper.*": true,
	"path/filepath.Walk": true, "path/filepath.WalkDir": true, "path/filepath.Glob": true,
	"path/filepath.Abs": true, "path/filepath.EvalSymlinks": true,
}

// classify says whether a reference to fn is one of the nondeterministic
// APIs, and how a finding names it.
func classify(fn *types.Func) (Kind, string, bool) {
	pkg := fn.Pkg()
	if pkg == nil {
		return "", "", false
	}
	path, name := pkg.Path(), fn.Name()
	recv := recvName(fn)
	switch path {
	case "time":
		if recv != "" {
			// Methods of time.Time and time.Duration compute; those of
			// *time.Timer act on a timer already created (flagged there).
			return "", "", false
		}
		if clockFuncs[name] {
			return Clock, "time." + name, true
		}
		if timerFuncs[name] {
			return Timer, "time." + name, true
		}
	case "math/rand", "math/rand/v2":
		// Methods run on a *rand.Rand the handler owns (env.Rand(), or
		// one it built from a fixed seed); constructors (New, NewSource,
		// NewPCG, NewZipf, ...) draw nothing.
		if recv == "" && !strings.HasPrefix(name, "New") {
			return Rand, "rand." + name, true
		}
	case "crypto/rand":
		if recv == "" {
			return CryptoRnd, "crypto/rand." + name, true
		}
	}
	qual := path + "." + name
	if recv != "" {
		qual = path + "." + recv + "." + name
	}
	if ioPackages[path] {
		if ioPure[qual] || (recv != "" && ioPure[path+"."+recv+".*"]) {
			return "", "", false
		}
		return IO, short(path) + "." + dotted(recv, name), true
	}
	if ioSome[qual] || (recv != "" && ioSome[path+"."+recv+".*"]) {
		return IO, short(path) + "." + dotted(recv, name), true
	}
	return "", "", false
}

// classifyVar flags reads of crypto/rand.Reader (io.ReadFull(rand.Reader,
// b), rsa.GenerateKey(rand.Reader, ...)): the same bytes as rand.Read.
func classifyVar(v *types.Var) (Kind, string, bool) {
	if v.Pkg() != nil && v.Pkg().Path() == "crypto/rand" && v.Name() == "Reader" {
		return CryptoRnd, "crypto/rand.Reader", true
	}
	return "", "", false
}

// recvName is the name of fn's receiver's named type ("" for functions).
func recvName(fn *types.Func) string {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return ""
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return n.Obj().Name()
	}
	return "?"
}

func short(path string) string {
	if i := strings.LastIndex(path, "/"); i >= 0 {
		return path[i+1:]
	}
	return path
}

func dotted(recv, name string) string {
	if recv == "" {
		return name
	}
	return recv + "." + name
}
