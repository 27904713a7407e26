package cli

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/record"
)

// A divergence names the builds that recorded the trace from other
// sources than this binary's, each once; builds of the same commit (the
// node and the replay tool are different main packages) or whose sources
// cannot be told are not named, and neither is anything when this
// binary's own sources cannot be told.
func TestOtherBuilds(t *testing.T) {
	const (
		sameSrc = "example.com/kv/cmd/kvd commit 1a2b3c4d5e6f go1.25.0"
		older   = "example.com/kv/cmd/kvd commit 0000aaaa1111 go1.26.8"
		dirty   = "example.com/kv/cmd/kvd commit 1a2b3c4d5e6f+modified go1.26.8"
		unknown = "example.com/kv/cmd/kvd@(devel) go1.26.8"
	)
	file := func(builds ...string) *record.File {
		f := &record.File{}
		for _, b := range builds {
			f.Segments = append(f.Segments, &record.Header{Run: map[string]string{record.RunBuild: b}})
		}
		return f
	}
	files := []*record.File{file(sameSrc, older), file(unknown, older, dirty), file()}
	if got, want := otherBuilds(files, "commit 1a2b3c4d5e6f"), []string{older, dirty}; !reflect.DeepEqual(got, want) {
		t.Fatalf("%q, want %q", got, want)
	}
	if got := otherBuilds(files, ""); got != nil {
		t.Fatalf("this binary's sources unknown: %q", got)
	}
	var b bytes.Buffer
	writeBuildNote(&b, []string{older})
	if !strings.HasPrefix(b.String(), "note: the trace was recorded by "+older+"; this binary is ") {
		t.Fatalf("%q", b.String())
	}
}

// After a clean replay, a trace of other sources gets a warning that the
// results are this binary's; nothing is said when no build differs.
func TestWarnOtherBuilds(t *testing.T) {
	const older = "example.com/kv/cmd/kvd commit 0000aaaa1111 go1.26.8"
	var b bytes.Buffer
	warnOtherBuilds(&b, "kvcheck verify", []string{older})
	if got := b.String(); !strings.HasPrefix(got, "kvcheck verify: warning: the trace was recorded by "+older+"; this binary is ") ||
		!strings.Contains(got, "a handler change that alters only state replays without a divergence") || strings.Count(got, "\n") != 1 {
		t.Fatalf("%q", got)
	}
	b.Reset()
	warnOtherBuilds(&b, "kvcheck verify", nil)
	if b.Len() != 0 {
		t.Fatalf("no other build, yet %q", b.String())
	}
}
