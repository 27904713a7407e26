package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/livelike"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// Per-node files of a live-like recording: n3's recorder is killed with
// its node (segment 0 without an end record, its crash lost with its
// buffer) and its restart is recorded in segment 1. Merged, the killed
// end is a gap that reaches the restart: not a loss, as it is not in the
// files themselves (the merge exited 2 when every gap in the middle was
// taken for a recorder that fell behind).
func TestKilledNodeMergedIsNotALoss(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "full.lz4"))
	f, paths := liveLikeFiles(t, dir, "full.lz4")
	mustOK(t, replay(t, dir, append([]string{"verify"}, paths...)...))
	mustOK(t, replay(t, dir, append(append([]string{"merge"}, paths...), "-o", "m.lz4")...))
	r := replay(t, dir, "verify", "m.lz4")
	mustOK(t, r)
	if !strings.Contains(r.stdout, "n3: state unknown after") || strings.Contains(r.stderr, "lost events") {
		t.Fatalf("verify of the merge:\n%s%s", r.stdout, r.stderr)
	}
	_ = f
	// A merge of live files keeps their wall clock: info called its
	// span "virtual" (a new user's merged recording).
	info := replay(t, dir, "info", "m.lz4")
	if !strings.Contains(info.stdout, "(wall-clock, since ") || !strings.Contains(info.stdout, "not recorded: its process was killed (a crash of the node, not a loss; its restart resumed above") {
		t.Fatalf("info of the merge:\n%s", info.stdout)
	}
}

// liveLikeFiles is livelike.Files: n3's process killed at its first
// crash.
func liveLikeFiles(t *testing.T, dir, trace string, keep ...func(segs [][]*node.Event, ended []bool) ([][]*node.Event, []bool)) (*record.File, []string) {
	return livelike.Files(t, dir, trace, keep...)
}

// A node killed for good (its file's only segment has no end record) is
// a crash in its file and in their merge alike: the merged trace's gap
// to the end is marked killed, where it read as a recording that stopped
// and made verify and check exit 2 on the merge only (a hostile pass on
// a live raftkv run). The same files with n3's restarted segment cut off
// (a copy taken before the restart reached it) are a loss either way:
// the other nodes go on receiving what n3 sent for far longer than a
// killed process's unwritten tail.
func TestKilledForGoodMergedChecksAsItsParts(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "--time", "60s", "--clocks", "causal", "-o", "full.lz4"))
	onlyFirst := func(segs [][]*node.Event, ended []bool) ([][]*node.Event, []bool) { return segs[:1], ended[:1] }
	_, paths := liveLikeFiles(t, dir, "full.lz4", onlyFirst)
	for i, p := range paths {
		paths[i] = filepath.Base(p)
	}
	parts := replay(t, dir, append([]string{"verify"}, paths...)...)
	if parts.code != 2 || !strings.Contains(parts.stderr, "a later part of its recording (a restarted process's) is missing") {
		t.Fatalf("verify of the parts, n3's restart cut off: exit %d\n%s%s", parts.code, parts.stdout, parts.stderr)
	}
	// n3 killed for good: what it sent after its crash was never sent.
	f, err := record.ReadFile(filepath.Join(dir, "full.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	crash := -1
	for i, ev := range f.Events {
		if ev.Node == "n3" && ev.Kind == node.KindCrash {
			crash = i
			break
		}
	}
	kept := f.Events[:crash]
	rewriteTrace(t, &record.File{Header: f.Header, Events: kept, Ends: []record.End{{Reason: "done", Time: kept[len(kept)-1].Time}}}, filepath.Join(dir, "cut.lz4"))
	_, paths = liveLikeFiles(t, dir, "cut.lz4", onlyFirst)
	for _, args := range [][]string{append([]string{"verify"}, paths...), {"merge", "-o", "m.lz4"}, {"verify", "m.lz4"}, {"check", "m.lz4", "builtin:paxos"}} {
		if args[0] == "merge" {
			args = append(args, paths...)
		}
		r := replay(t, dir, args...)
		mustOK(t, r)
		if args[0] == "verify" && !strings.Contains(r.stdout, "n3: state unknown after") {
			t.Fatalf("%v:\n%s%s", args, r.stdout, r.stderr)
		}
	}
}

// history lists changes, so a value a restart rebuilt equal to the last
// before the node's state became unknown did not show after "unknown
// until its restart": it read as lost (a new user's backup, its Applied
// count restored from disk). n3's N (the node count) never changes.
func TestHistoryShowsWhatARestartRestored(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "full.lz4"))
	_, paths := liveLikeFiles(t, dir, "full.lz4")
	for _, asJSON := range []bool{false, true} {
		args := append(append([]string{"history"}, paths...), "--node", "n3", "--field", "N")
		if asJSON {
			args = append(args, "--json")
		}
		r := replay(t, dir, args...)
		mustOK(t, r)
		want := regexp.MustCompile(`unknown until its restart at #(\d+).*\n#(\d+) 7 \(after its restart: as before the stretch\)\n`)
		if asJSON {
			want = regexp.MustCompile(`"value": "7",\s+"restored": true`)
		}
		if m := want.FindStringSubmatch(r.stdout); m == nil || !asJSON && m[1] != m[2] {
			t.Fatalf("history of n3's N does not show the value its restart restored:\n%s", r.stdout)
		}
	}
}

// A listing says where a killed node's recording goes missing, between
// the lines where it does: events went on without n3, and only verify
// and check said that its state was unknown up to its restart (an SRE's
// kill -9 of a live raftkv node).
func TestEventsMarkAKilledNodesUnknownStretch(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "full.lz4"))
	_, paths := liveLikeFiles(t, dir, "full.lz4")
	mark := regexp.MustCompile(`(?m)^   n3: state unknown after #(\d+) until its restart at #(\d+): .*n3\.lz4: the recording of segment 0 has no end record`)
	r := replay(t, dir, append([]string{"events"}, paths...)...)
	mustOK(t, r)
	m := mark.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no mark of n3's unknown stretch:\n%s", r.stdout)
	}
	lines := strings.Split(r.stdout, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return mark.MatchString(l) })
	if i == 0 || !strings.HasPrefix(lines[i-1], "#"+m[1]+" ") || !strings.HasPrefix(lines[i+1], fmt.Sprintf("#%d ", atoi(t, m[1])+1)) {
		t.Fatalf("the mark is not between #%s and the step after it:\n%s", m[1], strings.Join(lines[max(0, i-2):min(len(lines), i+3)], "\n"))
	}
	// Shown for n3's own lines, from a step inside the stretch too; not
	// for another node's, nor in --json.
	inside := strconv.Itoa(atoi(t, m[1]) + 1)
	if mine := replay(t, dir, append([]string{"events", "--node", "n3", "--from", inside}, paths...)...); !mark.MatchString(strings.SplitN(mine.stdout, "\n", 2)[0]) {
		t.Fatalf("--node n3 --from %s (inside the stretch) does not begin with the mark:\n%s", inside, mine.stdout)
	}
	if mine := replay(t, dir, append([]string{"events", "--node", "n3"}, paths...)...); !mark.MatchString(mine.stdout) {
		t.Fatalf("--node n3:\n%s", mine.stdout)
	}
	for _, args := range [][]string{{"--node", "n1"}, {"--json"}} {
		if other := replay(t, dir, append(append([]string{"events"}, args...), paths...)...); strings.Contains(other.stdout, "state unknown") {
			t.Fatalf("%v shows the mark:\n%s", args, other.stdout)
		}
	}
}
