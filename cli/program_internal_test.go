package cli

import (
	"runtime/debug"
	"testing"
)

// A demo run with go run prints go run commands (replay is not on the
// PATH then); an installed binary prints the name it was started by, so
// that a team's own binary (cli.Main) prints commands that run it.
func TestProgramCommand(t *testing.T) {
	bi := &debug.BuildInfo{Path: "github.com/replaycheck/replaycheck/cmd/replay",
		Main: debug.Module{Path: "github.com/replaycheck/replaycheck"}}
	ours := []byte("module github.com/replaycheck/replaycheck\n\ngo 1.26\n")
	other := []byte("module example.com/team\n")
	for _, tc := range []struct {
		arg0, exe string
		bi        *debug.BuildInfo
		gomod     []byte
		want      string
	}{
		{"replay", "/home/u/go/bin/replay", bi, ours, "replay"},
		{"/home/u/go/bin/replay", "/home/u/go/bin/replay", bi, ours, "replay"},
		{"./kvcheck", "/home/u/team/kvcheck", bi, other, "kvcheck"},
		{`C:\tools\kvcheck.exe`, `C:\tools\kvcheck.exe`, bi, other, "kvcheck"},
		{"", "/home/u/go/bin/replay", bi, ours, "replay"},
		{"my check; rm -rf", "/tmp/x", bi, ours, "replay"},
		{"-x", "/tmp/x", bi, ours, "replay"},
		{"/tmp/go-build123/b001/exe/replay", "/tmp/go-build123/b001/exe/replay", bi, ours, "go run ./cmd/replay"},
		{"/tmp/go-build123/b001/exe/replay", "/tmp/go-build123/b001/exe/replay", bi, other, "go run github.com/replaycheck/replaycheck/cmd/replay"},
		{"/tmp/go-build123/b001/exe/replay", "/tmp/go-build123/b001/exe/replay", bi, nil, "go run github.com/replaycheck/replaycheck/cmd/replay"},
		{"/tmp/go-build123/b001/exe/replay", "/tmp/go-build123/b001/exe/replay", nil, ours, "replay"},
		{"/tmp/go-build123/b001/exe/replay", "/tmp/go-build123/b001/exe/replay", &debug.BuildInfo{Path: bi.Path, Main: debug.Module{Path: bi.Main.Path, Version: "v1.2.0"}}, nil,
			"go run github.com/replaycheck/replaycheck/cmd/replay@v1.2.0"},
	} {
		got := programCommandFor(tc.arg0, tc.exe, tc.bi, tc.gomod)
		if got != tc.want {
			t.Errorf("%q (%s) with go.mod %q: %q, want %q", tc.arg0, tc.exe, tc.gomod, got, tc.want)
		}
		a := &App{Program: got}
		if want := map[string]string{"go run github.com/replaycheck/replaycheck/cmd/replay@v1.2.0": "replay", "kvcheck": "kvcheck"}[got]; want != "" && a.name() != want {
			t.Errorf("name of %q: %q, want %q", got, a.name(), want)
		}
	}
}

// A team's own binary shows its verbs' examples as its users run them;
// replay's help is unchanged.
func TestExamplesNameTheProgram(t *testing.T) {
	ex := "  replay sim paxos --seed 1 -o p.lz4\n  replay check p.lz4 x.star   # then: replay debug p.lz4\n  diff <(replay schedule a.lz4) <(replay schedule b.lz4)\n  # replaycheck's own words stay"
	got := examplesOf("kvcheck", ex)
	want := "  kvcheck sim paxos --seed 1 -o p.lz4\n  kvcheck check p.lz4 x.star   # then: kvcheck debug p.lz4\n  diff <(kvcheck schedule a.lz4) <(kvcheck schedule b.lz4)\n  # replaycheck's own words stay"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if examplesOf("replay", ex) != ex {
		t.Error("replay's own examples changed")
	}
}
