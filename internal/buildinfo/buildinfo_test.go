package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestDescribe(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Path: "example.com/kv/cmd/kvd", Main: debug.Module{Path: "example.com/kv", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := describe(bi), "example.com/kv/cmd/kvd@(devel) commit 1a2b3c4d5e6f+modified go1.26.8"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	bi.Settings = bi.Settings[:1]
	bi.Main.Version = ""
	if got, want := describe(bi), "example.com/kv/cmd/kvd commit 1a2b3c4d5e6f go1.26.8"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	// The test binary itself has build information.
	if Describe() == "" {
		t.Error("no description of the running binary")
	}
}
