package ahead

import (
	"errors"
	"testing"
)

// produceUpTo commits the numbers 0..n-1, then returns err.
func produceUpTo(n int, err error, committed *int) func(w *Writer[int]) error {
	return func(w *Writer[int]) error {
		for i := range n {
			*w.Slot() = i
			if !w.Commit() {
				return nil
			}
			*committed = i + 1
		}
		return err
	}
}

// Every committed item reaches the consumer once, in order, for sizes
// that divide the count and sizes that do not.
func TestPipeKeepsOrder(t *testing.T) {
	for _, size := range []int{1, 3, 7, 100, 1000} {
		var got []int
		var committed int
		if err := Pipe(size, produceUpTo(1000, nil, &committed), func(v *int) error {
			got = append(got, *v)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1000 {
			t.Fatalf("size %d: consumed %d items, want 1000", size, len(got))
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("size %d: item %d is %d", size, i, v)
			}
		}
	}
}

// A producer's error comes after everything it committed before it.
func TestPipeReturnsTheProducersErrorLast(t *testing.T) {
	bad := errors.New("bad read")
	var got, committed int
	err := Pipe(16, produceUpTo(50, bad, &committed), func(v *int) error {
		if *v != got {
			t.Fatalf("item %d is %d", got, *v)
		}
		got++
		return nil
	})
	if !errors.Is(err, bad) || got != 50 {
		t.Fatalf("consumed %d items, error %v; want 50 and %v", got, err, bad)
	}
}

// A consumer's error is returned, nothing after the failing item is
// consumed, and the producer stops within a few batches instead of
// producing everything.
func TestPipeStopsTheProducerAtAConsumersError(t *testing.T) {
	stop := errors.New("enough")
	var got, committed int
	err := Pipe(10, produceUpTo(1_000_000, nil, &committed), func(v *int) error {
		got++
		if *v == 25 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || got != 26 {
		t.Fatalf("consumed %d items, error %v; want 26 and %v", got, err, stop)
	}
	// Pipe has returned, so the producer has: committed is safe to read.
	if committed > 26+batches*10 {
		t.Fatalf("the producer committed %d items after the consumer stopped at 26", committed)
	}
}

// Flush hands over a part-filled batch: items reach the consumer before
// the batch fills, still once each and in order.
func TestFlushHandsOverAtOnce(t *testing.T) {
	var got []int
	seen := make(chan int, 100)
	err := Pipe(1000, func(w *Writer[int]) error {
		for i := range 10 {
			*w.Slot() = i
			if !w.Commit() || !w.Flush() {
				return nil
			}
			// The consumer has it before the producer goes on past
			// what a batch of 1000 would hold back.
			if v := <-seen; v != i {
				t.Errorf("consumer saw %d after item %d was flushed", v, i)
			}
		}
		return nil
	}, func(v *int) error {
		got = append(got, *v)
		seen <- *v
		return nil
	})
	if err != nil || len(got) != 10 {
		t.Fatalf("consumed %v, error %v", got, err)
	}
}
