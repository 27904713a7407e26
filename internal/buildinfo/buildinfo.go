// Package buildinfo describes the running binary's build in one line: a
// live recording's header keeps it, so that a divergence can say when the
// trace was recorded by another build than the one replaying it.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Describe is the running binary's build: its main package, the main
// module's version, the commit it was built from (with "+modified" when
// the tree had changes) and the Go version; "" when the binary carries no
// build information.
func Describe() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return describe(bi)
}

func describe(bi *debug.BuildInfo) string {
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	d := bi.Path
	if v := bi.Main.Version; v != "" {
		d += "@" + v
	}
	if rev != "" {
		d += fmt.Sprintf(" commit %.12s%s", rev, modified)
	}
	return d + " " + bi.GoVersion
}
