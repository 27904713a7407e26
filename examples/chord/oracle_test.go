package chord

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
)

// The oracle watches a simulated run through sim's Observe hook and checks,
// in Go, the properties scripts/chord.star states, over the state of every
// running node after every event. It proves the seeded bugs real before
// the predicate engine exists; the official check is the script.

// alarmAfter is the stability threshold of the liveness properties, as in
// scripts/chord.star: a property still violated when the population has
// not changed for this long is an alarm.
const alarmAfter = 2 * time.Second

// population is every running node that has not left, in ring order: the
// nodes that should form the ring. It changes only with crashes, restarts
// and departures, never with a node dropping out of the ring.
func population(nodes map[node.ID]*Node) []*Node {
	var ps []*Node
	for _, n := range nodes {
		if !n.Left {
			ps = append(ps, n)
		}
	}
	slices.SortFunc(ps, func(a, b *Node) int { return a.Key - b.Key })
	return ps
}

// members are the population's ring members.
func members(pop []*Node) []*Node {
	return slices.DeleteFunc(slices.Clone(pop), func(n *Node) bool { return !n.Joined })
}

func idSet(ns []*Node) string {
	ids := make([]string, len(ns))
	for i, m := range ns {
		ids[i] = string(m.Self)
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

// ringConsistent: every node of the population is a member, and its
// predecessor is a member whose successor is that node. It returns why
// not, or "".
func ringConsistent(pop []*Node) string {
	byID := map[node.ID]*Node{}
	for _, n := range pop {
		byID[n.Self] = n
	}
	for _, n := range pop {
		if !n.Joined {
			return fmt.Sprintf("%s has not joined", n.Self)
		}
		p, ok := byID[n.Pred]
		if !ok || !p.Joined {
			return fmt.Sprintf("%s: predecessor %q is not a member", n.Self, n.Pred)
		}
		if p.Succs[0] != n.Self {
			return fmt.Sprintf("%s: predecessor %s has successor %s", n.Self, p.Self, p.Succs[0])
		}
	}
	return ""
}

// successorOf is the first of ms (in ring order) at or after key.
func successorOf(ms []*Node, key int) node.ID {
	for _, m := range ms {
		if m.Key >= key {
			return m.Self
		}
	}
	return ms[0].Self
}

// fingersCorrect: every member's every finger is the first member at or
// after its start.
func fingersCorrect(pop []*Node) string {
	ms := members(pop)
	for _, m := range ms {
		for i, f := range m.Fingers {
			if want := successorOf(ms, f.Start); f.Node != want {
				return fmt.Sprintf("%s: finger %d (start %d) is %s, want %s", m.Self, i, f.Start, f.Node, want)
			}
		}
	}
	return ""
}

// predSelfViolation: a node whose predecessor is itself has itself as
// successor.
func predSelfViolation(nodes map[node.ID]*Node) string {
	for _, id := range slices.Sorted(maps.Keys(nodes)) {
		n := nodes[id]
		if n.Pred == n.Self && n.Succs[0] != n.Self {
			return fmt.Sprintf("%s: pred = self, successors %v", n.Self, n.Succs)
		}
	}
	return ""
}

// orderViolation: a member's successor does not lie strictly between its
// predecessor and itself (its pointers do not cross).
func orderViolation(nodes map[node.ID]*Node) string {
	for _, id := range slices.Sorted(maps.Keys(nodes)) {
		n := nodes[id]
		if !n.Joined || n.Pred == "" || n.Pred == n.Self {
			continue
		}
		r := ring{size: n.RingSize}
		if k, ok := n.Ring.Of(n.Succs[0]); ok && r.between(k, func() int { k, _ := n.Ring.Of(n.Pred); return k }(), n.Key) {
			return fmt.Sprintf("%s: successor %s lies between predecessor %s and the node", n.Self, n.Succs[0], n.Pred)
		}
	}
	return ""
}

// report is what the oracle saw in one run. Times are virtual times since
// the start of the run (the oracle sees events in dispatch order, not in
// the causal order replay numbers steps by, so it reports times).
type report struct {
	steps int
	// Safety violations: the first one, and when.
	predSelf, order     string
	predSelfAt, orderAt time.Duration
	// Liveness: the longest the population had been unchanged at a step
	// where the property was violated (the alarm measure), and an example.
	ringStable, fingerStable time.Duration
	ringWhy, fingerWhy       string
	// Fingers that were correct and became incorrect while the ring was
	// consistent and the population unchanged (oscillation), and the first.
	fingerRegressions int
	regression        string
	// Restarts of nodes that had been members, and how many of them were
	// members again within a second without crashing in between.
	restarts, rejoined int
	// At the end of the run.
	ringEnd, fingerEnd string
	members            int
}

// observe runs one simulation and watches it.
func observe(bug string, seed uint64, tweak func(*sim.Config)) (*report, error) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug, cfg.NoStateHashes = seed, bug, true
	if tweak != nil {
		tweak(&cfg)
	}
	cfg = cfg.WithDefaults(System)
	nodes := map[node.ID]*Node{}
	rep := &report{}
	var (
		lastPop     string
		popSince    time.Duration
		prevCorrect map[string]bool
		restartedAt = map[node.ID]time.Duration{} // restarted members not yet rejoined
	)
	cfg.Observe = func(ev *node.Event, in *node.Instance) error {
		now := time.Duration(ev.Time - sim.Epoch)
		id := in.ID()
		if h, ok := in.Handler().(*Node); ok && in.Up() {
			nodes[id] = h
			// The predicates read the derived keys instead of the hidden
			// Ring: they must agree with it after every event.
			pk, sk := -1, -1
			if k, ok := h.Ring.Of(h.Pred); ok {
				pk = k
			}
			if k, ok := h.Ring.Of(h.Succs[0]); ok {
				sk = k
			}
			if h.PredKey != pk || h.SuccKey != sk {
				return fmt.Errorf("%s after %v: PredKey %d SuccKey %d, Ring says %d %d", id, ev.Kind, h.PredKey, h.SuccKey, pk, sk)
			}
		} else {
			delete(nodes, id)
		}
		switch ev.Kind {
		case node.KindRestart:
			if _, member := in.Store().Get(diskMember); member {
				rep.restarts++
				restartedAt[id] = now
			}
		case node.KindCrash:
			delete(restartedAt, id)
		}
		for _, rid := range slices.Sorted(maps.Keys(restartedAt)) {
			if n := nodes[rid]; n != nil && n.Joined && now-restartedAt[rid] <= time.Second {
				rep.rejoined++
				delete(restartedAt, rid)
			}
		}

		if rep.predSelf == "" {
			if v := predSelfViolation(nodes); v != "" {
				rep.predSelf, rep.predSelfAt = v, now
			}
		}
		if rep.order == "" {
			if v := orderViolation(nodes); v != "" {
				rep.order, rep.orderAt = v, now
			}
		}

		pop := population(nodes)
		if set := idSet(pop); set != lastPop {
			lastPop, popSince = set, now
			prevCorrect = nil
		}
		if len(pop) == 0 {
			return nil
		}
		stable := now - popSince
		ringWhy := ringConsistent(pop)
		if ringWhy != "" && stable > rep.ringStable {
			rep.ringStable, rep.ringWhy = stable, ringWhy
		}
		if why := fingersCorrect(pop); why != "" && stable > rep.fingerStable {
			rep.fingerStable, rep.fingerWhy = stable, why
		}
		if ringWhy != "" {
			prevCorrect = nil
			return nil
		}
		correct := map[string]bool{}
		for _, m := range pop {
			for i, f := range m.Fingers {
				want := successorOf(pop, f.Start)
				k := fmt.Sprintf("%s/%d", m.Self, i)
				correct[k] = f.Node == want
				if f.Node != want && prevCorrect[k] {
					rep.fingerRegressions++
					if rep.regression == "" {
						rep.regression = fmt.Sprintf("at %v %s finger %d (start %d) went from %s to %s",
							now, m.Self, i, f.Start, want, f.Node)
					}
				}
			}
		}
		prevCorrect = correct
		return nil
	}
	res, err := sim.Run(System, cfg, io.Discard)
	if err != nil {
		return nil, err
	}
	rep.steps = res.Steps
	pop := population(nodes)
	rep.members = len(members(pop))
	if len(pop) > 0 {
		rep.ringEnd, rep.fingerEnd = ringConsistent(pop), fingersCorrect(pop)
	}
	return rep, nil
}
