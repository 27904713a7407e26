package cli

import (
	"testing"

	"github.com/replaycheck/replaycheck/examples"
)

// TestEveryBundledScriptHasItsSystem: --help tells a binary of one's own
// which bundled scripts are for systems it lacks by scriptSystem, so
// every bundled script must be there, with a system that is bundled.
func TestEveryBundledScriptHasItsSystem(t *testing.T) {
	reg := examples.Registry()
	for _, n := range bundledNames() {
		sys, ok := scriptSystem[n]
		if !ok {
			t.Errorf("bundled script %s.star is not in scriptSystem", n)
			continue
		}
		if _, err := reg.Lookup(sys); err != nil {
			t.Errorf("scriptSystem says %s.star checks %s: %v", n, sys, err)
		}
	}
	if len(scriptSystem) != len(bundledNames()) {
		t.Errorf("scriptSystem has %d scripts, %d are bundled", len(scriptSystem), len(bundledNames()))
	}
}
