package lockserver

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
)

// These Go oracles state what scripts/lockserver.star states, checked
// after every event of simulated runs: the correct service keeps both
// properties, and each seeded bug breaks liveness.

// stuckFor is the liveness alarm of scripts/lockserver.star: the server's
// queue non-empty and unchanged for this long.
const stuckFor = 500 * time.Millisecond

type outcome struct {
	unsafe  string        // the first safety violation
	longest time.Duration // the longest stretch of a non-empty, unchanged queue
	steps   int
}

func queueKey(s *Server) string {
	var b strings.Builder
	for _, l := range s.Locks {
		for _, r := range l.Queue {
			fmt.Fprintf(&b, "%s:%s:%d ", l.Name, r.Client, r.Mode)
		}
	}
	return b.String()
}

func run(t *testing.T, bug string, seed uint64) outcome {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug = seed, bug
	cfg = cfg.WithDefaults(System)
	var out outcome
	clients := map[node.ID]*Client{}
	var key string
	var changed time.Duration
	cfg.Observe = func(ev *node.Event, in *node.Instance) error {
		out.steps++
		now := time.Duration(ev.Time - sim.Epoch)
		switch h := in.Handler().(type) {
		case *Client:
			clients[ev.Node] = h
			if out.unsafe == "" {
				out.unsafe = unsafe(clients)
			}
		case *Server:
			if k := queueKey(h); k != key {
				key, changed = k, now
			}
		}
		if key != "" {
			out.longest = max(out.longest, now-changed)
		}
		return nil
	}
	if _, err := sim.Run(System, cfg, io.Discard); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	return out
}

// unsafe reports a lock cached by clerks in conflicting modes.
func unsafe(clients map[node.ID]*Client) string {
	held := map[string][]string{}
	for id, c := range clients {
		for _, e := range c.Entries {
			if e.Held != None {
				held[e.Name] = append(held[e.Name], fmt.Sprintf("%s:%s", id, e.Held))
			}
		}
	}
	for l, hs := range held {
		if len(hs) > 1 && slices.ContainsFunc(hs, func(h string) bool { return strings.HasSuffix(h, ":exclusive") }) {
			slices.Sort(hs)
			return fmt.Sprintf("lock %s held by %v", l, hs)
		}
	}
	return ""
}

func seeds(t *testing.T) int {
	if testing.Short() {
		return 5
	}
	return 100
}

func TestCorrectServiceKeepsSafetyAndLiveness(t *testing.T) {
	for seed := range uint64(seeds(t)) {
		o := run(t, "none", seed)
		if o.unsafe != "" {
			t.Fatalf("seed %d: %s", seed, o.unsafe)
		}
		if o.longest > stuckFor {
			t.Fatalf("seed %d: the server's queue was stuck for %v", seed, o.longest)
		}
	}
}

func TestSeededBugsStallTheQueue(t *testing.T) {
	for _, bug := range []string{"livelock", "deadlock"} {
		t.Run(bug, func(t *testing.T) {
			for seed := range uint64(seeds(t)) {
				o := run(t, bug, seed)
				if o.unsafe != "" {
					t.Fatalf("seed %d: %s (the bug should break liveness only)", seed, o.unsafe)
				}
				if o.longest > stuckFor {
					t.Logf("seed %d: queue stuck for %v", seed, o.longest)
					return
				}
			}
			t.Fatalf("no seed stalled the queue for %v", stuckFor)
		})
	}
}
