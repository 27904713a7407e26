package node_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A system written in package main named its types "main.Ack" in its
// binary but "mainpkg.Ack" under go test (which builds a main package
// under its import path): a trace simtest kept did not replay in the
// binary ("message type not registered"), and a script naming
// main.primary matched no table in tests.
func TestTypeNamesOfAMainPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a main package twice")
	}
	run := func(args ...string) string {
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if got := strings.TrimSpace(run("run", "./testdata/mainpkg")); got != "main.Ack" {
		t.Errorf("in the binary: %q, want main.Ack", got)
	}
	if got := run("test", "-count=1", "-v", "./testdata/mainpkg"); !strings.Contains(got, "name under test: main.Ack\n") {
		t.Errorf("under go test:\n%s\nwant the name main.Ack", got)
	}
}
