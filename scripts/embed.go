// Package scripts holds the predicate scripts for the bundled examples,
// embedded so that `replay demo` needs no files.
package scripts

import "embed"

// FS holds every *.star file of this directory.
//
//go:embed *.star
var FS embed.FS
