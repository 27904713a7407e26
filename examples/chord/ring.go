package chord

import (
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
)

// hashKey places a name on a ring of 2^bits positions: the top bits of its
// SHA-1, as Chord places an address.
func hashKey(name string, bits int) int {
	sum := sha1.Sum([]byte(name))
	return int(binary.BigEndian.Uint64(sum[:8]) >> (64 - bits))
}

// Positions is every node's ring position: one table per run, shared by
// every node (system.Config.Shared) and by every copy of a node (it is
// declared opaque to package state), since it never changes. Copied per
// node, a checkpoint of 10,000 nodes held 10⁸ entries.
type Positions struct{ m map[node.ID]int }

// Of is id's position, if id is a node of the run.
func (p *Positions) Of(id node.ID) (int, bool) {
	k, ok := p.m[id]
	return k, ok
}

func init() { state.Opaque(reflect.TypeFor[*Positions]()) }

// ringPositions gives every node of the run its ring position. Nodes are
// placed in sorted order and a node whose hash is taken moves to the next
// free position, so positions are unique and every node computes the same
// map.
func ringPositions(nodes []node.ID, bits int) map[node.ID]int {
	size := 1 << bits
	if err := fits(len(nodes), bits); err != nil {
		panic(err.Error()) // Validate refuses such runs; a hostile trace header can still ask
	}
	sorted := slices.Clone(nodes)
	slices.Sort(sorted)
	taken := map[int]bool{}
	pos := make(map[node.ID]int, len(sorted))
	for _, id := range sorted {
		k := hashKey(string(id), bits)
		for taken[k] {
			k = (k + 1) % size
		}
		taken[k] = true
		pos[id] = k
	}
	return pos
}

// fits reports a ring of 2^bits positions too small for n nodes: the
// position search would never end.
func fits(n, bits int) error {
	if n <= 1<<bits {
		return nil
	}
	need := bits
	for 1<<need < n {
		need++
	}
	return fmt.Errorf("chord: %d nodes need at least %d ring positions, the ring has %d (2^%d); use --param bits=%d or more", n, n, 1<<bits, bits, need)
}

// ring does interval arithmetic on a ring of size positions.
type ring struct{ size int }

// dist is the clockwise distance from a to b.
func (r ring) dist(a, b int) int { return ((b-a)%r.size + r.size) % r.size }

// between reports whether x lies in the open interval (a, b) going
// clockwise. (a, a) is the whole ring but a: that is what a node alone on
// the ring needs when it asks whether a newcomer lies between itself and
// its successor (itself).
func (r ring) between(x, a, b int) bool {
	if a == b {
		return x != a
	}
	return x != a && r.dist(a, x) < r.dist(a, b)
}

// upTo reports whether x lies in the half-open interval (a, b]; (a, a] is
// the whole ring.
func (r ring) upTo(x, a, b int) bool {
	return x == b || r.between(x, a, b)
}
