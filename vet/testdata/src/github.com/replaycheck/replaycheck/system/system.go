// Package system is a stand-in for the real system package: only the
// field the analyzer reads.
package system

type System struct {
	Name       string
	CryptoRand bool
}
