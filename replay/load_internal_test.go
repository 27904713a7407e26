package replay

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// A capped list of problems does not pass for all of them.
func TestValidationErrorSaysWhenCapped(t *testing.T) {
	e := &ValidationError{Problems: make([]Problem, maxProblems)}
	if msg := e.Error(); !strings.HasPrefix(msg, "50 or more problems") {
		t.Fatalf("%q", msg)
	}
	e.Problems = e.Problems[:3]
	if msg := e.Error(); !strings.HasPrefix(msg, "3 problem(s)") || !strings.HasSuffix(msg, "(and 2 more)") {
		t.Fatalf("%q", msg)
	}
}

// The same file under two names is refused before it is read twice.
func TestGivenOnce(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.lz4")
	if err := os.WriteFile(a, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a, filepath.Join(dir, "b.lz4")); err != nil {
		t.Fatal(err)
	}
	err := givenOnce([]string{a, filepath.Join(dir, "missing.lz4"), filepath.Join(dir, "b.lz4")})
	if err == nil || !strings.Contains(err.Error(), "b.lz4 is given twice (also as "+a+")") {
		t.Fatalf("%v", err)
	}
	if err := givenOnce([]string{a, filepath.Join(dir, "missing.lz4")}); err != nil {
		t.Fatal(err)
	}
}

// A trace whose files are too big to hold at most DefaultInMemory events
// is spilled from its first event (none is held decoded and re-encoded
// later); a small one, or any under an explicit limit, is read as before.
func TestBigFilesSpillFromTheStart(t *testing.T) {
	t.Setenv(InMemoryEnv, "")
	dir := t.TempDir()
	h := record.Header{System: "paxos", Nodes: []node.ID{"n1"}, Recorded: []node.ID{"n1"}, Driver: "live", Start: 1, Types: []string{"x.Big"}}
	write := func(name string, events, payload int) string {
		path := filepath.Join(dir, name)
		out, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		w, err := record.NewWriter(out, h, record.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rnd := rand.New(rand.NewPCG(1, 2))
		for i := range events {
			ev := &node.Event{Node: "n1", Seq: uint64(i + 1), Lamport: uint64(i + 1), Time: int64(i + 1), Kind: node.KindInput, MsgType: "x.Big"}
			if i == 0 {
				ev.Kind, ev.MsgType = node.KindInit, ""
			} else {
				ev.Payload = make([]byte, payload)
				for j := range ev.Payload {
					ev.Payload[j] = byte(rnd.Uint32()) // incompressible
				}
			}
			if err := w.Append(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(record.End{Time: int64(events + 1)}); err != nil {
			t.Fatal(err)
		}
		return path
	}
	big := write("big.lz4", 9, DefaultInMemory*minEventBytes/8+1)
	small := write("small.lz4", 9, 100)
	if !filesHoldMore([]string{big}, DefaultInMemory) || filesHoldMore([]string{small, filepath.Join(dir, "missing.lz4")}, DefaultInMemory) {
		t.Fatal("filesHoldMore misjudges the files' sizes")
	}
	for _, c := range []struct {
		path    string
		opts    LoadOptions
		spilled bool
	}{
		{big, LoadOptions{}, true}, {small, LoadOptions{}, false}, {big, LoadOptions{InMemory: 100}, false}, {small, LoadOptions{InMemory: -1}, true},
		// No temporary directory: a guess from the size does not need one.
		{big, LoadOptions{TempDir: filepath.Join(dir, "missing")}, false},
	} {
		tr, err := LoadWith(c.opts, c.path)
		if err != nil {
			t.Fatal(err)
		}
		_, spilled := tr.events.(*spillStore)
		if spilled != c.spilled || tr.Len() != 9 || len(tr.Event(8).Payload) != len(tr.Event(1).Payload) {
			t.Errorf("%s %+v: spilled %v (want %v), %d steps", filepath.Base(c.path), c.opts, spilled, c.spilled, tr.Len())
		}
		tr.Close()
	}
}
