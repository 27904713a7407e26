//go:build !unix

package statedb

// freeBytes cannot tell free space here: builds are not guarded.
func freeBytes(string) (uint64, bool) { return 0, false }
