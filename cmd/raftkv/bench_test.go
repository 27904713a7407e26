package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/live"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

var benchRounds = flag.Int("rounds", 5, "BenchmarkRecordingOverhead: rounds of (plain, recording) runs")

// BenchmarkRecordingOverhead measures what -tags record costs a raftkv
// cluster: the same write workload against a cluster built without and
// one built with the tag, alternating run by run (the order flips every
// round) so that both see the same machine. Run it with
//
//	go test ./cmd/raftkv -run '^$' -bench RecordingOverhead -benchtime 1x [-rounds 5]
//
// It reports the median write throughput of each build, the median of the
// rounds' throughput ratios (recording / plain), and the trace bytes per
// event and per write of the recording build. Throughput on a shared
// machine is noisy; the CPU time the node processes used per write (user +
// system, from the OS) is the steadier measure of what recording costs.
func BenchmarkRecordingOverhead(b *testing.B) {
	dir := b.TempDir()
	bins := map[bool]string{
		false: buildBinary(b, dir, "raftkv-plain", "."),
		true:  buildBinary(b, dir, "raftkv-record", ".", "record"),
	}
	w := workload{writers: 64, perWriter: 200, keysPerWriter: 50}
	warm := workload{writers: 8, perWriter: 25, keysPerWriter: 25}
	for b.Loop() {
		var rates = map[bool][]float64{}
		var ratios []float64 // per round: recording / plain
		var cpu = map[bool]time.Duration{}
		var rounds []string
		var bytes, events, writes int64
		for round := range *benchRounds {
			order := []bool{false, true}
			if round%2 == 1 {
				order = []bool{true, false}
			}
			for _, rec := range order {
				run := filepath.Join(dir, fmt.Sprintf("run-%d-%v", round, rec))
				if err := os.MkdirAll(run, 0o755); err != nil {
					b.Fatal(err)
				}
				c := newProcCluster(b, bins[rec], run, 3, rec)
				for _, id := range c.ids {
					c.start(id)
				}
				leader := c.waitLeader(c.ids...)
				toLeader := func(int, int) string { return leader }
				c.drive(warm, toLeader, nil)
				res := c.drive(w, toLeader, nil)
				rate := float64(w.total()) / res.elapsed.Seconds()
				rates[rec] = append(rates[rec], rate)
				for _, id := range c.ids {
					c.stop(id)
				}
				cpu[rec] += c.cpu
				if rec {
					for _, id := range c.ids {
						f, err := record.ReadFile(filepath.Join(c.traceDir, live.TraceFileName(node.ID(id))))
						if err != nil || f.Damage != nil {
							b.Fatalf("trace of node %s: %v %v", id, err, f.Damage)
						}
						bytes += f.Size
						events += int64(len(f.Events))
					}
					writes += int64(warm.total() + w.total())
				}
			}
			ratios = append(ratios, rates[true][round]/rates[false][round])
			rounds = append(rounds, fmt.Sprintf("round %d: plain %.0f, recording %.0f writes/s (ratio %.3f)",
				round, rates[false][round], rates[true][round], ratios[round]))
		}
		perWrite := func(rec bool) float64 {
			return float64(cpu[rec].Microseconds()) / float64(*benchRounds*(warm.total()+w.total()))
		}
		plain, recd := median(rates[false]), median(rates[true])
		b.ReportMetric(plain, "plain-writes/s")
		b.ReportMetric(recd, "record-writes/s")
		b.ReportMetric(median(ratios), "throughput-ratio")
		b.ReportMetric(perWrite(false), "plain-cpu-µs/write")
		b.ReportMetric(perWrite(true), "record-cpu-µs/write")
		b.Logf("%s\nmedian throughput: plain %.0f, recording %.0f writes/s; median ratio %.3f\nCPU of the 3 processes per write: plain %.0f µs, recording %.0f µs (ratio %.3f)",
			strings.Join(rounds, "\n"), plain, recd, median(ratios), perWrite(false), perWrite(true), perWrite(true)/perWrite(false))
		b.ReportMetric(float64(bytes)/float64(events), "trace-B/event")
		b.ReportMetric(float64(bytes)/float64(writes), "trace-B/write")
		b.ReportMetric(float64(events)/float64(writes), "events/write")
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
