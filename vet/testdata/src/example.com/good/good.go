// Package good holds a handler that does everything the right way, and
// constructs that look like the bad ones but are not: no findings.
package good

import (
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/replaycheck/replaycheck/node"
)

type Node struct {
	Votes   map[node.ID]int
	Order   []node.ID
	Started time.Time
	rng     *rand.Rand
	Total   int
}

func (n *Node) Init(env node.Env) { // want Init:`reaches\(effects\)`
	n.Started = env.Now()
	env.After(time.Second, "tick")
	n.rng = rand.New(rand.NewPCG(1, 2)) // a constructor with a fixed seed draws nothing
}

func (n *Node) Receive(env node.Env, from node.ID, m node.Message) { // want Receive:`reaches\(effects\)`
	if env.Rand().IntN(2) == 0 {
		env.Send(from, "pong")
	}
	_ = env.Now().Sub(n.Started) // time.Time methods compute
	d := 3 * time.Second         // durations are values
	_ = d.String()
	// Sorted keys: the range is over a slice.
	for _, id := range slices.Sorted(maps.Keys(n.Votes)) {
		env.Send(id, "vote")
	}
	// Summing and writing into another map do not depend on the order.
	n.Total = 0
	seen := map[node.ID]bool{}
	for id, v := range n.Votes {
		n.Total += v
		seen[id] = true
	}
	// An existence check returns a constant, not a key.
	_ = n.any()
	// Collected and then sorted, the classic way.
	keys := make([]string, 0, len(n.Votes))
	for id := range n.Votes {
		keys = append(keys, string(id))
	}
	sort.Strings(keys)
	// Sorted in reverse through the sort.Interface wrappers.
	desc := make([]string, 0, len(n.Votes))
	for id := range n.Votes {
		desc = append(desc, string(id))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(desc)))
	// A slice local to the loop body does not outlive the iteration.
	for id := range n.Votes {
		var parts []string
		parts = append(parts, string(id))
		_ = parts
	}
	_ = n.rng.IntN(3) // a method on a generator the handler owns
}

func (n *Node) Timer(env node.Env, t node.Timer) { // want Timer:`reaches\(effects\)`
	n.Order = n.Order[:0]
	n.armIfAny(env)
	n.announceIfAny(env)
	n.armIfOld(env)
	n.armPastAGuard(env)
	n.retryWithJitter(env)
	for _, p := range env.Peers() { // a slice: its order is fixed
		n.Order = append(n.Order, p)
	}
	now := time.Now() //replay:ok a suppressed finding, with a reason
	_ = now
	//replay:ok the line above counts too
	go func() {}()
}

func (n *Node) any() bool {
	for _, v := range n.Votes {
		if v > 3 {
			return true
		}
	}
	return false
}

// Tool is not a handler: its goroutines are its own business.
type Tool struct{}

func (Tool) Run() { // want Run:`reaches\(goroutine:go statement,clock:time.Now\)`
	go func() {}()
	_ = time.Now()
}

// armIfAny sets the one inquiry timer when any vote qualifies: the same
// timer, once, whichever qualifying entry the map yields first.
func (n *Node) armIfAny(env node.Env) { // want armIfAny:`reaches\(effects\)`
	for _, v := range n.Votes {
		if v > 3 {
			if n.Total == 0 {
				n.Total = 1
				env.After(time.Second, "inquire")
			}
			return
		}
	}
}

// announceIfAny does the same through a method of its own, in a loop
// that writes nothing outside an entry's pass.
func (n *Node) announceIfAny(env node.Env) { // want announceIfAny:`reaches\(effects\)`
	for id, v := range n.Votes {
		big := v > 3 && id != ""
		if big {
			n.announce(env)
			break
		}
	}
}

func (n *Node) announce(env node.Env) { // want announce:`reaches\(effects\)`
	env.Send("n1", "some vote is large")
}

// Time arithmetic in the condition, and a guard that skips entries: the
// same one timer whichever old entry comes first (a new user's loops).
func (n *Node) armIfOld(env node.Env) { // want armIfOld:`reaches\(effects\)`
	now := env.Now()
	for _, v := range n.Votes {
		if now.Sub(n.Started.Add(time.Duration(v))) > time.Second {
			env.After(time.Second, "expire")
			return
		}
	}
}

func (n *Node) armPastAGuard(env node.Env) { // want armPastAGuard:`reaches\(effects\)`
	for _, v := range n.Votes {
		if v < 3 {
			continue
		}
		env.After(time.Second, "expire")
		return
	}
}

// One jittered timer: one draw, whichever entry comes first.
func (n *Node) retryWithJitter(env node.Env) { // want retryWithJitter:`reaches\(effects\)`
	for _, v := range n.Votes {
		if v > 3 {
			env.After(time.Duration(env.Rand().IntN(50))*time.Millisecond, "retry")
			return
		}
	}
}
