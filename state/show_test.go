package state

import "testing"

func TestShowValue(t *testing.T) {
	start := int64(1767225600) * 1e9 // 2026-01-01T00:00:00Z
	for v, want := range map[string]string{
		"2026-01-01T00:00:02.165974Z":    "t=2.165974s",
		"2025-12-31T23:59:59Z":           "t=-1s",
		ZeroTime:                         "zero time",
		"0001-01-01T00:00:00.000000001Z": "0001-01-01T00:00:00.000000001Z", // beyond a Duration: the date
		`"2026-01-01T00:00:02Z"`:         `"2026-01-01T00:00:02Z"`,         // a string, quoted
		"2026-01-01 00:00:02":            "2026-01-01 00:00:02",
		"42":                             "42",
	} {
		if got := ShowValue(v, start); got != want {
			t.Errorf("ShowValue(%q) = %q, want %q", v, got, want)
		}
	}
}
