//go:build record

package live

import (
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

var taskRounds = flag.Int("task-rounds", 5, "BenchmarkTaskRecordingOverhead: rounds of (plain, recording) runs")

// BenchmarkTaskRecordingOverhead: the cost of recording a task-heavy
// workload on the live runtime. The lock service (server and 3 clerks,
// 4 worker tasks each, over TCP on 127.0.0.1, in this process) runs until
// its clerks have completed a fixed number of lock uses, once without a
// recorder and once recording every node, alternating which goes first.
// The workload's pace is set by its real sleeps (hold and think times),
// so the measure is CPU time (user + system, of the whole process, from
// the cluster's start until the target is reached) per lock use; each use is about 18 events (task resumes, messages, the
// timers of sleeps). Recording is without state hashes, as live nodes
// record by default.
//
//	go test -tags record ./live -run '^$' -bench TaskRecordingOverhead -benchtime 1x -task-rounds 7
func BenchmarkTaskRecordingOverhead(b *testing.B) {
	const target = 1000 // lock uses per run, across the clerks
	clerks := []node.ID{"c1", "c2", "c3"}
	cpuNow := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for b.Loop() {
		perUse := map[bool][]float64{}
		var ratios []float64
		var lines []string
		var events, bytes, total int64
		for round := range *taskRounds {
			order := []bool{false, true}
			if round%2 == 1 {
				order = []bool{true, false}
			}
			got := map[bool]float64{}
			for _, rec := range order {
				traces := ""
				if rec {
					traces = b.TempDir()
				}
				nodes := lockCluster(b, len(clerks), traces, false)
				// From the cluster's start to the target: opening and
				// closing the nodes' stores is not the workload.
				cpu0 := cpuNow()
				var done int64
				for done < target {
					time.Sleep(10 * time.Millisecond)
					done = 0
					for _, id := range clerks {
						done += uses(b, nodes[id])
					}
				}
				cpu := cpuNow() - cpu0
				for _, n := range nodes {
					if err := n.Close("bench over"); err != nil {
						b.Fatal(err)
					}
				}
				got[rec] = float64(cpu.Microseconds()) / float64(done)
				perUse[rec] = append(perUse[rec], got[rec])
				if rec {
					total += done
					for id := range nodes {
						f, err := record.ReadFile(filepath.Join(traces, TraceFileName(id)))
						if err != nil {
							b.Fatal(err)
						}
						events += int64(len(f.Events))
						bytes += f.Size
					}
				}
			}
			ratios = append(ratios, got[true]/got[false])
			lines = append(lines, fmt.Sprintf("round %d: plain %.1f µs/use, recording %.1f µs/use (ratio %.3f)", round, got[false], got[true], ratios[round]))
		}
		b.Logf("%s\nmedian CPU per lock use: plain %.1f µs, recording %.1f µs; median ratio %.3f; %.1f events and %.0f trace bytes per use",
			strings.Join(lines, "\n"), median(perUse[false]), median(perUse[true]), median(ratios),
			float64(events)/float64(total), float64(bytes)/float64(total))
		b.ReportMetric(median(perUse[false]), "plain-cpu-µs/use")
		b.ReportMetric(median(perUse[true]), "record-cpu-µs/use")
		b.ReportMetric(median(ratios), "cpu-ratio")
		b.ReportMetric(float64(bytes)/float64(events), "trace-B/event")
		b.ReportMetric(0, "ns/op")
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
