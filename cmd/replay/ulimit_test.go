package main

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// Under an address-space limit (ulimit -v) below the 4 GB go.starlark.net
// reserves for small integers, every command printed that library's
// start-up complaint before its own one line.
func TestAnAddressSpaceLimitAddsNoStderrLine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ulimit -v is tried on linux only")
	}
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", `ulimit -v 3000000 && exec "$0" info nosuch.lz4`, replayBin)
	cmd.Dir = dir
	r := runCmd(t, cmd)
	if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "nosuch.lz4") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
