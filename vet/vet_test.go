package vet_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/replaycheck/replaycheck/vet"
)

// TestVetAnalyzer runs the analyzer over testdata/src: every `// want`
// comment must be matched by a finding on its line, and every finding must
// be wanted, so good.go (no wants) fails the test on any false positive.
func TestVetAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), vet.Analyzer,
		"example.com/bad", "example.com/good", "example.com/cross", "example.com/routed", "example.com/tasks", "example.com/globals")
}
