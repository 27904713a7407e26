package record

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/node"
)

// hostileHeaders are headers that break one limit each, with what the
// error must say.
func hostileHeaders() map[string]struct {
	h    Header
	want string
} {
	huge := strings.Repeat("n", 10<<20)
	many := make([]node.ID, MaxNodes+1)
	for i := range many {
		many[i] = node.ID(fmt.Sprintf("n%06d", i))
	}
	with := func(f func(*Header)) Header {
		h := testHeader()
		h.Nodes = append([]node.ID(nil), h.Nodes...)
		f(&h)
		return h
	}
	return map[string]struct {
		h    Header
		want string
	}{
		"huge node name": {with(func(h *Header) { h.Nodes[2] = node.ID(huge) }), fmt.Sprintf("node name %q… (10485760 bytes) is longer than %d bytes", strings.Repeat("n", 32), MaxNameLen)},
		"too many nodes": {with(func(h *Header) { h.Nodes, h.Recorded = many, many[:1] }), fmt.Sprintf("%d nodes (at most %d)", MaxNodes+1, MaxNodes)},
		"no nodes":       {with(func(h *Header) { h.Nodes, h.Recorded = nil, nil }), "lists no nodes"},
		"empty node":     {with(func(h *Header) { h.Nodes[0] = "" }), "empty node name"},
		"newline":        {with(func(h *Header) { h.Nodes[0] = "a\nb" }), `node name "a\nb" contains a control character (U+000A)`},
		"bidi override":  {with(func(h *Header) { h.Nodes[0] = "n1\u202e" }), `contains a control character (U+202E)`},
		"duplicate node": {with(func(h *Header) { h.Nodes[1] = "a" }), `node "a" is listed twice`},
		"recorded stray": {with(func(h *Header) { h.Recorded = []node.ID{"zz"} }), `recorded node "zz" is not in the node list`},
		"long system":    {with(func(h *Header) { h.System = strings.Repeat("s", 300) }), "system name"},
		"no system":      {with(func(h *Header) { h.System = "" }), "empty system name"},
		"long bug":       {with(func(h *Header) { h.Bug = strings.Repeat("b", 300) }), "bug name"},
		"long param key": {with(func(h *Header) { h.Params = map[string]string{strings.Repeat("k", 300): "v"} }), "param key"},
		"long param value": {with(func(h *Header) { h.Params = map[string]string{"k": strings.Repeat("v", MaxValueLen+1)} }),
			fmt.Sprintf("param k: value of %d bytes is longer than %d bytes", MaxValueLen+1, MaxValueLen)},
		"many params":    {with(func(h *Header) { h.Params = manyEntries(MaxEntries + 1) }), fmt.Sprintf("%d params (at most %d)", MaxEntries+1, MaxEntries)},
		"long run key":   {with(func(h *Header) { h.Run = map[string]string{strings.Repeat("k", 300): "v"} }), "run key"},
		"long type":      {with(func(h *Header) { h.Types = []string{strings.Repeat("t", MaxTypeNameLen+1)} }), "message type name"},
		"long driver":    {with(func(h *Header) { h.Driver = strings.Repeat("d", 300) }), "driver name"},
		"neg segment":    {with(func(h *Header) { h.Segment = -1 }), "segment -1"},
		"duplicate type": {with(func(h *Header) { h.Types = []string{"t.Ping", "t.Ping"} }), `message type "t.Ping" is listed twice`},
		"fork clocks":    {with(func(h *Header) { h.ForkClocks = []uint64{9, 9} }), "fork clocks 9 and 9 are not ascending"},
		"many fork clocks": {with(func(h *Header) { h.ForkClocks = make([]uint64, MaxEntries+1) }),
			fmt.Sprintf("%d fork clocks (at most %d)", MaxEntries+1, MaxEntries)},
	}
}

func manyEntries(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprint(i)] = "x"
	}
	return m
}

// A writer refuses to start a trace whose header breaks a limit, so that
// the simulator and live nodes fail with a clear error instead of writing
// a trace every verb chokes on.
func TestWriterRefusesHeadersOverLimits(t *testing.T) {
	for name, c := range hostileHeaders() {
		w, err := NewWriter(io.Discard, c.h, WriterOptions{})
		if err == nil {
			w.Close(End{})
			t.Errorf("%s: header accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %.300q does not say %q", name, err, c.want)
		}
		if len(err.Error()) > 400 {
			t.Errorf("%s: a %d-byte message", name, len(err.Error()))
		}
	}
}

// A reader refuses such a header too (a hostile or foreign writer), with a
// short message naming the file.
func TestReaderRefusesHeadersOverLimits(t *testing.T) {
	for name, c := range hostileHeaders() {
		file := strings.ReplaceAll(name, " ", "-") + ".lz4"
		_, err := readBounded(t, file, rawTrace(headerRec(t, c.h)))
		if err == nil {
			t.Errorf("%s: header accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), file+": ") {
			t.Errorf("%s: %.300q does not say %q", name, err, c.want)
		}
		if len(err.Error()) > 400 {
			t.Errorf("%s: a %d-byte message", name, len(err.Error()))
		}
	}
}

// Gap and end records have bounded strings; a writer clips reasons it is
// given, a reader refuses longer ones.
func TestGapAndEndReasonsBounded(t *testing.T) {
	long := strings.Repeat("r", MaxReasonLen+10)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Gap(Gap{Node: "zz", From: 1}); err == nil || !strings.Contains(err.Error(), `node "zz"`) {
		t.Fatalf("gap of an unknown node: %v", err)
	}
	if err := w.Gap(Gap{Node: "a", From: 0}); err == nil {
		t.Fatal("gap from seq 0 accepted")
	}
	if err := w.Gap(Gap{Node: "a", From: 1, Reason: long}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(End{Reason: long}); err != nil {
		t.Fatal(err)
	}
	f, err := readBounded(t, "clipped.lz4", buf.Bytes())
	if err != nil || f.Damage != nil {
		t.Fatalf("%v %v", err, f.Damage)
	}
	if len(f.Gaps[0].Reason) > MaxReasonLen || len(f.Ends[0].Reason) > MaxReasonLen {
		t.Fatalf("reasons of %d and %d bytes", len(f.Gaps[0].Reason), len(f.Ends[0].Reason))
	}

	h := headerRec(t, testHeader())
	wantDamage(t, "long-gap.lz4", rawTrace(h, cborRec(t, TypeGap, Gap{Node: "a", From: 1, Reason: long})), 0,
		fmt.Sprintf("gap record reason of %d bytes is longer than %d bytes", len(long), MaxReasonLen))
	wantDamage(t, "long-end.lz4", rawTrace(h, cborRec(t, TypeEnd, End{Reason: long})), 0,
		fmt.Sprintf("end record reason of %d bytes is longer than %d bytes", len(long), MaxReasonLen))
	wantDamage(t, "many-stats.lz4", rawTrace(h, cborRec(t, TypeEnd, End{Stats: manyStats(MaxEntries + 1)})), 0,
		fmt.Sprintf("end record with %d stats (at most %d)", MaxEntries+1, MaxEntries))
}

func manyStats(n int) map[string]int64 {
	m := map[string]int64{}
	for i := range n {
		m[fmt.Sprint(i)] = 1
	}
	return m
}

// An event larger than a record may be (a 70 MB message) is refused by
// the writer, and the file stays readable with every event before it: the
// simulator wrote it, exited 0, and every verb then read the file as
// damaged from that record on (a hostile pass).
func TestWriterRefusesARecordOverTheLimit(t *testing.T) {
	evs := genEvents(20, 3)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs[:10] {
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	big := *evs[10]
	big.Kind, big.MsgType, big.Payload = node.KindInput, "t.Ping", make([]byte, MaxRecord)
	if err := w.Append(&big); err == nil || !strings.Contains(err.Error(), "more than a trace record holds") {
		t.Fatalf("a record over the limit: %v", err)
	}
	if err := w.Close(End{Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	f, err := Read(bytes.NewReader(buf.Bytes()), "t.lz4", int64(buf.Len()))
	if err != nil {
		t.Fatalf("the file after a refused record: %v", err)
	}
	if len(f.Events) != 10 || f.Damage != nil {
		t.Fatalf("%d events, damage %v, want the 10 before the refused one", len(f.Events), f.Damage)
	}
}

// A live recorder (a lossy writer) goes on past such an event: it is a
// gap whose reason says why, and the events after it are kept (the
// refusal was an error the recorder ignored, and the event vanished).
func TestLossyWriterRecordsAnOversizedEventAsAGap(t *testing.T) {
	evs := genEvents(20, 3)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(), WriterOptions{Lossy: true})
	if err != nil {
		t.Fatal(err)
	}
	bigAt := 10
	for i, ev := range evs {
		if i == bigAt {
			big := *ev
			big.Kind, big.MsgType, big.Payload = node.KindInput, "t.Ping", make([]byte, MaxRecord)
			ev = &big
		}
		if err := w.Append(ev); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	if err := w.Close(End{Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	f, err := Read(bytes.NewReader(buf.Bytes()), "t.lz4", int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Events) != len(evs)-1 || len(f.Gaps) != 1 || !strings.Contains(f.Gaps[0].Reason, "over the record limit") ||
		f.Gaps[0].Node != evs[bigAt].Node || f.Gaps[0].From != evs[bigAt].Seq {
		t.Fatalf("%d events (want %d), gaps %+v", len(f.Events), len(evs)-1, f.Gaps)
	}
}

// An event's lists are bounded, read and written alike: a clock reading
// takes 2 bytes of a record and 64 decoded, and a forged 326 KB file of 8
// million per event took 2 GB to read. One over the bound is damage to
// the reader and an error (or, lossy, a gap) to the writer; one at it
// goes through.
func TestAnEventsListsAreBounded(t *testing.T) {
	h := testHeader()
	tab := newTables(&h)
	clocks := func(n int) *node.Event {
		ev := &node.Event{Node: h.Nodes[0], Seq: 1, Lamport: 1, Kind: node.KindInit, Time: h.Start}
		ev.Nondet = make([]node.Nondet, n)
		for i := range ev.Nondet {
			ev.Nondet[i] = node.Nondet{Kind: node.NondetClock, Int: h.Start}
		}
		return ev
	}
	for _, c := range []struct {
		n  int
		ok bool
	}{{MaxListElements, true}, {MaxListElements + 1, false}} {
		var e encoder
		if err := encodeEvent(&e, tab, clocks(c.n), h.Start); err != nil {
			t.Fatal(err)
		}
		var ev node.Event
		err := decodeEvent(&decoder{b: e.b}, tab, &ev, h.Start)
		if c.ok != (err == nil) || !c.ok && !strings.Contains(err.Error(), "more than an event holds") {
			t.Errorf("%d clock readings: %v", c.n, err)
		}
		w, err := NewWriter(io.Discard, h, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		err = w.Append(clocks(c.n))
		if c.ok != (err == nil) || !c.ok && !strings.Contains(err.Error(), "more than a trace record holds") {
			t.Errorf("writing %d clock readings: %v", c.n, err)
		}
	}
}

// A header's params (and run values) are bounded together as well as
// each: every segment's header is kept, and a forged file of 20 segments
// of 990 values of 64 KiB each held 1.3 GB.
func TestHeaderValuesAreBoundedTogether(t *testing.T) {
	h := testHeader()
	h.Params = map[string]string{}
	for i := range 2 {
		h.Params[fmt.Sprintf("p%d", i)] = strings.Repeat("v", MaxValueLen)
	}
	if err := h.check(); err == nil || !strings.Contains(err.Error(), "params of 131072 bytes in all") {
		t.Fatalf("check: %v", err)
	}
	delete(h.Params, "p1")
	if err := h.check(); err != nil {
		t.Fatalf("one value at the limit: %v", err)
	}
}
