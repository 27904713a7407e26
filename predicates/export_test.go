package predicates

import "github.com/replaycheck/replaycheck/node"

// ComparePaths is the order of row paths, for the external tests.
var ComparePaths = node.CompareNatural
