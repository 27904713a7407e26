// Package globals holds a handler that writes package-level variables,
// which every node of a simulated or replayed run shares.
package globals

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/replaycheck/replaycheck/node"
)

var (
	nextSeq int
	counts  = map[string]int{}
	hist    [4]int
	reqs    atomic.Int64
	mu      sync.Mutex
	once    sync.Once
	buf     strings.Builder
	table   = []int{1, 2, 3}
	lookup  = map[string]int{"a": 1}
	shared  = &config{}
)

type config struct{ N int }

func (c config) Double() int { return 2 * c.N }

type Node struct {
	Last int
	Cfg  *config
	Seen map[string]int
}

func (n *Node) Init(env node.Env) {}

func (n *Node) Receive(env node.Env, from node.ID, m node.Message) { // want Receive:`reaches\(global:write to the package-level variable nextSeq\)`
	nextSeq++                // want `write to the package-level variable nextSeq: a package-level variable is shared by every node`
	counts[string(from)] = 1 // want `write to the package-level variable counts`
	hist[0] = 2              // want `write to the package-level variable hist`
	reqs.Add(1)              // want `call of reqs.Add, which may change the package-level variable reqs`
	buf.WriteString("x")     // want `call of buf.WriteString`
	// Locks, sync.Once, loads, reads, locals and the handler's own state
	// are fine; a write inside a Once is still a write (//replay:ok it
	// when what it builds is the same in every run).
	mu.Lock()
	once.Do(func() { table = append(table, 4) }) // want `write to the package-level variable table`
	_ = reqs.Load()
	mu.Unlock()
	n.Last = table[0] + lookup["a"] + shared.Double()
	local := 0
	local++
	n.Cfg = shared
	if n.Seen == nil {
		n.Seen = map[string]int{}
	}
	n.Seen[string(from)]++
	_ = local
}

func (n *Node) Timer(env node.Env, t node.Timer) { // want Timer:`reaches\(global:write to the package-level variable nextSeq\)`
	bump()
}

// bump is a helper reached from Timer: its finding says how.
func bump() { // want bump:`reaches\(global:write to the package-level variable nextSeq\)`
	nextSeq += 2 // want `write to the package-level variable nextSeq.*\[in globals.bump, reached from \(\*Node\).Timer\]`
}

// setup runs at startup, not in a handler: its fact says what it does,
// but no handler reaches it, so nothing is reported.
func setup() { nextSeq = 1 } // want setup:`reaches\(global:write to the package-level variable nextSeq\)`

var _ = setup
