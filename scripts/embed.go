// Package scripts holds the predicate scripts for the bundled examples,
// embedded so that an installed replay needs no checkout: `replay demo`
// writes one out, and every verb that takes a script resolves
// builtin:NAME (or a bare NAME.star that is not a file) to these; see
// cli.resolveScript.
package scripts

import "embed"

// FS holds every *.star file of this directory.
//
//go:embed *.star
var FS embed.FS
