package chord

import (
	"bytes"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

func TestRingIntervals(t *testing.T) {
	r := ring{size: 16}
	cases := []struct {
		x, a, b int
		between bool
		upTo    bool
	}{
		{5, 3, 8, true, true},
		{8, 3, 8, false, true},
		{3, 3, 8, false, false},
		{1, 14, 2, true, true},  // wraps past 0
		{15, 14, 2, true, true}, // wraps past 0
		{5, 14, 2, false, false},
		{5, 7, 7, true, true}, // (a, a) is the whole ring but a
		{7, 7, 7, false, true},
	}
	for _, c := range cases {
		if got := r.between(c.x, c.a, c.b); got != c.between {
			t.Errorf("between(%d, %d, %d) = %v", c.x, c.a, c.b, got)
		}
		if got := r.upTo(c.x, c.a, c.b); got != c.upTo {
			t.Errorf("upTo(%d, %d, %d) = %v", c.x, c.a, c.b, got)
		}
	}
}

func TestRingPositionsUniqueAndOrderFree(t *testing.T) {
	ids := System.NodeIDs(200) // 200 names on 512 positions: collisions certain
	pos := ringPositions(ids, 9)
	seen := map[int]node.ID{}
	for id, k := range pos {
		if k < 0 || k >= 512 {
			t.Fatalf("%s at %d, off the ring", id, k)
		}
		if other, dup := seen[k]; dup {
			t.Fatalf("%s and %s share position %d", id, other, k)
		}
		seen[k] = id
	}
	reversed := make([]node.ID, len(ids))
	for i, id := range ids {
		reversed[len(ids)-1-i] = id
	}
	for id, k := range ringPositions(reversed, 9) {
		if pos[id] != k {
			t.Fatalf("%s: position %d depends on the order nodes are listed (%d)", id, k, pos[id])
		}
	}
}

// The default run: a ring forms, one node leaves, the ring closes over
// the gap; nothing the safety properties forbid ever happens, and the
// liveness properties hold well before the alarm threshold.
func TestCorrectRingStabilizes(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		r, err := observe("none", seed, nil)
		if err != nil {
			t.Fatal(err)
		}
		where := fmt.Sprintf("seed %d", seed)
		if r.predSelf != "" {
			t.Errorf("%s: at %v %s", where, r.predSelfAt, r.predSelf)
		}
		if r.order != "" {
			t.Errorf("%s: at %v %s", where, r.orderAt, r.order)
		}
		if r.ringEnd != "" || r.fingerEnd != "" {
			t.Errorf("%s: at the end of the run: ring %q, fingers %q", where, r.ringEnd, r.fingerEnd)
		}
		if r.members != 9 {
			t.Errorf("%s: %d members at the end, want 9 (10 joined, 1 left)", where, r.members)
		}
		if r.ringStable > alarmAfter || r.fingerStable > alarmAfter {
			t.Errorf("%s: still unstable after %v of stable population: ring %v (%s), fingers %v (%s)",
				where, alarmAfter, r.ringStable, r.ringWhy, r.fingerStable, r.fingerWhy)
		}
		if r.fingerRegressions > 0 {
			t.Errorf("%s: %d fingers went wrong in a consistent ring, first %s", where, r.fingerRegressions, r.regression)
		}
	}
}

// Each seeded bug produces the wrong state its property describes: the
// first seed of 1-100 that shows it is found and reported, and the correct
// program on that same seed does not show it.
func TestSeededBugsShowTheirWrongState(t *testing.T) {
	shows := map[string]func(*report) string{
		"succ-succ-hash": func(r *report) string {
			if r.ringStable > alarmAfter {
				return fmt.Sprintf("ring still inconsistent after %v of stable population: %s", r.ringStable, r.ringWhy)
			}
			return ""
		},
		"finger-slow": func(r *report) string {
			if r.fingerStable > alarmAfter && r.ringStable <= alarmAfter {
				return fmt.Sprintf("ring fine, fingers still wrong after %v of stable population: %s", r.fingerStable, r.fingerWhy)
			}
			return ""
		},
		"finger-boundary": func(r *report) string {
			if r.fingerRegressions > 0 && r.fingerStable > alarmAfter {
				return fmt.Sprintf("%d correct fingers replaced in a consistent ring, first %s", r.fingerRegressions, r.regression)
			}
			return ""
		},
		"pred-self": func(r *report) string {
			if r.predSelf != "" {
				return fmt.Sprintf("at %v %s", r.predSelfAt, r.predSelf)
			}
			return ""
		},
		"pred-order": func(r *report) string {
			if r.order != "" {
				return fmt.Sprintf("at %v %s", r.orderAt, r.order)
			}
			return ""
		},
	}
	for _, b := range System.Bugs {
		t.Run(b.Name, func(t *testing.T) {
			check := shows[b.Name]
			if check == nil {
				t.Fatalf("no oracle for bug %s", b.Name)
			}
			for seed := uint64(1); seed <= 100; seed++ {
				r, err := observe(b.Name, seed, nil)
				if err != nil {
					t.Fatal(err)
				}
				what := check(r)
				if what == "" {
					continue
				}
				t.Logf("seed %d: %s", seed, what)
				good, err := observe("none", seed, nil)
				if err != nil {
					t.Fatal(err)
				}
				if why := check(good); why != "" {
					t.Fatalf("seed %d: the correct program shows it too: %s", seed, why)
				}
				return
			}
			t.Fatalf("no seed of 1-100 shows bug %s", b.Name)
		})
	}
}

// With churn (crash and restart, state lost), restarted nodes rejoin from
// what their disk kept, and the safety properties still hold.
func TestChurnRejoinsAndStaysSafe(t *testing.T) {
	restarts, rejoined := 0, 0
	for seed := uint64(1); seed <= 5; seed++ {
		r, err := observe("none", seed, func(c *sim.Config) { c.Churn, c.Time = 0.5, 10*time.Second })
		if err != nil {
			t.Fatal(err)
		}
		if r.predSelf != "" || r.order != "" {
			t.Errorf("seed %d: %s%s", seed, r.predSelf, r.order)
		}
		if r.ringStable > alarmAfter {
			t.Errorf("seed %d: ring inconsistent after %v of stable population: %s", seed, r.ringStable, r.ringWhy)
		}
		restarts += r.restarts
		rejoined += r.rejoined
	}
	if restarts == 0 || rejoined*10 < restarts*8 {
		t.Fatalf("%d of %d restarted members rejoined within a second", rejoined, restarts)
	}
}

func TestSameSeedSameTrace(t *testing.T) {
	run := func() []byte {
		var b bytes.Buffer
		cfg := sim.DefaultConfig()
		cfg.Seed, cfg.Churn = 7, 0.5
		if _, err := sim.Run(System, cfg.WithDefaults(System), &b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	if a, b := run(), run(); !bytes.Equal(a, b) {
		t.Fatal("same seed, different traces")
	}
}

func TestBadParam(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !bytes.Contains([]byte(fmt.Sprint(r)), []byte("bits")) {
			t.Fatalf("bits=x: %v", r)
		}
	}()
	New("n1", system.Config{Nodes: []node.ID{"n1"}, Params: map[string]string{"bits": "x"}})
}

var rates = flag.Int("rates", 0, "measure how many of seeds 1..N show each bug (a measurement, not a test)")

// TestSeedRates prints, for every variant, how many seeds of 1..N show
// each property's violation and the first such seed; docs/decisions.md
// quotes it. Run with: go test ./examples/chord -run SeedRates -rates 100 -v
func TestSeedRates(t *testing.T) {
	if *rates == 0 {
		t.Skip("a measurement: pass -rates N to run it")
	}
	for _, bug := range System.BugNames() {
		var count, first [5]int
		var worstRing, worstFingers time.Duration
		for seed := 1; seed <= *rates; seed++ {
			r, err := observe(bug, uint64(seed), nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, hit := range []bool{r.predSelf != "", r.order != "", r.ringStable > alarmAfter, r.fingerStable > alarmAfter, r.fingerRegressions > 0} {
				if hit {
					count[i]++
					if first[i] == 0 {
						first[i] = seed
					}
				}
			}
			worstRing, worstFingers = max(worstRing, r.ringStable), max(worstFingers, r.fingerStable)
		}
		t.Logf("%-15s pred=self %3d (first %3d)  order %3d (first %3d)  ring alarm %3d (first %3d)  finger alarm %3d (first %3d)  finger oscillation %3d (first %3d)  worst stable-violated ring %v fingers %v",
			bug, count[0], first[0], count[1], first[1], count[2], first[2], count[3], first[3], count[4], first[4],
			worstRing.Round(time.Millisecond), worstFingers.Round(time.Millisecond))
	}
}
