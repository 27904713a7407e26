package system_test

import (
	"testing"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

func TestSharedIsBuiltOncePerRun(t *testing.T) {
	builds := 0
	build := func() any { builds++; return map[string]int{"x": builds} }
	cfg := system.NewConfig("none", []node.ID{"n1", "n2"}, nil)
	a := cfg.Shared("t", build).(map[string]int)
	b := cfg.Shared("t", build).(map[string]int)
	if builds != 1 || a["x"] != b["x"] {
		t.Fatalf("built %d times in one run", builds)
	}
	// Another run builds its own.
	system.NewConfig("none", nil, nil).Shared("t", build)
	if builds != 2 {
		t.Fatalf("a second run reused the first's value (%d builds)", builds)
	}
	// A Config built as a literal has no run to share with: it builds.
	lit := system.Config{Bug: "none"}
	lit.Shared("t", build)
	lit.Shared("t", build)
	if builds != 4 {
		t.Fatalf("a literal Config built %d times, want every call", builds-2)
	}
}
