package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/internal/buildinfo"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
)

// otherBuildsOf lists the builds that recorded tr's live files when they
// are not this binary's (a live recording's header names its build): the
// likeliest cause of a divergence is a handler changed between them.
func otherBuildsOf(tr *replay.Trace) []string {
	me := buildinfo.Describe()
	var out []string
	for _, f := range tr.Files {
		for _, h := range f.Segments {
			if b := h.Run[record.RunBuild]; b != "" && b != me && !slices.Contains(out, b) {
				out = append(out, b)
			}
		}
	}
	return out
}

// writeBuildNote says, beside a divergence, which other builds recorded
// the trace.
func writeBuildNote(w io.Writer, builds []string) {
	if len(builds) == 0 {
		return
	}
	me := buildinfo.Describe()
	if me == "" {
		me = "a build without build information"
	}
	fmt.Fprintf(w, "note: the trace was recorded by %s; this binary is %s: a handler changed between them diverges\n", strings.Join(builds, " and "), me)
}
