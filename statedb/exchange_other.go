//go:build !linux

package statedb

// exchangeDirs: only Linux swaps two names in one step.
func exchangeDirs(a, b string) error { return errNoExchange }
