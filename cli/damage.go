package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
)

// damageFlag is --allow-damaged of the verbs whose exit code is a verdict
// on the whole run (check, verify): without it, a trace file that lost its
// tail makes them exit 2 after their report, so that a script never takes
// a check of part of a run for a check of all of it.
type damageFlag struct{ allow bool }

func (d *damageFlag) register(fl *pflag.FlagSet) {
	fl.BoolVar(&d.allow, "allow-damaged", false, "take what was recovered from a damaged trace file (or a recording without end records) as the whole run: exit as if nothing were lost (the warning stays)")
}

// refuse is the exit of a verb that did its work on damaged files.
func (d *damageFlag) refuse(damaged []string, did string) error {
	return badInput("%s is damaged (warning above): only what was recovered was %s; --allow-damaged takes that as the whole run",
		strings.Join(damaged, ", "), did)
}

// records says whether f holds events of any of the replayed nodes: the
// damage or the open end of a file of other nodes does not touch a
// partial replay's verdict (receivers record what they were sent).
func records(f *record.File, replayed []node.ID) bool {
	for _, h := range f.Segments {
		for _, id := range h.Recorded {
			if slices.Contains(replayed, id) {
				return true
			}
		}
	}
	return false
}

// unended says whether no trace file of the replayed nodes has its end
// record: every recording was killed or is still running, so the trace's
// end is not known to be the run's (a file can be checked while its node
// records).
func unended(tr *replay.Trace, replayed []node.ID) bool {
	for _, f := range tr.Files {
		if f.Ended && records(f, replayed) {
			return false
		}
	}
	return true
}

// damagedFiles names the trace files of the replayed nodes that could not
// be read to their end.
func damagedFiles(tr *replay.Trace, replayed []node.ID) []string {
	var out []string
	for _, f := range tr.Files {
		if f.Damage != nil && records(f, replayed) {
			out = append(out, f.Path)
		}
	}
	return out
}

// damageLines is each damaged file's one-line report, for --json.
func damageLines(tr *replay.Trace) []string {
	var out []string
	for _, f := range tr.Files {
		if f.Damage != nil {
			out = append(out, fmt.Sprint(f.Damage))
		}
	}
	return out
}
