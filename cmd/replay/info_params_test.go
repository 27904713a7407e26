package main

import (
	"strings"
	"testing"
)

// A run's --param settings were in info --json only: the text listed
// every other setting of the run and not them (a new user's VR run with
// partitions=1), and a run is not re-made without them.
func TestInfoShowsParams(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "chord", "--param", "bits=12", "--steps", "100", "-o", "c.lz4"))
	r := replay(t, dir, "info", "c.lz4")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "\nparams       bits=12\n") {
		t.Fatalf("info does not show the run's params:\n%s", r.stdout)
	}
}
