// Package ahead runs a producer on its own goroutine a few batches ahead
// of a consumer, so that two halves of a sequential job (decoding a file
// and indexing what it holds, say) take about the longer of the two
// instead of their sum, while the consumer still sees every item in the
// producer's order, on the caller's goroutine.
package ahead

// batches is how many batches exist: one being filled, one being
// consumed, one waiting between them.
const batches = 3

// Writer is the producer's end of a Pipe: it fills Slot, then Commits it.
type Writer[T any] struct {
	cur  []T // the batch being filled: len is the batch size
	n    int // slots of cur committed
	full chan []T
	free chan []T
	stop chan struct{}
}

// Slot is the item to fill next; it stays the same until Commit. Slots
// are reused once consumed: fill every field.
func (w *Writer[T]) Slot() *T { return &w.cur[w.n] }

// Commit hands the filled slot on. It reports false once the consumer
// has stopped: the producer should then return (what it returns is not
// looked at).
func (w *Writer[T]) Commit() bool {
	w.n++
	if w.n < len(w.cur) {
		return true
	}
	return w.send() && w.next()
}

// Flush hands the slots committed so far on at once, without waiting for
// the batch to fill: a producer whose items vary much in size (events
// with huge payloads) bounds the memory in flight by calling it after a
// large one. It reports false once the consumer has stopped.
func (w *Writer[T]) Flush() bool {
	if w.n == 0 {
		return !w.stopped()
	}
	return w.send() && w.next()
}

func (w *Writer[T]) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// send hands over the committed part of the batch being filled.
func (w *Writer[T]) send() bool {
	if w.stopped() { // a select with other cases ready may pick any
		return false
	}
	select {
	case w.full <- w.cur[:w.n]:
		return !w.stopped()
	case <-w.stop:
		return false
	}
}

// next takes an empty batch to fill.
func (w *Writer[T]) next() bool {
	select {
	case b := <-w.free:
		w.cur, w.n = b, 0
		return true
	case <-w.stop:
		return false
	}
}

// Pipe runs produce on a new goroutine and hands each slot it commits,
// in order, to consume on the caller's goroutine, size slots at a time.
// A consume error stops the producer at its next batch and is returned;
// otherwise Pipe returns produce's error once every slot committed
// before it has been consumed. Pipe returns only after produce has: what
// produce wrote outside its slots is then the caller's to read.
func Pipe[T any](size int, produce func(w *Writer[T]) error, consume func(*T) error) error {
	w := &Writer[T]{cur: make([]T, size), full: make(chan []T, 1), free: make(chan []T, batches), stop: make(chan struct{})}
	for range batches - 1 {
		w.free <- make([]T, size)
	}
	var perr error
	go func() {
		defer close(w.full)
		perr = produce(w)
		if w.n > 0 {
			w.send() // the last batch, partly filled
		}
	}()
	var cerr error
	for b := range w.full {
		for i := range b {
			if cerr != nil {
				break
			}
			if cerr = consume(&b[i]); cerr != nil {
				close(w.stop)
			}
		}
		if cerr == nil {
			// Consumed slots hold on to nothing (an event's payload,
			// say) until they are filled again.
			clear(b)
			w.free <- b[:cap(b)]
		}
	}
	if cerr != nil {
		return cerr
	}
	return perr
}
