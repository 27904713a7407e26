package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/live"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

var (
	loadFor = flag.Duration("load-for", 30*time.Second, "BenchmarkRecordUnderLoad: how long the clients write")
	loadOut = flag.String("load-out", "", "BenchmarkRecordUnderLoad: copy the traces into this folder")
)

// BenchmarkRecordUnderLoad records a 3-process cluster (built with -tags
// record) under a steady write load for --load-for: 16 clients writing to
// the leader, each pausing 18 ms between writes, which on the 2-core
// machine gives about 6,500 events/s. It reports the events and writes
// recorded; with --load-out the traces are kept, for measuring how long
// checking a recording takes against the time it recorded:
//
//	go test ./cmd/raftkv -run '^$' -bench RecordUnderLoad -benchtime 1x -load-out /tmp/rk
//	replay check /tmp/rk/1.lz4 /tmp/rk/2.lz4 /tmp/rk/3.lz4 scripts/raft.star
func BenchmarkRecordUnderLoad(b *testing.B) {
	dir := b.TempDir()
	bin := buildBinary(b, dir, "raftkv-record", ".", "record")
	for b.Loop() {
		run := filepath.Join(dir, "run")
		os.RemoveAll(run)
		if err := os.MkdirAll(run, 0o755); err != nil {
			b.Fatal(err)
		}
		c := newProcCluster(b, bin, run, 3, true)
		for _, id := range c.ids {
			c.start(id)
		}
		leader := c.waitLeader(c.ids...)
		start := time.Now()
		var writes atomic.Int64
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; time.Since(start) < *loadFor; i++ {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					_, _, err := c.put(ctx, leader, fmt.Sprintf("w%02d-k%03d", w, i%50), fmt.Sprint(i))
					cancel()
					if err == nil {
						writes.Add(1)
					}
					time.Sleep(18 * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		wall := time.Since(start)
		for _, id := range c.ids {
			c.stop(id)
		}
		events := 0
		for _, id := range c.ids {
			name := live.TraceFileName(node.ID(id))
			f, err := record.ReadFile(filepath.Join(c.traceDir, name))
			if err != nil || f.Damage != nil {
				b.Fatalf("trace of node %s: %v %v", id, err, f.Damage)
			}
			events += len(f.Events)
			if *loadOut != "" {
				if err := os.MkdirAll(*loadOut, 0o755); err != nil {
					b.Fatal(err)
				}
				data, err := os.ReadFile(filepath.Join(c.traceDir, name))
				if err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(*loadOut, name), data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(events), "events")
		b.ReportMetric(float64(writes.Load()), "writes")
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.Logf("%d events, %d writes in %v", events, writes.Load(), wall.Round(time.Millisecond))
	}
	b.ReportMetric(0, "ns/op")
}
