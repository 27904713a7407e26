package cli

import (
	"runtime/debug"
	"testing"
)

// A demo run with go run prints go run commands (replay is not on the
// PATH then); an installed binary prints replay.
func TestSelfCommand(t *testing.T) {
	bi := &debug.BuildInfo{Path: "github.com/replaycheck/replaycheck/cmd/replay",
		Main: debug.Module{Path: "github.com/replaycheck/replaycheck"}}
	ours := []byte("module github.com/replaycheck/replaycheck\n\ngo 1.26\n")
	other := []byte("module example.com/team\n")
	for _, tc := range []struct {
		exe   string
		bi    *debug.BuildInfo
		gomod []byte
		want  string
	}{
		{"/home/u/go/bin/replay", bi, ours, "replay"},
		{"/tmp/go-build123/b001/exe/replay", bi, ours, "go run ./cmd/replay"},
		{"/tmp/go-build123/b001/exe/replay", bi, other, "go run github.com/replaycheck/replaycheck/cmd/replay"},
		{"/tmp/go-build123/b001/exe/replay", bi, nil, "go run github.com/replaycheck/replaycheck/cmd/replay"},
		{"/tmp/go-build123/b001/exe/replay", nil, ours, "replay"},
		{"/tmp/go-build123/b001/exe/replay", &debug.BuildInfo{Path: bi.Path, Main: debug.Module{Path: bi.Main.Path, Version: "v1.2.0"}}, nil,
			"go run github.com/replaycheck/replaycheck/cmd/replay@v1.2.0"},
	} {
		if got := selfCommandFor(tc.exe, tc.bi, tc.gomod); got != tc.want {
			t.Errorf("%s with go.mod %q: %q, want %q", tc.exe, tc.gomod, got, tc.want)
		}
	}
}
