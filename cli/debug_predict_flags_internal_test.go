package cli

import "testing"

// The debugger's p runs predict with the debugger's --depth and --faults:
// a new user's failover bug needed both, and p ran 100 events without a
// crash whatever they gave.
func TestDebugPredictTakesDepthAndFaults(t *testing.T) {
	pf := debugFlags{budget: 7, depth: 800, faults: 2}.predictFlags(42, scriptBudgetFlags{})
	if pf.at != 42 || pf.budget != 7 || pf.depth != 800 || pf.faults != 2 {
		t.Fatalf("predict flags %+v: want at 42, budget 7, depth 800, faults 2", pf)
	}
	// An App used without its flags (tests, the zero value) keeps
	// predict's default depth.
	if pf := (debugFlags{budget: 1}).predictFlags(0, scriptBudgetFlags{}); pf.depth != defaultPredictDepth || pf.faults != 0 {
		t.Fatalf("zero flags: depth %d, faults %d", pf.depth, pf.faults)
	}
}
