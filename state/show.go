package state

import (
	"fmt"
	"math"
	"time"
)

// ZeroTime is how the zero time.Time reads as a leaf's value.
const ZeroTime = "0001-01-01T00:00:00Z"

// ShowValue is a leaf's value as text shows it to a person: a time.Time,
// which a leaf holds as an RFC 3339 date, as the time since the run's
// start (start, Unix ns), "t=2.165974s", as event times read; the zero
// time as "zero time"; any other value as it is. Leaves themselves, and
// --json, keep the date.
func ShowValue(v string, start int64) string {
	if len(v) < len("2006-01-02T15:04:05Z") || v[4] != '-' || v[10] != 'T' {
		return v
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return v
	}
	if t.IsZero() {
		return "zero time"
	}
	d := t.Sub(time.Unix(0, start))
	if d == math.MinInt64 || d == math.MaxInt64 {
		return v // some 292 years away: no duration says it
	}
	return fmt.Sprintf("t=%v", d)
}
