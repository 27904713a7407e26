package predicates_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/predicates/internal/dd"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// hostile scripts, each with what its failure must say. "eval" scripts fail
// a predicate while checking; the others fail at load.
var hostile = []struct {
	name, src, want string
	eval            bool
}{
	{name: "list-range", eval: true, want: "memory budget",
		src: `safety("P", lambda: len(list(range(1000000000))) > 0)`},
	{name: "list-range-load", want: "memory budget",
		src: "x = list(range(1000000000))\nsafety(\"P\", lambda: True)"},
	{name: "string-repeat", eval: true, want: "memory budget",
		src: `
def grow():
    keep = []
    for i in range(50):
        keep.append("x" * 1000000000)
    return True
safety("P", grow)`},
	{name: "string-doubling", eval: true, want: "memory budget",
		src: `
def grow():
    s = "x"
    for i in range(40):
        s = s + s
    return True
safety("P", grow)`},
	{name: "list-repeat", eval: true, want: "memory budget",
		src: `safety("P", lambda: len([0] * 1000000000) > 0)`},
	{name: "sorted-range", eval: true, want: "memory budget",
		src: `safety("P", lambda: len(sorted(range(200000000))) > 0)`},
	{name: "extend-range", eval: true, want: "memory budget",
		src: `
def grow():
    l = []
    l.extend(range(1000000000))
    return True
safety("P", grow)`},
	{name: "join-fanout", eval: true, want: "memory budget",
		src: `safety("P", lambda: len(("x" * 1000000).join(["a"] * 100000)) > 0)`},
	{name: "str-shared", eval: true, want: "memory budget",
		src: `safety("P", lambda: len(str([["x" * 1000000] * 1000] * 100)) > 0)`},
	{name: "replace-fanout", eval: true, want: "memory budget",
		src: `safety("P", lambda: len(("x" * 100000).replace("x", "y" * 100000)) > 0)`},
	{name: "elems", eval: true, want: "memory budget",
		src: `safety("P", lambda: len(list(("x" * 50000000).elems())) > 0)`},
	{name: "str-deep", eval: true, want: "nested",
		src: `
def deep():
    l = []
    for i in range(300000):
        l = [l]
    return len(str(l)) > 0
safety("P", deep)`},
	{name: "int-squaring", eval: true, want: "too large",
		src: `
def big():
    x = 3
    for i in range(40):
        x = x * x
    return True
safety("P", big)`},
	// Each version is bounded alone; keep=N of them were not together
	// (keep=40 of a new 100 MB string each step took 6.3 GB). A tuple
	// of shared halves weighs its places in little memory.
	{name: "kept-history", eval: true, want: "with keep = 10, each value kept may weigh at most",
		src: `
def big():
    t = ("x",)
    for i in range(20):
        t = (t, t)
    return (event.step, t)
d = derived("big", big, keep = 10)
safety("P", lambda: d() != None)`},
	{name: "recursion", eval: true, want: "nested",
		src: `
def f(n):
    return f(n + 1)
safety("P", lambda: f(0))`},
	{name: "slow", eval: true, want: "time budget",
		src: `
def slow():
    l = list(range(100000))
    for i in range(100000):
        sorted(l)
    return True
safety("P", slow)`},
}

// TestHostileScriptsAreBounded runs each hostile script in a child process
// whose address space is capped: a script that escaped its budgets would
// crash it (out of memory) or hang it (killed by the timeout). Each must
// instead fail with one clear script error, quickly, having used about
// its memory budget and no more.
func TestHostileScriptsAreBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the child caps its address space with setrlimit (linux)")
	}
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			out, err := runChild(t, "script:"+h.name)
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if !strings.Contains(out, h.want) || !strings.Contains(out, "RESULT ") {
				t.Fatalf("the failure does not say %q:\n%s", h.want, out)
			}
			if h.eval && !strings.Contains(out, "RESULT eval") || !h.eval && !strings.Contains(out, "RESULT load") {
				t.Fatalf("failed at the wrong time (want eval=%v):\n%s", h.eval, out)
			}
		})
	}
}

// runChild runs this test binary as a child in the given mode and returns
// its output; err when it crashed or ran too long.
func runChild(t *testing.T, mode string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostileChild$", "-test.v")
	cmd.Env = append(os.Environ(), "REPLAYCHECK_HOSTILE="+mode, "REPLAYCHECK_HOSTILE_DIR="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), fmt.Errorf("still running after %v: unbounded in time", time.Since(start).Round(time.Second))
	}
	if err != nil {
		return out.String(), err
	}
	if d := time.Since(start); d > 15*time.Second {
		return out.String(), fmt.Errorf("took %v", d)
	}
	return out.String(), nil
}

const childBudget = 64 << 20

// TestHostileChild is the child of the tests above (it does nothing
// unless REPLAYCHECK_HOSTILE is set).
func TestHostileChild(t *testing.T) {
	mode := os.Getenv("REPLAYCHECK_HOSTILE")
	if mode == "" {
		t.Skip("run by TestHostileScriptsAreBounded")
	}
	// A hard cap on the address space, 2 GiB above what the runtime has
	// already reserved: an unbounded allocation crashes the child instead
	// of the machine. Measured once: the size moves between two reads,
	// and a soft limit above the hard one is refused (EINVAL, a CI flake).
	capAS := vmSize(t) + 2<<30
	lim := syscall.Rlimit{Cur: capAS, Max: capAS}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("REPLAYCHECK_HOSTILE_DIR")
	tr := smallTrace(t)
	var path string
	switch {
	case strings.HasPrefix(mode, "script:"):
		name := strings.TrimPrefix(mode, "script:")
		for _, h := range hostile {
			if h.name == name {
				path = filepath.Join(dir, "hostile.star")
				if err := os.WriteFile(path, []byte(h.src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	case strings.HasPrefix(mode, "file:"):
		path = hostileFile(t, dir, strings.TrimPrefix(mode, "file:"))
	}
	if path == "" {
		t.Fatalf("unknown mode %q", mode)
	}
	peak := watchHeap()
	r, err := replay.New(tr, system.NewRegistry(dd.System), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := predicates.Options{To: -1, MemoryBudget: childBudget, TimeBudget: 2 * time.Second}
	c, err := predicates.Load(path, r, opts)
	if err != nil {
		var se *predicates.ScriptError
		fmt.Printf("RESULT load script-error=%v: %v\n", errors.As(err, &se), err)
	} else {
		rep, err := c.Run(predicates.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Err() == nil {
			fmt.Printf("RESULT ok: no error\n")
		} else {
			fmt.Printf("RESULT eval: %v\n", rep.Err())
		}
	}
	grown := peak()
	fmt.Printf("peak heap growth %d MiB\n", grown>>20)
	if grown > 6*childBudget {
		t.Fatalf("the heap grew by %d MiB with a budget of %d MiB", grown>>20, childBudget>>20)
	}
}

// vmSize is the process's virtual memory size in bytes.
func vmSize(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmSize:" && f[2] == "kB" {
			var kb uint64
			fmt.Sscan(f[1], &kb)
			return kb << 10
		}
	}
	t.Fatal("no VmSize in /proc/self/status")
	return 0
}

// watchHeap samples the heap every millisecond; the returned function
// stops sampling and returns the largest growth seen.
func watchHeap() func() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var top uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > base && v-base > top {
				top = v - base
			}
			select {
			case <-stop:
				done <- top
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(stop); return <-done }
}

// smallTrace is three nodes' init events and a few inputs.
func smallTrace(t testing.TB) *replay.Trace {
	sys := *dd.System
	sys.Scenario = func(ctl system.Controller) {
		for i, id := range []string{"n1", "n2", "n3"} {
			ctl.At(time.Duration(i+1)*time.Millisecond, func() { ctl.Input(node.ID(id), dd.Cmd{Op: "set", Args: []string{"V", "1"}}) })
		}
	}
	cfg := sim.Config{Seed: 1, Nodes: 3, Time: 10 * time.Millisecond}
	var buf bytes.Buffer
	if _, err := sim.Run(&sys, cfg.WithDefaults(&sys), &buf); err != nil {
		t.Fatal(err)
	}
	tr, err := replay.FromBytes(buf.Bytes(), "small.lz4")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// hostileFile makes the script file of a file: mode in dir and returns
// its path.
func hostileFile(t *testing.T, dir, mode string) string {
	main := filepath.Join(dir, "preds", "main.star")
	if err := os.MkdirAll(filepath.Dir(main), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside.star")
	if err := os.WriteFile(outside, []byte("safety(\"P\", lambda: True)\nX = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(dir, "preds", name)); err != nil {
			t.Fatal(err)
		}
	}
	write := func(src string) {
		if err := os.WriteFile(main, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	switch mode {
	case "main-devzero":
		link("/dev/zero", "zero.star")
		return filepath.Join(dir, "preds", "zero.star")
	case "main-outside":
		link(outside, "out.star")
		return filepath.Join(dir, "preds", "out.star")
	case "load-devzero":
		link("/dev/zero", "zero.star")
		write("load(\"zero.star\", \"X\")\nsafety(\"P\", lambda: True)\n")
	case "load-outside":
		link(outside, "out.star")
		write("load(\"out.star\", \"X\")\nsafety(\"P\", lambda: True)\n")
	case "main-huge":
		f, err := os.Create(main)
		if err != nil {
			t.Fatal(err)
		}
		// Sparse: a 2 GiB script without 2 GiB on disk.
		if err := f.Truncate(2 << 30); err != nil {
			t.Fatal(err)
		}
		f.Close()
	case "main-fifo":
		if err := syscall.Mkfifo(main, 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("unknown file mode %q", mode)
	}
	return main
}

// TestHostileScriptFiles: a script (or a module it loads) that is a
// symlink to /dev/zero or to a file outside the script's folder, a FIFO,
// or a huge file is refused at load with one clear error.
func TestHostileScriptFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the child caps its address space with setrlimit (linux)")
	}
	for mode, want := range map[string]string{
		"main-devzero": "not a regular file",
		"main-outside": "outside the script's folder",
		"load-devzero": "not a regular file",
		"load-outside": "outside the script's folder",
		"main-huge":    "larger than",
		"main-fifo":    "not a regular file",
	} {
		t.Run(mode, func(t *testing.T) {
			out, err := runChild(t, "file:"+mode)
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if !strings.Contains(out, "RESULT load script-error=true") || !strings.Contains(out, want) {
				t.Fatalf("want a script error saying %q:\n%s", want, out)
			}
		})
	}
}

// A NUL byte in a script or a module it loads is refused where it lies:
// Starlark's scanner took it for the end of the file, so the predicates
// after it were never declared and the check passed.
func TestScriptWithANULByteIsRefused(t *testing.T) {
	tr := smallTrace(t)
	for name, files := range map[string]map[string]string{
		"main":   {"main.star": "safety(\"A\", lambda: True)\n# a comment \x00 here\nsafety(\"B\", lambda: False)\n"},
		"module": {"main.star": "load(\"m.star\", \"X\")\nsafety(\"A\", lambda: X)\n", "m.star": "X = True\n\x00\nY = 1\n"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for f, src := range files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r, err := replay.New(tr, system.NewRegistry(dd.System), replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = predicates.Load(filepath.Join(dir, "main.star"), r, predicates.Options{To: -1})
			var se *predicates.ScriptError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), "NUL byte") || !strings.Contains(err.Error(), ".star:2:") {
				t.Fatalf("load: %v", err)
			}
		})
	}
}

// A declared name is printed in reports, one line per predicate: an
// empty name printed a blank row, and a name holding a newline forged a
// line of check's report ("Fake safety 0 violation(s)"). Such names, and
// bidi controls and very long names, are refused where declared.
func TestUnprintableNamesAreRefused(t *testing.T) {
	tr := smallTrace(t)
	for src, want := range map[string]string{
		`safety("", lambda: True)`:                                          "a predicate needs a name",
		`safety("  ", lambda: True)`:                                        "a predicate needs a name",
		`safety("A\nFake safety 0 violation(s)", lambda: True)`:             "holds a control or bidi character",
		`liveness("A\u202eB", lambda: True)`:                                "holds a control or bidi character",
		`derived("d\x1b[2J", lambda: 1)`:                                    "derived value name",
		`safety("` + strings.Repeat("x", 300) + `", lambda: True)`:          "at most 256",
		`ordered("", table("paxos.Agent"), by = lambda r: r.node)`:          "an ordered index needs a name",
		`history("h\r", lambda: None)` + "\n" + `safety("x", lambda: True)`: "holds a control",
	} {
		err := loadSource(t, tr, "names.star", src+"\n")
		var se *predicates.ScriptError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "names.star:1:") {
			t.Errorf("%s: %v, want a script error at line 1 saying %q", src, err, want)
		}
	}
}

// The bundled models load on a thread of their own: under a step budget
// too small for them (--max-steps 1) the load panicked ("cannot fail");
// the user's script now fails its own budget, as a script error.
func TestTinyStepBudgetIsTheScriptsError(t *testing.T) {
	tr := smallTrace(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "tiny.star")
	if err := os.WriteFile(path, []byte("A = 1\nsafety(\"A\", lambda: True)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, steps := range []uint64{1, 20, 1000} {
		r, err := replay.New(tr, system.NewRegistry(dd.System), replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = predicates.Load(path, r, predicates.Options{To: -1, MaxSteps: steps})
		var se *predicates.ScriptError
		if steps == 1 && (!errors.As(err, &se) || !strings.Contains(err.Error(), "too many steps")) {
			t.Errorf("--max-steps 1: %v, want the script's step budget exceeded", err)
		}
		if steps > 1 && err != nil {
			t.Errorf("--max-steps %d (the script takes fewer): %v", steps, err)
		}
	}
}

// A global nested deeper than any script needs is refused at load: one
// an evaluation nested further and hashed as a dict key overflowed the Go
// stack, which no recover survives (a hostile script killed every verb).
// A global sharing its parts (a tuple of itself twice, over and over) is
// not refused for the paths to its leaves.
func TestDeeplyNestedGlobalIsRefused(t *testing.T) {
	tr := smallTrace(t)
	for _, c := range []struct {
		src  string
		want string // "": loads
	}{
		{"def build(t):\n    for i in range(20000):\n        t = (t,)\n    return t\nT = build(())\n", "global T is nested more than 10000 levels deep"},
		{"def build(t):\n    for i in range(20000):\n        t = [t]\n    return t\nL = build([])\n", "global L is nested more than 10000 levels deep"},
		{"def build(t):\n    for i in range(12):\n        t = (t, t)\n    return t\nD = build((1,))\n", ""},
		{"def build(t):\n    for i in range(9000):\n        t = (i, t)\n    return t\nC = build(())\n", ""},
		// Hidden in a closure or a struct, reached by calling or reading
		// it (a hostile pass's fatal stack overflow).
		{"def build(t):\n    for i in range(20000):\n        t = (t,)\n    return t\nT = build(())\nG = lambda: T\n", "global T is nested more than 10000 levels deep"},
		{"def hide():\n    t = ()\n    for i in range(20000):\n        t = (t,)\n    return lambda: t\nG = hide()\n", "global G is nested more than 10000 levels deep"},
		{"def build(t):\n    for i in range(20000):\n        t = (t,)\n    return t\nS = struct(x = build(()))\n", "global S is nested more than 10000 levels deep"},
		// A closure that names itself cannot be frozen: go.starlark.net's
		// freeze overflowed the Go stack on it, in every verb.
		{"def outer():\n    def f(n):\n        return f(n - 1) if n else 0\n    return f\nF = outer()\n", "global F holds a function that holds itself"},
		{"def outer():\n    def f(n):\n        return f\n    return [f]\nL = outer()\n", "global L holds a function that holds itself"},
		// One that names itself through a list freezes: the list stops it.
		{"def outer():\n    box = []\n    def f():\n        return box\n    box.append(f)\n    return f\nF = outer()\n", ""},
	} {
		err := loadSource(t, tr, "deep.star", c.src+"safety(\"P\", lambda: True)\n")
		var se *predicates.ScriptError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.src, err)
		case c.want != "" && (!errors.As(err, &se) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a script error saying %q", c.src, err, c.want)
		}
	}
}

// loadSource writes src to a script called name and loads it over tr,
// returning Load's error.
func loadSource(t *testing.T, tr *replay.Trace, name, src string) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(tr, system.NewRegistry(dd.System), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = predicates.Load(path, r, predicates.Options{To: -1})
	return err
}

// A time budget near the largest duration does not overflow the stuck
// bound into a negative one, which a watch took for none (and then gave
// up on a slow evaluation at --handler-bound, as a stuck handler).
func TestStuckBoundSaturates(t *testing.T) {
	for _, b := range []time.Duration{time.Second, 10 * time.Second, time.Hour, 2_000_000 * time.Hour, math.MaxInt64} {
		if got := predicates.StuckBound(b); got < b || got <= 0 {
			t.Errorf("StuckBound(%v) = %v", b, got)
		}
	}
	if got := predicates.StuckBound(time.Second); got != 11*time.Second {
		t.Errorf("StuckBound(1s) = %v, want 11s", got)
	}
}
