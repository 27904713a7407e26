package predicates_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/predicates/internal/ring"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

const ringScript = `
Member = table("ring.Member")
def consistent(m):
    s = Member.get(m.Succ)
    return s == None or s.Pred == m.node
liveness("RingConsistent", lambda: forall(Member, consistent))
`

func ringTrace(b *testing.B, nodes, steps int) *replay.Trace {
	cfg := sim.Config{Seed: 1, Nodes: nodes, Steps: steps, Churn: 0, Drop: 0, Dup: 0, NoStateHashes: true}
	var buf bytes.Buffer
	if _, err := sim.Run(ring.System, cfg.WithDefaults(ring.System), &buf); err != nil {
		b.Fatal(err)
	}
	tr, err := replay.FromBytes(buf.Bytes(), "ring.lz4")
	if err != nil {
		b.Fatal(err)
	}
	return tr
}

// steadyCost replays and checks a ring trace, and returns the mean time
// per step of the checker alone (not replay) over the steps after every
// member has started, and the quantifier bodies evaluated per step.
func steadyCost(b *testing.B, tr *replay.Trace, nodes int, script string) (time.Duration, float64) {
	r, err := replay.New(tr, system.NewRegistry(ring.System), replay.Options{})
	if err != nil {
		b.Fatal(err)
	}
	c, err := predicates.Load(script, r, predicates.Options{To: -1})
	if err != nil {
		b.Fatal(err)
	}
	var spent time.Duration
	steps, bodies := 0, 0
	for {
		if err := r.Next(); err == io.EOF {
			break
		} else if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if err := c.Observe(); err != nil {
			b.Fatal(err)
		}
		if r.Pos() >= 2*nodes {
			spent += time.Since(t0)
			steps++
			bodies += c.LastStep().Bodies
		}
	}
	return spent / time.Duration(steps), float64(bodies) / float64(steps)
}

// BenchmarkRingCheck checks ring consistency on a 10-member and a
// 1,000-member ring (20,000 steps each) and reports the per-step checker
// cost of each and their ratio (target: 1000/10 <= 2).
//
//	go test ./predicates -run='^$' -bench=RingCheck -benchtime=3x
func BenchmarkRingCheck(b *testing.B) {
	script := filepath.Join(b.TempDir(), "ring.star")
	if err := os.WriteFile(script, []byte(ringScript), 0o644); err != nil {
		b.Fatal(err)
	}
	small, large := ringTrace(b, 10, 20_000), ringTrace(b, 1000, 20_000)
	var s, l time.Duration
	var sb, lb float64
	for b.Loop() {
		ds, bs := steadyCost(b, small, 10, script)
		dl, bl := steadyCost(b, large, 1000, script)
		s, l, sb, lb = s+ds, l+dl, bs, bl
	}
	b.ReportMetric(float64(s.Nanoseconds())/float64(b.N), "ns/step@10")
	b.ReportMetric(float64(l.Nanoseconds())/float64(b.N), "ns/step@1000")
	b.ReportMetric(float64(l)/float64(s), "ratio")
	b.ReportMetric(sb, "bodies/step@10")
	b.ReportMetric(lb, "bodies/step@1000")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkCheckPaxos: replay and check scripts/paxos.star on the default
// 7-process paxos run (seeds 1-10), reporting steps/s, with replay alone
// measured in the same run as the baseline.
//
//	go test ./predicates -run='^$' -bench=CheckPaxos -benchtime=5x
func BenchmarkCheckPaxos(b *testing.B) {
	var traces []*replay.Trace
	for seed := uint64(1); seed <= 10; seed++ {
		cfg := sim.DefaultConfig()
		cfg.Seed = seed
		var buf bytes.Buffer
		if _, err := sim.Run(paxos.System, cfg.WithDefaults(paxos.System), &buf); err != nil {
			b.Fatal(err)
		}
		tr, err := replay.FromBytes(buf.Bytes(), "p.lz4")
		if err != nil {
			b.Fatal(err)
		}
		traces = append(traces, tr)
	}
	reg := system.NewRegistry(paxos.System)
	var replayT, checkT time.Duration
	steps := 0
	for b.Loop() {
		for _, tr := range traces {
			t0 := time.Now()
			r, _ := replay.New(tr, reg, replay.Options{})
			if err := r.RunTo(tr.Len()-1, nil); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			r, _ = replay.New(tr, reg, replay.Options{})
			c, err := predicates.Load("../scripts/paxos.star", r, predicates.Options{To: -1})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.Run(predicates.RunOptions{}); err != nil {
				b.Fatal(err)
			}
			replayT += t1.Sub(t0)
			checkT += time.Since(t1)
			steps += tr.Len()
		}
	}
	b.ReportMetric(float64(steps)/replayT.Seconds(), "replay-steps/s")
	b.ReportMetric(float64(steps)/checkT.Seconds(), "check-steps/s")
	b.ReportMetric(checkT.Seconds()/replayT.Seconds(), "check/replay")
	b.ReportMetric(0, "ns/op")
}
