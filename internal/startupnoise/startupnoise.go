// Package startupnoise drops the one line go.starlark.net logs while it
// initialises when it cannot reserve 4 GB of address space for small
// integers (a process under ulimit -v): the CLI promises one line on
// stderr per error, and that line said nothing about the command. The
// library works on without the reservation, more slowly.
//
// Import it for its side effect before anything that imports
// go.starlark.net: Go initialises packages in import-path order among
// those whose imports are ready, and this one needs only the standard
// library and sorts before go.starlark.net, so its filter is in place
// when that library's variables are initialised.
package startupnoise

import (
	"bytes"
	"io"
	"log"
	"os"
)

// starlarkReservation is what go.starlark.net logs when the reservation
// fails (starlark/int_posix64.go).
var starlarkReservation = []byte("Starlark failed to allocate 4GB address space")

func init() {
	log.SetOutput(dropping{os.Stderr})
}

// dropping writes what the standard logger writes, but the reservation's
// complaint.
type dropping struct{ w io.Writer }

func (d dropping) Write(p []byte) (int, error) {
	if bytes.Contains(p, starlarkReservation) {
		return len(p), nil
	}
	return d.w.Write(p)
}
