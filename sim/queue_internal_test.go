package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The queue gives items back in (at, seq) order whatever mix of pushes,
// pops and removals built it, and every item knows its place: remove
// takes out exactly the item named by its index.
func TestQueueOrderAndIndexes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q queue
	var live []*item // what the queue should hold
	seq := uint64(0)
	check := func(step int) {
		t.Helper()
		if len(q) != len(live) {
			t.Fatalf("step %d: queue holds %d items, want %d", step, len(q), len(live))
		}
		for i, s := range q {
			if s.it.index != i {
				t.Fatalf("step %d: item at %d says it is at %d", step, i, s.it.index)
			}
			if s.at != s.it.at || s.seq != s.it.seq {
				t.Fatalf("step %d: slot %d keys (%d, %d), item (%d, %d)", step, i, s.at, s.seq, s.it.at, s.it.seq)
			}
			if i > 0 && s.before(q[(i-1)/4]) {
				t.Fatalf("step %d: slot %d is before its parent", step, i)
			}
		}
	}
	earliest := func() int {
		return slices.IndexFunc(live, func(it *item) bool {
			for _, o := range live {
				if o.at < it.at || o.at == it.at && o.seq < it.seq {
					return false
				}
			}
			return true
		})
	}
	for step := range 20000 {
		switch r := rng.IntN(10); {
		case r < 5 || len(live) == 0:
			seq++
			// Few distinct times, so that ties fall to seq.
			it := &item{at: int64(rng.IntN(50)), seq: seq}
			q.push(it)
			live = append(live, it)
		case r < 8:
			want := live[earliest()]
			if got := q.pop(); got != want {
				t.Fatalf("step %d: popped (%d, %d), want (%d, %d)", step, got.at, got.seq, want.at, want.seq)
			}
			if want.index != -1 {
				t.Fatalf("step %d: a popped item keeps index %d", step, want.index)
			}
			live = slices.DeleteFunc(live, func(it *item) bool { return it == want })
		default:
			k := rng.IntN(len(live))
			it := live[k]
			if got := q.remove(it.index); got != it {
				t.Fatalf("step %d: removing at %d took another item", step, it.index)
			}
			live = slices.Delete(live, k, k+1)
		}
		check(step)
	}
}

// ascend hands the items over in (at, seq) order, stops when told, and
// looks at few more items than it hands over.
func TestQueueAscends(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var q queue
	var frontier []int
	for seq := range uint64(5000) {
		q.push(&item{at: int64(rng.IntN(300)), seq: seq + 1})
	}
	for k := 0; k < 3000; k += 97 {
		var got []*item
		q.ascend(&frontier, func(it *item) bool {
			if len(got) == k {
				return false
			}
			got = append(got, it)
			return true
		})
		if len(got) != k {
			t.Fatalf("asked for %d items, got %d", k, len(got))
		}
		for i := 1; i < len(got); i++ {
			a, b := got[i-1], got[i]
			if !(a.at < b.at || a.at == b.at && a.seq < b.seq) {
				t.Fatalf("item %d (%d, %d) after (%d, %d)", i, b.at, b.seq, a.at, a.seq)
			}
		}
		// The first k are the k earliest: popping gives the same.
		c := slices.Clone(q)
		for i := range k {
			if it := c.pop(); it != got[i] {
				t.Fatalf("ascend's item %d is not the %d-th earliest", i, i)
			}
		}
		for _, s := range q { // pop cleared the indexes of the clone's items
			s.it.index = slices.Index(q, s)
		}
	}
}

// The scenario calls are kept apart for Choice.Due: whatever leaves the
// queue (popped earliest, or taken out of the middle), the earliest call
// still queued is the first of calls.
func TestCallsFollowTheQueue(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := &Sim{}
	for step := range 20000 {
		switch r := rng.IntN(10); {
		case r < 5 || s.queue.Len() == 0:
			kind := itemDeliver
			if rng.IntN(2) == 0 {
				kind = itemCall
			}
			s.push(&item{at: int64(rng.IntN(50)), kind: kind})
		case r < 8:
			s.unqueue(s.queue.pop())
		default:
			s.unqueue(s.queue.remove(rng.IntN(s.queue.Len())))
		}
		var want *item
		for _, sl := range s.queue {
			if it := sl.it; it.kind == itemCall && (want == nil || it.at < want.at || it.at == want.at && it.seq < want.seq) {
				want = it
			}
		}
		switch {
		case want == nil && len(s.calls) > 0:
			t.Fatalf("step %d: no call queued, but calls holds %d", step, len(s.calls))
		case want != nil && (len(s.calls) == 0 || s.calls[0] != want):
			t.Fatalf("step %d: the earliest call is (%d, %d), calls does not start with it", step, want.at, want.seq)
		}
	}
}
