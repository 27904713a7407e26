package critical

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/predicates"
)

// doomedAfter is a prober of a run whose every step from t on is dead and
// every step before it live (walks recover at a rate that falls towards
// t, as MaceMC observed).
func doomedAfter(t int, probed *[]int) Prober {
	return func(_ context.Context, step int) (Probe, error) {
		*probed = append(*probed, step)
		p := Probe{Step: step, Walks: 10}
		if step < t {
			p.Recovered = 1 + (t-step)%10
		}
		return p, nil
	}
}

func TestSearchFindsTheFirstDeadStep(t *testing.T) {
	for _, tc := range []struct{ first, last, doomed, critical, lastLive int }{
		{0, 1000, 377, 377, 376},
		{0, 1000, 1000, 1000, 999},
		{0, 1000, 1, 1, 0},
		{0, 1000, 0, 0, -1},       // dead from the first step
		{5, 5, 0, 5, -1},          // one step only, dead
		{0, 1000, 2000, -1, -1},   // live at the end: no transition
		{100, 200, 150, 150, 149}, // a window of the run
	} {
		var probed []int
		res, err := Search(context.Background(), tc.first, tc.last, doomedAfter(tc.doomed, &probed), nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Critical != tc.critical || res.LastLive != tc.lastLive {
			t.Errorf("%+v: critical %d, last live %d", tc, res.Critical, res.LastLive)
		}
		if len(res.Probes) != len(probed) {
			t.Errorf("%+v: %d probes recorded, %d made", tc, len(res.Probes), len(probed))
		}
		for i := 1; i < len(res.Probes); i++ {
			if res.Probes[i-1].Step >= res.Probes[i].Step {
				t.Errorf("%+v: probes out of step order: %v", tc, res.Probes)
			}
		}
		// Binary search: about log2(1000) probes, not a scan.
		if len(probed) > 13 {
			t.Errorf("%+v: %d probes", tc, len(probed))
		}
		if p, ok := res.Probe(tc.last); !ok || p.Live() != (tc.critical < 0) {
			t.Errorf("%+v: the last step's probe %+v, %v", tc, p, ok)
		}
	}
}

func TestSearchStopsWhenCanceledAndReturnsProberErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, err := Search(ctx, 0, 1<<20, func(_ context.Context, step int) (Probe, error) {
		n++
		if n == 4 {
			cancel()
		}
		return Probe{Step: step, Walks: 1, Recovered: map[bool]int{true: 1}[step < 1000]}, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "canceled" || n != 4 || res.Critical <= res.LastLive {
		t.Errorf("stopped %q after %d probes, critical %d last live %d", res.Stopped, n, res.Critical, res.LastLive)
	}
	// The probe the cancellation cut short is not evidence, but its
	// walks ran and count (an interrupted search said "0 walks").
	if len(res.Probes) != 3 {
		t.Errorf("%d probes recorded, want the 3 that finished", len(res.Probes))
	}
	if res.CutShort == nil || res.WalksRun() != 4 {
		t.Errorf("cut short: %+v, %d walks run, want the fourth probe and 4", res.CutShort, res.WalksRun())
	}
	boom := errors.New("boom")
	if _, err := Search(context.Background(), 0, 10, func(context.Context, int) (Probe, error) { return Probe{}, boom }, nil); !errors.Is(err, boom) {
		t.Errorf("a prober's error came back as %v", err)
	}
}

func interval(pred string, step, end int, endTime time.Duration) *predicates.Violation {
	return &predicates.Violation{Predicate: pred, Kind: "liveness", Step: step, EndStep: end, EndTime: int64(endTime)}
}

func TestRecovered(t *testing.T) {
	const sec = time.Second
	for _, tc := range []struct {
		name string
		ivs  []*predicates.Violation
		end  time.Duration
		quet bool
		want bool
	}{
		{"held throughout", nil, 10 * sec, false, true},
		{"false at the end", []*predicates.Violation{interval("P", 50, -1, 0)}, 10 * sec, false, false},
		{"recovered long enough", []*predicates.Violation{interval("P", 50, 120, 8*sec)}, 10 * sec, false, true},
		{"recovered too late to tell", []*predicates.Violation{interval("P", 50, 120, 9500*time.Millisecond)}, 10 * sec, false, false},
		{"recovered, then the system settled", []*predicates.Violation{interval("P", 50, 120, 9500*time.Millisecond)}, 10 * sec, true, true},
		{"an interval closed before the fork does not count", []*predicates.Violation{interval("P", 10, 90, 9900*time.Millisecond)}, 10 * sec, false, true},
		{"another predicate's open interval", []*predicates.Violation{interval("Q", 50, -1, 0)}, 10 * sec, false, true},
		{"a safety violation of the same name is not an interval", []*predicates.Violation{{Predicate: "P", Kind: "safety", Step: 150, EndStep: -1}}, 10 * sec, false, true},
		{"broke again and stayed broken", []*predicates.Violation{interval("P", 50, 120, 2*sec), interval("P", 130, -1, 0)}, 10 * sec, false, false},
	} {
		w := Walk{Report: &predicates.Report{Violations: tc.ivs}, Fork: 100, End: tc.end, Quiet: tc.quet}
		if got := Recovered(w, "P", time.Second); got != tc.want {
			t.Errorf("%s: recovered %v", tc.name, got)
		}
	}
}

func TestSparkline(t *testing.T) {
	got := Sparkline([]Probe{{Walks: 4, Recovered: 4}, {Walks: 4, Recovered: 2}, {Walks: 4, Recovered: 1}, {Walks: 4}})
	if got != "█▅▃·" {
		t.Errorf("sparkline %q", got)
	}
}
