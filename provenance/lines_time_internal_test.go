package provenance

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/state"
)

// A time.Time value reads as the time since the run's start, as the
// State panel and replay events show times, and each step's line gives
// the step's time (a new user compared a lease's end, a date, with event
// times by hand).
func TestLinesShowTimesSinceTheStart(t *testing.T) {
	start := int64(1767225600) * 1e9 // 2026-01-01T00:00:00Z
	c := &Chain{Node: "c1", Field: "LeaseEnd", At: 829, Value: "2026-01-01T00:00:02.165974Z", start: start,
		Links: []Link{{Step: 798, Time: 2065974000, Node: "c1", Event: "recv Grant{Lease:100ms}", Field: "LeaseEnd", Value: "2026-01-01T00:00:02.165974Z"}}}
	text, _ := c.Lines()
	got := strings.Join(text, "\n")
	for _, want := range []string{"why c1 LeaseEnd = t=2.165974s at #829:", "#798 t=2.065974s c1 recv Grant{Lease:100ms} — LeaseEnd = t=2.165974s"} {
		if !strings.Contains(got, want) {
			t.Fatalf("lacks %q:\n%s", want, got)
		}
	}
}

// A time value in a message's fields and in how a link feeds the one
// above reads the same way as the fields' own values: they were dates.
func TestLinesShowTimesInMessagesToo(t *testing.T) {
	start := int64(1767225600) * 1e9 // 2026-01-01T00:00:00Z
	date := "2026-01-01T00:00:02.165974Z"
	c := &Chain{Node: "c1", Field: "LeaseEnd", At: 829, Value: date, start: start,
		Links: []Link{
			{Step: 798, Time: 2065974000, Node: "c1", Event: "recv Grant", Field: "LeaseEnd", Value: date,
				Trigger: &Trigger{Kind: "recv", Type: "Grant", From: "s1", SendStep: 790, Fields: []state.Leaf{{Path: "Expiry", Value: date}}}},
			{Depth: 1, Step: 790, Time: 2000000000, Node: "s1", Event: "timer tick", Field: "Expiry", Value: date,
				Via: "Grant field Expiry = " + date + ", sent by s1 at #790"},
		}}
	text, _ := c.Lines()
	got := strings.Join(text, "\n")
	if strings.Contains(got, "2026-01-01") {
		t.Fatalf("a date is left:\n%s", got)
	}
	for _, want := range []string{"message Grant from s1, sent at #790: Expiry = t=2.165974s", "← from Grant field Expiry = t=2.165974s, sent by s1 at #790"} {
		if !strings.Contains(got, want) {
			t.Fatalf("lacks %q:\n%s", want, got)
		}
	}
}

// Only values that are times are shown as times: a string that reads
// like a date stays the string it is (quoted), wherever a line quotes
// it; a restart's origin quotes the value the node started with.
func TestLinesShowOnlyTimesAsTimes(t *testing.T) {
	start := int64(1767225600) * 1e9 // 2026-01-01T00:00:00Z
	note := `"2026-01-01T00:00:00.75Z"`
	c := &Chain{Node: "c1", Field: "Note", At: 9, Value: note, start: start,
		Links: []Link{
			{Step: 8, Node: "c1", Event: "recv Hb", Field: "Note", Value: note},
			{Depth: 1, Step: 5, Node: "s1", Event: "restart", Field: "Note", Value: note,
				Via:    "Hb field Note = " + note + ", sent by s1 at #5",
				Origin: "set by Init at restart, which read nothing from disk: not restored; the node started (#1) with 2026-01-01T00:00:00Z", originValue: "2026-01-01T00:00:00Z"},
		}}
	text, _ := c.Lines()
	got := strings.Join(text, "\n")
	for _, want := range []string{"← from Hb field Note = " + note + ", sent by s1", "the node started (#1) with t=0s"} {
		if !strings.Contains(got, want) {
			t.Fatalf("lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"t=`) {
		t.Fatalf("a string was shown as a time:\n%s", got)
	}
}

// A value the sender forwarded without keeping it (the link holds no
// value of its own) reads as a time too, in how it feeds the line above
// and in the origin that says the sender computed it.
func TestLinesShowForwardedTimes(t *testing.T) {
	start := int64(1767225600) * 1e9 // 2026-01-01T00:00:00Z
	date := "2026-01-01T00:00:02.1Z"
	c := &Chain{Node: "c1", Field: "Deadline", At: 9, Value: date, start: start,
		Links: []Link{
			{Step: 8, Node: "c1", Event: "recv Lease", Field: "Deadline", Value: date},
			{Depth: 1, Step: 5, Node: "s1", Event: "recv Tick", Via: "Lease field Deadline = " + date + ", sent by s1 at #5",
				Origin: "computed by the sender: no field of s1 at #5, nor of what it received there, equals " + date, originValue: date},
		}}
	text, _ := c.Lines()
	got := strings.Join(text, "\n")
	if strings.Contains(got, "2026-01-01") {
		t.Fatalf("a date is left:\n%s", got)
	}
}
