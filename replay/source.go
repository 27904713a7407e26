package replay

import (
	"fmt"

	"github.com/replaycheck/replaycheck/node"
)

// recorded serves an event's recorded nondeterministic values back to the
// handler, in order, and aborts the dispatch the moment the handler asks for
// something the recording does not have at that point.
type recorded struct {
	ev   *node.Event
	next int
}

func (s *recorded) reset(ev *node.Event) { s.ev, s.next = ev, 0 }

func describeNondet(n node.Nondet) string {
	switch n.Kind {
	case node.NondetClock:
		return "a clock read (Env.Now)"
	case node.NondetSeed:
		return "a random seed (Env.Rand)"
	case node.NondetDisk:
		return fmt.Sprintf("a disk read of %q", n.Key)
	case node.NondetCrypto:
		return fmt.Sprintf("a %d-byte crypto/rand read", len(n.Bytes))
	}
	return n.Kind.String()
}

// mismatch is a source-level divergence: the handler consumed a different
// nondeterministic value than the recorded run did.
type mismatch struct {
	index    int
	recorded string
	now      string
}

func (m *mismatch) Error() string {
	return fmt.Sprintf("nondeterministic value %d: the handler asked for %s where the recording has %s", m.index, m.now, m.recorded)
}

func (s *recorded) take(kind node.NondetKind, now node.Nondet) node.Nondet {
	now.Kind = kind
	if s.next >= len(s.ev.Nondet) {
		panic(&node.SourceError{Err: &mismatch{index: s.next, recorded: "no more values for this event", now: describeNondet(now)}})
	}
	n := s.ev.Nondet[s.next]
	if n.Kind != kind || (kind == node.NondetDisk && n.Key != now.Key) || (kind == node.NondetCrypto && len(n.Bytes) != len(now.Bytes)) {
		panic(&node.SourceError{Err: &mismatch{index: s.next, recorded: describeNondet(n), now: describeNondet(now)}})
	}
	s.next++
	return n
}

func (s *recorded) Clock() int64 { return s.take(node.NondetClock, node.Nondet{}).Int }
func (s *recorded) Seed() uint64 { return uint64(s.take(node.NondetSeed, node.Nondet{}).Int) }
func (s *recorded) DiskGet(key string) ([]byte, bool) {
	n := s.take(node.NondetDisk, node.Nondet{Key: key})
	return n.Bytes, n.Found
}
func (s *recorded) CryptoRead(p []byte) {
	n := s.take(node.NondetCrypto, node.Nondet{Bytes: p})
	copy(p, n.Bytes)
}

// unconsumed reports values the recording has that the handler did not ask
// for.
func (s *recorded) unconsumed() error {
	if s.next == len(s.ev.Nondet) {
		return nil
	}
	return &mismatch{index: s.next, recorded: describeNondet(s.ev.Nondet[s.next]), now: "nothing more (the handler finished)"}
}
