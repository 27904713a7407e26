package tui

import (
	"strconv"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/statedb"
)

// The filter's memory of the steps it was tried on changes no answer:
// the timeline's rows and Up/Down with a filter are those a plain scan
// of every step finds, at every cursor, before and after the memory
// fills, both ways.
func TestAFiltersMemoryChangesNoAnswer(t *testing.T) {
	m, _ := openDemo(t, 0)
	m.SetFilter("node=n5 type=Last")
	var all []int
	m.db.Steps(0, m.db.Len()-1, func(s *statedb.Step) bool {
		if m.filter.match(s) {
			all = append(all, s.Step)
		}
		return true
	})
	if len(all) < 5 {
		t.Fatalf("the filter matches %d steps: the test proves little", len(all))
	}
	for pass := range 2 {
		for _, at := range []int{0, all[1], all[2] + 1, m.db.Len() / 2, m.db.Len() - 1} {
			m.seekOrSay(at)
			var got []string
			for _, l := range m.Timeline(12) {
				if s := l.String(); !strings.HasPrefix(s, "▶") {
					got = append(got, strings.Fields(s)[0])
				}
			}
			var want []string
			var before, after []int
			for _, s := range all {
				if s < at {
					before = append(before, s)
				} else if s > at {
					after = append(after, s)
				}
			}
			before = before[max(0, len(before)-4):]
			for _, s := range before {
				want = append(want, "#"+strconv.Itoa(s))
			}
			for _, s := range after[:min(len(after), 12-1-len(before))] {
				want = append(want, "#"+strconv.Itoa(s))
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("pass %d at #%d: the timeline shows %v, want %v", pass, at, got, want)
			}
		}
	}
	m.seekOrSay(0)
	for _, want := range all[:4] {
		m.TimelineStep(1, 1)
		if m.pos != want {
			t.Fatalf("Down went to #%d, want #%d", m.pos, want)
		}
	}
	m.TimelineStep(-1, 2)
	if m.pos != all[1] {
		t.Fatalf("Up twice went to #%d, want #%d", m.pos, all[1])
	}
}
