package randtree

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
)

// These Go oracles check the same properties scripts/randtree.star states,
// after every event of simulated runs: they show that the correct program
// keeps them and that each seeded bug breaks its own.

// violation is a broken safety property at one node after one event.
type violation struct {
	property string
	event    int // index in dispatch order (replay numbers steps in causal order)
	node     node.ID
	detail   string
}

func (v violation) String() string {
	return fmt.Sprintf("%s after event %d, node %s: %s", v.property, v.event, v.node, v.detail)
}

// Safety property names, as in scripts/randtree.star.
const (
	propDisjoint      = "ChildrenSiblingsDisjoint"
	propRootNotChild  = "RootNotChild"
	propStaleSiblings = "NoStaleSiblings"
	propRecovery      = "RecoveryTimerPending"
)

// checkNode returns the safety properties a node's state breaks.
func checkNode(n *Node, timers []node.PendingTimer) []violation {
	var vs []violation
	add := func(prop, format string, args ...any) {
		vs = append(vs, violation{property: prop, node: n.Self, detail: fmt.Sprintf(format, args...)})
	}
	for _, c := range n.Children {
		if slices.Contains(n.Siblings, c) {
			add(propDisjoint, "%s is both child and sibling (children %v, siblings %v)", c, n.Children, n.Siblings)
		}
	}
	if n.Root != "" && slices.Contains(n.Children, n.Root) {
		add(propRootNotChild, "root %s is among children %v", n.Root, n.Children)
	}
	if (n.IsRoot || n.Parent != n.Root) && len(n.Siblings) > 0 {
		add(propStaleSiblings, "siblings %v while parent %q, root %s", n.Siblings, n.Parent, n.Root)
	}
	if n.Joined && !slices.ContainsFunc(timers, func(t node.PendingTimer) bool { return t.Name == RecoveryTimer }) {
		add(propRecovery, "joined with pending timers %v", timers)
	}
	return vs
}

// run simulates one seed with the default scenario, checking every node
// after each of its events. With stopAt set, the run stops at the first
// violation of that property.
func run(t *testing.T, bug string, seed uint64, stopAt string) (vs []violation, final map[node.ID]*Node) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug = seed, bug
	cfg = cfg.WithDefaults(System)
	event := 0
	cfg.Observe = func(ev *node.Event, in *node.Instance) error {
		defer func() { event++ }()
		n, ok := in.Handler().(*Node)
		if !ok {
			return nil // crashed
		}
		for _, v := range checkNode(n, in.Timers()) {
			v.event = event
			vs = append(vs, v)
			if v.property == stopAt {
				return sim.ErrStopped
			}
		}
		return nil
	}
	final = map[node.ID]*Node{}
	// Keep the last handler of every node: Observe sees each node's
	// latest state, and a crashed node's handler is nil.
	observe := cfg.Observe
	cfg.Observe = func(ev *node.Event, in *node.Instance) error {
		if n, ok := in.Handler().(*Node); ok {
			final[in.ID()] = n
		} else {
			delete(final, in.ID())
		}
		return observe(ev, in)
	}
	if _, err := sim.Run(System, cfg, io.Discard); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	return vs, final
}

// settled describes what is wrong with the final tree ("" if nothing): every
// node joined, exactly one root, n1, that every node knows, and parent and
// child links that agree.
func settled(final map[node.ID]*Node, nodes int) string {
	if len(final) != nodes {
		return fmt.Sprintf("%d of %d nodes up", len(final), nodes)
	}
	var roots []node.ID
	for id, n := range final {
		switch {
		case !n.Joined:
			return fmt.Sprintf("%s not joined", id)
		case n.IsRoot:
			roots = append(roots, id)
		case n.Root != "n1":
			return fmt.Sprintf("%s believes the root is %s", id, n.Root)
		case final[n.Parent] == nil || !slices.Contains(final[n.Parent].Children, id):
			return fmt.Sprintf("%s's parent %s does not list it", id, n.Parent)
		}
		for _, c := range n.Children {
			if final[c] == nil || final[c].Parent != id {
				return fmt.Sprintf("%s lists child %s whose parent is not %s", id, c, id)
			}
		}
	}
	slices.Sort(roots)
	if len(roots) != 1 || roots[0] != "n1" {
		return fmt.Sprintf("roots %v, want [n1]", roots)
	}
	return ""
}

func TestCorrectTreeKeepsSafetyAndSettles(t *testing.T) {
	nodes := System.Sim.Nodes
	for seed := uint64(1); seed <= 30; seed++ {
		vs, final := run(t, "none", seed, "")
		for i, v := range vs {
			if i == 3 {
				t.Errorf("seed %d: ... %d violations in all", seed, len(vs))
				break
			}
			t.Errorf("seed %d: %v", seed, v)
		}
		if why := settled(final, nodes); why != "" {
			t.Errorf("seed %d: tree not settled at the end of the run: %s", seed, why)
		}
	}
}

// TestSeededBugsBreakTheirProperty finds, for each bug, the first seed in
// 1..100 that breaks the property the bug is about, and checks that the
// correct program keeps that property on that seed.
func TestSeededBugsBreakTheirProperty(t *testing.T) {
	cases := []struct{ bug, property string }{
		{"sibling-child", propDisjoint},
		{"root-child", propRootNotChild},
		{"stale-siblings", propStaleSiblings},
		{"no-recovery-timer", propRecovery},
	}
	for _, c := range cases {
		t.Run(c.bug, func(t *testing.T) {
			for seed := uint64(1); seed <= 100; seed++ {
				vs, _ := run(t, c.bug, seed, c.property)
				i := slices.IndexFunc(vs, func(v violation) bool { return v.property == c.property })
				if i < 0 {
					continue
				}
				t.Logf("seed %d: %v", seed, vs[i])
				if ok, _ := run(t, "none", seed, c.property); len(ok) > 0 {
					t.Errorf("seed %d: the correct program breaks it too: %v", seed, ok[0])
				}
				return
			}
			t.Errorf("no seed in 1..100 breaks %s", c.property)
		})
	}
}

// TestSameSeedSameTrace guards the handlers' determinism (no map order, no
// global randomness): two runs of one seed must record identical bytes.
func TestSameSeedSameTrace(t *testing.T) {
	trace := func() []byte {
		cfg := sim.DefaultConfig()
		cfg.Seed, cfg.Bug = 7, "none"
		cfg = cfg.WithDefaults(System)
		var b bytes.Buffer
		if _, err := sim.Run(System, cfg, &b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	if !bytes.Equal(trace(), trace()) {
		t.Fatal("two runs of seed 7 recorded different traces")
	}
}
