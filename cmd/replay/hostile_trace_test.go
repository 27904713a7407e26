package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/pierrec/lz4/v4"

	"github.com/replaycheck/replaycheck/cli"
	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/internal/syncbuf"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// app runs one command line in process, as cli.Main does, and fails the
// test if it does not return within a minute.
func app(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		a := &cli.App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
		done <- a.Run(args)
	}()
	select {
	case code := <-done:
		return result{out.String(), errb.String(), code}
	case <-time.After(time.Minute):
		t.Fatalf("replay %s did not return within a minute", strings.Join(args, " "))
		return result{}
	}
}

// records splits a decompressed record stream into whole records.
func records(t *testing.T, raw []byte) [][]byte {
	t.Helper()
	var recs [][]byte
	for len(raw) > 0 {
		n, k := binary.Uvarint(raw)
		if k <= 0 || int(n) > len(raw)-k {
			t.Fatal("not a record stream")
		}
		recs = append(recs, raw[:k+int(n)])
		raw = raw[k+int(n):]
	}
	return recs
}

func record1(typ byte, body []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(body)+1))
	return append(append(b, typ), body...)
}

func compress(t *testing.T, recs ...[]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := lz4.NewWriter(&buf)
	for _, r := range recs {
		zw.Write(r)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decompress(t *testing.T, data []byte) []byte {
	t.Helper()
	raw, err := io.ReadAll(lz4.NewReader(bytes.NewReader(data)))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func cborOf(t *testing.T, v any) []byte {
	t.Helper()
	b, err := cbor.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// headerWith is the header of a real trace changed by f, encoded.
func headerWith(t *testing.T, data []byte, f func(*record.Header)) []byte {
	t.Helper()
	hdr := records(t, decompress(t, data))[0]
	_, k := binary.Uvarint(hdr)
	var h record.Header
	if err := cbor.Unmarshal(hdr[k+1:], &h); err != nil {
		t.Fatal(err)
	}
	f(&h)
	return record1(record.TypeHeader, cborOf(t, h))
}

// unclosed writes a trace's records again through a writer that is flushed
// and never closed, as a killed recorder leaves its file.
func unclosed(t *testing.T, path string) []byte {
	t.Helper()
	f, err := record.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf syncbuf.Buffer
	w, err := record.NewWriter(&buf, *f.Header, record.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range f.Events {
		w.Append(ev)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	w.Close(record.End{})
	return data
}

// Hostile trace files, read by every verb that reads traces: each gives
// its documented exit code and one clear line on stderr naming the file
// and what is wrong; no panic, no hang.
func TestHostileTraces(t *testing.T) {
	dir := t.TempDir()
	small, _ := smallPaxos(t, dir)
	good, err := os.ReadFile(small)
	if err != nil {
		t.Fatal(err)
	}
	recs := records(t, decompress(t, good))
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x20
	seqZero := bytes.Clone(recs[5]) // an event of a node whose seqs are small
	seqZero[3] = 0                  // length, type, node index, seq
	if recs[5][1] != record.TypeEvent || recs[5][3] >= 0x80 {
		t.Fatal("record 5 is not an event with a one-byte seq")
	}
	manyNodes := make([]node.ID, record.MaxNodes+1)
	for i := range manyNodes {
		manyNodes[i] = node.ID(fmt.Sprintf("n%d", i))
	}
	withRecs := func(at int, extra ...[]byte) []byte {
		all := append(append(append([][]byte{}, recs[:at]...), extra...), recs[at:]...)
		return compress(t, all...)
	}
	unknownGap := record1(record.TypeGap, cborOf(t, record.Gap{Node: "zz", From: 1}))

	type hostile struct {
		data []byte
		want []string
		// recoverable: records before the damage are read; verbs warn
		// and go on with them.
		recoverable bool
	}
	files := map[string]hostile{
		"magic.lz4":          {data: []byte{0x04, 0x22, 0x4d, 0x18}, want: []string{"trace truncated at byte offset 0", "nothing could be recovered"}},
		"first-flipped.lz4":  {data: flipped, want: []string{"trace corrupt at byte offset 7", "checksum", "nothing could be recovered"}},
		"first-cut.lz4":      {data: good[:len(good)/2], want: []string{"trace truncated", "nothing could be recovered"}},
		"empty.lz4":          {data: nil, want: []string{"not a replaycheck trace", "empty"}},
		"text.lz4":           {data: []byte("just some text\n"), want: []string{"not a replaycheck trace", "not an lz4 file"}},
		"foreign-lz4.lz4":    {data: compress(t, []byte("an lz4 file holding something else")), want: []string{"not a replaycheck trace"}},
		"huge-node-name.lz4": {data: compress(t, headerWith(t, good, func(h *record.Header) { h.Nodes[0] = node.ID(strings.Repeat("x", 10<<20)) })), want: []string{"node name", "(10485760 bytes) is longer than 256 bytes"}},
		"many-nodes.lz4":     {data: compress(t, headerWith(t, good, func(h *record.Header) { h.Nodes = manyNodes; h.Recorded = nil })), want: []string{"10001 nodes (at most 10000)"}},
		"codec.lz4":          {data: compress(t, headerWith(t, good, func(h *record.Header) { h.Codec = "json/7" })), want: []string{`message codec "json/7" is not supported`}},
		"unclosed-then-magic.lz4": {data: append(unclosed(t, small), 0x04, 0x22, 0x4d, 0x18), recoverable: true,
			want: []string{"trace truncated", "328 complete records recovered"}},
		"closed-then-magic.lz4": {data: append(bytes.Clone(good), 0x04, 0x22, 0x4d, 0x18), recoverable: true,
			want: []string{"trace truncated", "lost: the rest of the file"}},
		"after-end.lz4":   {data: withRecs(len(recs), recs[len(recs)-2]), recoverable: true, want: []string{"record type 0x45 (event) after the segment's end record"}},
		"gap-unknown.lz4": {data: withRecs(40, unknownGap), recoverable: true, want: []string{`gap record for node "zz", which is not in the header's node list`}},
		"seq-zero.lz4":    {data: withRecs(5, seqZero), recoverable: true, want: []string{"seq 0 (seqs start at 1)"}},
		"bogus-type.lz4":  {data: withRecs(30, record1(0x07, []byte("x"))), recoverable: true, want: []string{"unknown record type 0x07"}},
		"backwards-gap.lz4": {data: withRecs(30, record1(record.TypeGap, cborOf(t, record.Gap{Node: "n1", From: 9, To: 3}))), recoverable: true,
			want: []string{"from seq 9 to seq 3: the range is backwards"}},
	}
	script := filepath.Join("..", "..", "scripts", "paxos.star")
	for name, h := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, h.data, 0o644); err != nil {
			t.Fatal(err)
		}
		verbs := [][]string{
			{"info", path},
			{"events", path},
			{"verify", path},
			{"check", path, script},
			{"merge", path, "-o", filepath.Join(dir, "merged-"+name)},
			{"index", path, "--db", filepath.Join(dir, name+".db")},
		}
		for _, args := range verbs {
			t.Run(name+"/"+args[0], func(t *testing.T) {
				start := time.Now()
				r := app(t, args...)
				if d := time.Since(start); d > 30*time.Second {
					t.Errorf("took %v", d)
				}
				if strings.Contains(r.stderr+r.stdout, "goroutine ") || strings.Contains(r.stderr, "panic") {
					t.Fatalf("panic: %s", r.stderr)
				}
				lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
				switch {
				case !h.recoverable:
					if r.code != 2 || len(lines) != 1 || r.stderr == "" {
						t.Fatalf("exit %d, stderr %d lines, want exit 2 and one line:\n%.2000s", r.code, len(lines), r.stderr)
					}
				case args[0] == "info":
					// info reports damage as the file's status.
					if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "DAMAGED: "+path) {
						t.Fatalf("exit %d, stderr %q, stdout:\n%s", r.code, r.stderr, r.stdout)
					}
					for _, l := range strings.Split(r.stdout, "\n") {
						if strings.HasPrefix(l, "status") {
							lines = []string{l}
						}
					}
				case args[0] == "check" || args[0] == "verify":
					// A verdict on part of a run is not one on the run:
					// exit 2 after the report, unless --allow-damaged.
					if r.code != 2 || len(lines) != 2 || !strings.HasPrefix(lines[0], "warning: "+path+": ") ||
						!strings.Contains(lines[1], path+" is damaged") || !strings.Contains(lines[1], "--allow-damaged") {
						t.Fatalf("exit %d, want 2, a warning line and a line saying the run was not all checked:\n%.2000s", r.code, r.stderr)
					}
					allowed := app(t, append(slices.Clone(args), "--allow-damaged")...)
					if allowed.code != 0 && !(args[0] == "check" && allowed.code == 1) || allowed.stderr != r.stderr[:len(lines[0])+1] {
						t.Fatalf("--allow-damaged: exit %d, want 0 and the warning line alone:\n%.2000s", allowed.code, allowed.stderr)
					}
				default:
					if r.code != 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "warning: "+path+": ") {
						t.Fatalf("exit %d, want 0 and one warning line:\n%.2000s", r.code, r.stderr)
					}
				}
				if !strings.Contains(lines[0], path) {
					t.Errorf("%q does not name the file", lines[0])
				}
				for _, w := range h.want {
					if !strings.Contains(lines[0], w) {
						t.Errorf("%.500q does not say %q", lines[0], w)
					}
				}
				if len(lines[0]) > 1000 {
					t.Errorf("a %d-byte line", len(lines[0]))
				}
			})
		}
	}
}

// fillingDisk fails, with ENOSPC, the first write that does not fit in
// room, then has the space that write would have used again (a live
// recorder cuts a partial write back).
type fillingDisk struct {
	buf  bytes.Buffer
	room int
	full bool
}

func (d *fillingDisk) Write(p []byte) (int, error) {
	if len(p) > d.room && !d.full {
		d.full, d.room = true, len(p)
		return 0, fmt.Errorf("write n.lz4: %w", syscall.ENOSPC)
	}
	if len(p) > d.room {
		return 0, fmt.Errorf("write n.lz4: %w", syscall.ENOSPC)
	}
	d.room -= len(p)
	return d.buf.Write(p)
}

// A trace whose recording a full disk stopped says so in info and verify,
// instead of blaming a kill.
func TestDiskFullTraceSaysSo(t *testing.T) {
	dir := t.TempDir()
	_, f := smallPaxos(t, dir)
	d := &fillingDisk{room: 6000}
	w, err := record.NewWriter(d, *f.Header, record.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range f.Events {
		if w.Append(ev) != nil {
			break
		}
		if i%20 == 19 {
			w.Flush()
		}
	}
	w.Close(record.End{Reason: "time limit"})
	path := filepath.Join(dir, "full.lz4")
	os.WriteFile(path, d.buf.Bytes(), 0o644)

	r := app(t, "info", path)
	mustOK(t, r)
	if !strings.Contains(r.stdout, "status       incomplete: recording stopped: disk full at seq") || strings.Contains(r.stdout, "killed") {
		t.Fatalf("info:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "seqs ") || strings.Contains(r.stdout, "on not recorded") {
		t.Fatalf("gap rows:\n%s", r.stdout)
	}
	// The run went on past what was recorded: verify replayed less than
	// the run (exit 2, as for a cut file), says so in one line per file,
	// and takes it as the whole run with --allow-damaged.
	r = app(t, "verify", path)
	if r.code != 2 || !strings.Contains(r.stdout, "recording stopped: disk full at seq") || strings.Contains(r.stdout, "#-1") ||
		strings.Count(r.stderr, "warning: ") != 1 || !strings.Contains(r.stderr, "the recording of 7 nodes stopped before the run ended") {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	mustOK(t, app(t, "verify", path, "--allow-damaged"))
	// --json says which recordings stopped, and does not claim the file
	// has no end record (its stop notice ends it).
	r = app(t, "check", path, "builtin:paxos", "--json")
	if r.code != 2 || !strings.Contains(r.stdout, `"stopped_recordings": [`) || strings.Contains(r.stdout, `"no_end_record"`) {
		t.Fatalf("check --json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestInfoListsSegments writes a file of two writer sessions, the first
// killed (no end record), as a recorder restarted after kill -9 leaves
// it, and reads it with info: each segment's process, events and seqs,
// which one was killed, and a status that does not call the file simply
// complete. Before, info showed the first process, the last segment's
// stats as if they were the file's, and "complete".
func TestInfoListsSegments(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "--steps", "400", "-o", "full.lz4"))
	f, err := record.ReadFile(filepath.Join(dir, "full.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	half := len(f.Events) / 2
	var file []byte
	session := func(segment int, pid string, evs []*node.Event, end bool) {
		var buf syncbuf.Buffer // the writer's compressor writes from its own goroutine
		h := *f.Header
		h.Segment, h.Run = segment, map[string]string{"pid": pid}
		if segment == 0 {
			h.Codec = "cbor-core-deterministic/1" // recorded by an earlier release
		}
		w, err := record.NewWriter(&buf, h, record.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			w.Append(ev)
		}
		if !end {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			file = append(file, buf.Bytes()...) // not the end record a kill never wrote
			w.Close(record.End{})
			return
		}
		if err := w.Close(record.End{Reason: "signal: terminated", Stats: map[string]int64{"sent": 7}}); err != nil {
			t.Fatal(err)
		}
		file = append(file, buf.Bytes()...)
	}
	session(0, "101", f.Events[:half], false)
	session(1, "202", f.Events[half:], true)
	os.WriteFile(filepath.Join(dir, "two.lz4"), file, 0o644)

	r := replay(t, dir, "info", "two.lz4")
	mustOK(t, r)
	for _, want := range []string{
		"segments     2 (the recorder was restarted), 1 without an end record",
		fmt.Sprintf("#0 pid=101: %d events", half),
		"no end record (killed, or still recording)",
		fmt.Sprintf("#1 pid=202: %d events", len(f.Events)-half),
		"ended: signal: terminated",
		"run stats    sent=7 (last segment)",
		"status       complete, but 1 earlier segment(s) were killed",
		"codec        cbor-core-deterministic/1, cbor-core-deterministic/2",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("info lacks %q:\n%s", want, r.stdout)
		}
	}
	// The last segment killed: no end or run stats are the file's (the
	// first segment's closed end is not).
	file = nil
	session(0, "101", f.Events[:half], true)
	session(1, "202", f.Events[half:], false)
	os.WriteFile(filepath.Join(dir, "killed.lz4"), file, 0o644)
	if r := replay(t, dir, "info", "killed.lz4"); r.code != 0 || strings.Contains(r.stdout, "run stats") || strings.Contains(r.stdout, "ended       ") ||
		!strings.Contains(r.stdout, "incomplete: no end record") {
		t.Errorf("info of a file whose last segment was killed:\n%s", r.stdout)
	}
	r = replay(t, dir, "info", "--json", "two.lz4")
	var in struct {
		Segments    int
		SegmentList []struct {
			Index  int
			Run    map[string]string
			Events int
			Ended  bool
		} `json:"segment_list"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &in); err != nil {
		t.Fatal(err)
	}
	if in.Segments != 2 || len(in.SegmentList) != 2 || in.SegmentList[0].Ended || !in.SegmentList[1].Ended ||
		in.SegmentList[0].Run["pid"] != "101" || in.SegmentList[0].Events+in.SegmentList[1].Events != len(f.Events) {
		t.Fatalf("info --json segments: %+v", in)
	}
}

// Events taken out of a closed file leave every record well formed: the
// end record's count is what tells. Verbs that replay refuse the file, in
// one line naming the counts; info still lists it.
func TestEventsRemovedAfterTheEndAreFound(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.lz4")
	mustOK(t, app(t, "sim", "paxos", "--seed", "1", "--time", "1s", "-o", good))
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	// The last events of one node (its index in the header is 2): the
	// rest of the trace stays consistent without them.
	recs := records(t, decompress(t, data))
	var kept [][]byte
	removed := 0
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		_, k := binary.Uvarint(r)
		if r[k] == record.TypeEvent && r[k+1] == 2 && removed < 3 {
			removed++
			continue
		}
		kept = append(kept, r)
	}
	slices.Reverse(kept)
	cut := filepath.Join(dir, "cut.lz4")
	os.WriteFile(cut, compress(t, kept...), 0o644)
	for _, verb := range [][]string{{"verify", cut}, {"check", cut, filepath.Join("..", "..", "scripts", "paxos.star")}, {"events", cut}} {
		r := app(t, verb...)
		if r.code != 2 || !strings.Contains(r.stderr, "counts") || !strings.Contains(r.stderr, "events were removed") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%s: exit %d, %q", verb[0], r.code, r.stderr)
		}
	}
	mustOK(t, app(t, "info", cut))
}

// A file concatenated with itself reads as two segments, but no verb
// replays it: info said "complete" with twice the events. It now says
// which node's seqs repeat, after the summary, and exits 2 as the
// others do.
func TestInfoRefusesAConcatenatedFile(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "-o", "p.lz4"))
	one, err := os.ReadFile(filepath.Join(dir, "p.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	cat := filepath.Join(dir, "cat.lz4")
	os.WriteFile(cat, append(slices.Clone(one), one...), 0o644)
	r := replay(t, dir, "info", "cat.lz4")
	if r.code != 2 || !strings.Contains(r.stdout, "status       INVALID: node n1's seqs 1..") ||
		!strings.Contains(r.stderr, "already recorded in segment 0") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if r := replay(t, dir, "verify", "cat.lz4"); r.code != 2 {
		t.Fatalf("verify: exit %d", r.code)
	}
	// --json says so too, and exits as the text does (it exited 0).
	if r := replay(t, dir, "info", "--json", "cat.lz4"); r.code != 2 || !strings.Contains(r.stdout, `"invalid": "node n1's seqs 1..`) || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("info --json: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	mustOK(t, replay(t, dir, "info", "p.lz4"))
}

// shrink refuses a trace whose receipt does not match its send as verify
// does, naming the file: it exited 1 naming the run's re-run
// (paxos-seed8.lz4), as a failed shrink.
func TestShrinkRefusesAMismatchedReceiptAsVerifyDoes(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--bug", "spec", "--seed", "8", "-o", "spec.lz4"))
	data, err := os.ReadFile(filepath.Join(dir, "spec.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	raw := decompress(t, data)
	raw[7055] ^= 0xc8 // a byte of a message's payload (found by a fuzzer)
	os.WriteFile(filepath.Join(dir, "m.lz4"), compress(t, raw), 0o644)
	if r := replay(t, dir, "verify", "m.lz4"); r.code != 2 || !strings.Contains(r.stderr, "m.lz4: node n6 seq 21: message n4/8/5 does not match its send") {
		t.Fatalf("the edit no longer makes a receipt that does not match its send (pick another byte): verify exit %d: %s", r.code, r.stderr)
	}
	r := replay(t, dir, "shrink", "m.lz4", "builtin:paxos", "-o", "s.lz4")
	if r.code != 2 || !strings.Contains(r.stderr, "m.lz4: node n6 seq 21: message n4/8/5 does not match its send") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("shrink: exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.lz4")); err == nil {
		t.Fatal("shrink wrote an output for a trace it refused")
	}
}

// TestManyGapsOfOneNode: a file whose recorder lost n1's events at many
// places after its last recorded one. info showed every gap (828 MB of
// text for 200,000 of them) and called the file complete; verify passed
// them over and exited 0; the warning counted the places as nodes.
func TestManyGapsOfOneNode(t *testing.T) {
	dir := t.TempDir()
	_, f := smallPaxos(t, dir)
	var last uint64
	for _, ev := range f.Events {
		if ev.Node == "n1" {
			last = ev.Seq
		}
	}
	const gaps = 300
	var lost []record.Gap
	for i := range gaps {
		s := last + 5 + uint64(3*i)
		lost = append(lost, record.Gap{Node: "n1", From: s, To: s + 1, Reason: "recorder fell behind"})
	}
	path := filepath.Join(dir, "gaps.lz4")
	rewriteTrace(t, f, path, lost...)

	r := app(t, "info", path)
	mustOK(t, r)
	if n := strings.Count(r.stdout, "\ngap "); n > 21 || !strings.Contains(r.stdout, fmt.Sprintf("and %d more gap records", gaps-20)) ||
		!strings.Contains(r.stdout, fmt.Sprintf("lost events on the way (%d gap record(s)", gaps)) {
		t.Fatalf("info shows %d gap rows:\n%s", n, r.stdout)
	}
	r = app(t, "info", path, "--json")
	mustOK(t, r)
	if n := strings.Count(r.stdout, `"Reason": "recorder fell behind"`); n != gaps {
		t.Fatalf("info --json lists %d gaps, want %d", n, gaps)
	}
	r = app(t, "verify", path)
	if r.code != 2 || !strings.Contains(r.stderr, "the recording of node n1 lost events on the way") || !strings.Contains(r.stderr, fmt.Sprintf("and %d more gap(s)", gaps-1)) {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	mustOK(t, app(t, "verify", path, "--allow-damaged"))
}

// TestManyNodesNoFileRecords: a header may list 10,000 nodes; of a file
// that records few of them, the warning named every other node, and the
// header's whole list besides, in one line (5 MB for 256-byte names). It
// names eight of each and counts the rest.
func TestManyNodesNoFileRecords(t *testing.T) {
	dir := t.TempDir()
	_, f := smallPaxos(t, dir)
	for i := range 40 {
		f.Header.Nodes = append(f.Header.Nodes, node.ID(fmt.Sprintf("z%02d", i))) // after n1..n7: their indexes hold
	}
	path := filepath.Join(dir, "listed.lz4")
	rewriteTrace(t, f, path)
	// (events: the nodes' state depends on how many there are, so a
	// replay diverges, but reading the trace warns first.)
	r := app(t, "events", path, "--limit", "1")
	line := ""
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "no trace file records node") {
			line = l
		}
	}
	if r.code != 0 || !strings.Contains(line, "z07, and 32 more") || strings.Contains(line, "z08") || len(line) > 400 {
		t.Fatalf("events: exit %d, the warning (%d bytes): %s\n%s", r.code, len(line), line, r.stderr)
	}
}

// TestDamageRightAfterTheHeader: a file whose first record after the
// header is damaged has no event: verify and check said only "no events
// recorded", and the damage was named by info alone.
func TestDamageRightAfterTheHeader(t *testing.T) {
	dir := t.TempDir()
	small, _ := smallPaxos(t, dir)
	good, err := os.ReadFile(small)
	if err != nil {
		t.Fatal(err)
	}
	recs := records(t, decompress(t, good))
	path := filepath.Join(dir, "damaged.lz4")
	if err := os.WriteFile(path, compress(t, recs[0], []byte{0}), 0o644); err != nil { // a record of length 0
		t.Fatal(err)
	}
	for _, args := range [][]string{{"verify", path}, {"check", path, "builtin:paxos"}} {
		r := app(t, args...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, path+": trace corrupt at byte offset") || !strings.Contains(r.stderr, "record length 0") {
			t.Errorf("%s: exit %d\n%s", args[0], r.code, r.stderr)
		}
	}
}

// smallPaxos simulates a second of paxos (seed 1) into dir/small.lz4 and
// reads it back.
func smallPaxos(t *testing.T, dir string) (string, *record.File) {
	t.Helper()
	small := filepath.Join(dir, "small.lz4")
	mustOK(t, app(t, "sim", "paxos", "--seed", "1", "--time", "1s", "-o", small))
	f, err := record.ReadFile(small)
	if err != nil {
		t.Fatal(err)
	}
	return small, f
}
