package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// workload is a write load: writers concurrent clients, each writing
// perWriter times over its own keysPerWriter keys, so that each key's
// final value is its writer's last acknowledged write.
type workload struct {
	writers, perWriter, keysPerWriter int
}

func (w workload) total() int { return w.writers * w.perWriter }

func (w workload) key(writer, i int) string {
	return fmt.Sprintf("w%02d-k%03d", writer, i%w.keysPerWriter)
}

func (w workload) value(writer, i int) string { return fmt.Sprintf("w%02d-%05d", writer, i) }

// workResult is what the clients saw.
type workResult struct {
	final    map[string]string // key -> last acknowledged value
	acked    map[string]int    // node -> writes it acknowledged
	answered map[string]int    // node -> PUTs it answered at all
	elapsed  time.Duration
}

// drive runs the workload; target picks the node for a writer's next
// attempt. A write that is not acknowledged is retried (at the next
// target) until it is, for at most 30 s. progress is told the number of
// acknowledged writes after each one.
func (c *procCluster) drive(w workload, target func(writer, attempt int) string, progress func(done int64)) workResult {
	c.t.Helper()
	res := workResult{final: map[string]string{}, acked: map[string]int{}, answered: map[string]int{}}
	var mu sync.Mutex
	var done atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for wr := range w.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			attempt := 0
			for i := range w.perWriter {
				key, value := w.key(wr, i), w.value(wr, i)
				deadline := time.Now().Add(30 * time.Second)
				for {
					id := target(wr, attempt)
					attempt++
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					status, retry, err := c.put(ctx, id, key, value)
					cancel()
					mu.Lock()
					if status != 0 {
						res.answered[id]++
					}
					if err == nil {
						res.acked[id]++
						res.final[key] = value
					}
					mu.Unlock()
					if err == nil {
						break
					}
					if !retry || time.Now().After(deadline) {
						failed.CompareAndSwap(nil, fmt.Errorf("writer %d write %d: %w", wr, i, err))
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
				n := done.Add(1)
				if progress != nil {
					progress(n)
				}
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		c.t.Fatal(err)
	}
	return res
}
