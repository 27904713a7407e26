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
}

type queue []*item

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *queue) Push(x any) {
	it := x.(*item)
	it.index = len(*q)
	*q = append(*q, it)
}
func (q *queue) Pop() any {
	old := *q
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	it.index = -1
	return it
}
