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

// otherBuildsOf lists the builds that recorded tr's live files from other
// sources than this binary's (a live recording's header names its build):
// the likeliest cause of a divergence is then a changed handler. A build
// whose sources cannot be told (no commit, no version) is not listed.
func otherBuildsOf(tr *replay.Trace) []string {
	return otherBuilds(tr.Files, buildinfo.Source(buildinfo.Describe()))
}

// otherBuilds is otherBuildsOf for the files and this binary's sources.
func otherBuilds(files []*record.File, me string) []string {
	if me == "" {
		return nil
	}
	var out []string
	for _, f := range files {
		for _, h := range f.Segments {
			b := h.Run[record.RunBuild]
			if src := buildinfo.Source(b); src != "" && src != me && !slices.Contains(out, b) {
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

// warnOtherBuilds says, after a replay that found no divergence, that
// the trace was recorded by other sources than this binary's: a handler
// changed between them diverges only where what it sends, sets or
// writes differs, or at a recorded state hash, so a change to state
// alone can replay cleanly and change what predicates judge (a new
// user's check of a live trace lost its three violations that way).
func warnOtherBuilds(w io.Writer, verb string, builds []string) {
	if len(builds) == 0 {
		return
	}
	me := buildinfo.Describe()
	if me == "" {
		me = "a build without build information"
	}
	fmt.Fprintf(w, "%s: warning: the trace was recorded by %s; this binary is %s: a handler change that alters only state replays without a divergence where the trace holds no state hash, and the results are then this binary's, not the recorded run's (replay with the recorded build)\n",
		verb, strings.Join(builds, " and "), me)
}
