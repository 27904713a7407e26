package chord

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// TestMoreNodesThanRingPositions: 800 nodes on the default ring of 2^9
// positions used to hang the position search forever. The system refuses
// the run and says which bits would fit.
func TestMoreNodesThanRingPositions(t *testing.T) {
	cfg := system.Config{Bug: "none", Nodes: System.NodeIDs(800)}
	err := System.CheckConfig(cfg)
	if err == nil || !strings.Contains(err.Error(), "chord: 800 nodes need at least 800 ring positions") ||
		!strings.Contains(err.Error(), "--param bits=10") {
		t.Fatalf("800 nodes on 512 positions: %v", err)
	}
	cfg.Params = map[string]string{"bits": "10"}
	if err := System.CheckConfig(cfg); err != nil {
		t.Fatalf("800 nodes on 1024 positions: %v", err)
	}

	done := make(chan error, 1)
	go func() {
		var buf bytes.Buffer
		_, err := sim.Run(System, sim.Config{Seed: 1, Nodes: 800}.WithDefaults(System), &buf)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "ring positions") {
			t.Fatalf("sim with 800 nodes: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("sim with 800 nodes on 512 positions did not end")
	}
}

// TestRingPositionsFullRingPanics: a replay of a hostile trace header can
// still ask for more nodes than positions; the search must stop, with a
// message, rather than loop.
func TestRingPositionsFullRingPanics(t *testing.T) {
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		ringPositions(System.NodeIDs(17), 4)
	}()
	select {
	case r := <-done:
		if r == nil || !strings.Contains(fmt.Sprint(r), "17 nodes need at least 17 ring positions") {
			t.Fatalf("17 nodes on 16 positions: %v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ringPositions with a full ring did not return")
	}
	if pos := ringPositions(System.NodeIDs(16), 4); len(pos) != 16 {
		t.Fatalf("16 nodes on 16 positions: %d placed", len(pos))
	}
}

// TestValidateParams: every parameter the system reads is checked before
// a node is built (a bad one used to panic in the first handler, and the
// run exited 1 with an empty trace); an unknown one is refused rather
// than ignored.
func TestValidateParams(t *testing.T) {
	ids := []node.ID{"n1", "n2"}
	for params, want := range map[string]string{
		"bits=x":        `--param bits="x": want an integer in 4..30`,
		"bits=31":       "bits",
		"succs=0":       "succs",
		"leave_at=soon": "leave_at",
		"leave_at=-1s":  "leave_at",
		"bitz=12":       `unknown parameter "bitz" (known: bits, leave_at, succs)`,
	} {
		k, v, _ := strings.Cut(params, "=")
		err := System.CheckConfig(system.Config{Bug: "none", Nodes: ids, Params: map[string]string{k: v}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--param %s: %v, want %q", params, err, want)
		}
	}
	ok := map[string]string{"bits": "4", "succs": "16", "leave_at": "0s"}
	if err := System.CheckConfig(system.Config{Bug: "none", Nodes: ids, Params: ok}); err != nil {
		t.Errorf("%v: %v", ok, err)
	}
}
