package sim

import "github.com/replaycheck/replaycheck/node"

type itemKind uint8

const (
	itemInit itemKind = iota + 1
	itemDeliver
	itemTimer
	itemInput
	itemCrash
	itemRestart
	itemCall
	itemTask // resume a runnable task
)

// item is one scheduled happening. Items at the same virtual time run in
// the order they were scheduled, which keeps runs deterministic.
type item struct {
	at          int64 // when it runs (a message: the earliest it may arrive)
	latest      int64 // a message: the latest it may arrive; else at
	seq         uint64
	index       int // in the queue's heap; -1 once popped
	kind        itemKind
	to          node.ID
	incarnation int
	ev          node.Event // inputs of deliver, timer and input items
	fn          func()
	// A restart churn or a chooser planned (not the scenario's) runs
	// only if the scenario has not crashed the node since: held is its
	// count of the scenario's crashes when planned (simNode.held).
	planned bool
	held    int
	// scripted: a crash or restart the scenario asked for.
	scripted bool
}

// queue is a 4-ary min-heap of items by (at, seq), with each item's key
// copied beside its pointer: comparing two entries reads the heap's own
// array, not two items scattered over the heap. With 10,000 chord nodes
// (a queue of tens of thousands of timers and messages), chasing the
// pointers of a binary heap of items cost an eighth of a simulation. The
// order items leave in depends only on the keys, which are unique (seq),
// never on the layout: a run is the same with any heap.
type queue []slot

type slot struct {
	at  int64
	seq uint64
	it  *item
}

func (a slot) before(b slot) bool { return a.at < b.at || a.at == b.at && a.seq < b.seq }

func (q queue) Len() int { return len(q) }

// first is the earliest item; the queue must not be empty.
func (q queue) first() *item { return q[0].it }

func (q *queue) push(it *item) {
	*q = append(*q, slot{it.at, it.seq, it})
	q.up(len(*q) - 1)
}

// pop removes and returns the earliest item.
func (q *queue) pop() *item { return q.remove(0) }

// remove takes out the item at index i of the heap.
func (q *queue) remove(i int) *item {
	h := *q
	it := h[i].it
	last := len(h) - 1
	if i != last {
		h[i] = h[last]
		h[i].it.index = i
	}
	h[last] = slot{}
	*q = h[:last]
	if i != last {
		if !q.down(i) {
			q.up(i)
		}
	}
	it.index = -1
	return it
}

func (q queue) up(i int) {
	s := q[i]
	for i > 0 {
		p := (i - 1) / 4
		if !s.before(q[p]) {
			break
		}
		q[i] = q[p]
		q[i].it.index = i
		i = p
	}
	q[i] = s
	s.it.index = i
}

// down sifts the entry at i towards the leaves; it reports whether it
// moved.
func (q queue) down(i int) bool {
	s, start, n := q[i], i, len(q)
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for k := c + 1; k < c+4 && k < n; k++ {
			if q[k].before(q[m]) {
				m = k
			}
		}
		if !q[m].before(s) {
			break
		}
		q[i] = q[m]
		q[i].it.index = i
		i = m
	}
	q[i] = s
	s.it.index = i
	return i > start
}

// ascend hands fn the queue's items in (at, seq) order from the earliest
// until fn returns false. It looks only at what it hands over and at
// their children in the heap (frontier is scratch space kept between
// calls), so a chooser that wants the first few items does not pay for
// the whole queue.
func (q queue) ascend(frontier *[]int, fn func(it *item) bool) {
	f := (*frontier)[:0]
	defer func() { *frontier = f[:0] }()
	if len(q) == 0 {
		return
	}
	f = append(f, 0)
	less := func(a, b int) bool { return q[f[a]].before(q[f[b]]) }
	for len(f) > 0 {
		// Pop the frontier's earliest (a binary heap of queue indexes).
		i := f[0]
		last := len(f) - 1
		f[0] = f[last]
		f = f[:last]
		for j := 0; ; {
			c := 2*j + 1
			if c >= len(f) {
				break
			}
			if c+1 < len(f) && less(c+1, c) {
				c++
			}
			if !less(c, j) {
				break
			}
			f[j], f[c] = f[c], f[j]
			j = c
		}
		if !fn(q[i].it) {
			return
		}
		for c := 4*i + 1; c <= 4*i+4 && c < len(q); c++ {
			f = append(f, c)
			for j := len(f) - 1; j > 0; {
				p := (j - 1) / 2
				if !less(j, p) {
					break
				}
				f[j], f[p] = f[p], f[j]
				j = p
			}
		}
	}
}
