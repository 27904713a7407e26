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
	for desc, want := range map[string]string{
		"example.com/kv/cmd/kvd@(devel) commit 1a2b3c4d5e6f+modified go1.26.8": "commit 1a2b3c4d5e6f+modified",
		"example.com/kv/cmd/replay commit 1a2b3c4d5e6f go1.25.0":               "commit 1a2b3c4d5e6f",
		"example.com/kv/cmd/kvd@v1.2.3 go1.26.8":                               "v1.2.3",
		"example.com/kv/cmd/kvd@(devel) go1.26.8":                              "",
		"": "",
	} {
		if got := Source(desc); got != want {
			t.Errorf("Source(%q) = %q, want %q", desc, got, want)
		}
	}
	// The test binary itself has build information.
	if Describe() == "" {
		t.Error("no description of the running binary")
	}
}
