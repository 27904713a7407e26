package predicates

// ComparePaths is comparePaths, for the external tests.
var ComparePaths = comparePaths
