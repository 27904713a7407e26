// Package buildinfo describes the running binary's build in one line: a
// live recording's header keeps it, so that a divergence can say when the
// trace was recorded from other sources than the binary replaying it.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
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

// Source is the sources a Describe line was built from: "commit REV" (with
// "+modified"), else the module's released version, else "" (a build
// without version control information, such as go run's). Two binaries of
// one module (the recording node and the replay tool: different main
// packages) share it when built from the same sources; the Go version is
// left out.
func Source(described string) string {
	fields := strings.Fields(described)
	if len(fields) >= 3 && fields[1] == "commit" {
		return "commit " + fields[2]
	}
	if len(fields) > 0 {
		if _, v, ok := strings.Cut(fields[0], "@"); ok && v != "(devel)" {
			return v
		}
	}
	return ""
}
