package record

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/node"
)

// rawRecord is one record of a hand-built trace.
type rawRecord struct {
	typ  byte
	body []byte
}

func headerRec(t *testing.T, h Header) rawRecord {
	t.Helper()
	if h.Magic == "" {
		h.Magic, h.Version = Magic, Version
	}
	if h.Codec == "" {
		h.Codec = node.CodecName
	}
	b, err := headerEnc.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return rawRecord{TypeHeader, b}
}

func cborRec(t *testing.T, typ byte, v any) rawRecord {
	t.Helper()
	b, err := headerEnc.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return rawRecord{typ, b}
}

func eventRec(t *testing.T, ev *node.Event) rawRecord {
	t.Helper()
	h := testHeader()
	var e encoder
	// Encode by hand so that the test can write what no writer would.
	ni, _ := newTables(&h).node(ev.Node)
	e.uvarint(ni)
	e.uvarint(ev.Seq)
	e.uvarint(ev.Lamport)
	e.byte1(byte(ev.Kind))
	e.byte1(0)
	e.varint(0)
	for range 4 {
		e.uvarint(0) // no nondet, sends, timers set or cancelled
	}
	e.uvarint(0) // no disk writes
	return rawRecord{TypeEvent, e.b}
}

func rawTrace(recs ...rawRecord) []byte {
	var raw []byte
	for _, r := range recs {
		raw = appendRecordBytes(raw, r.typ, r.body)
	}
	return plainLZ4(raw)
}

func initEv(id node.ID, seq uint64) *node.Event {
	return &node.Event{Node: id, Seq: seq, Lamport: seq, Kind: node.KindInit}
}

// wantDamage reads data and wants every event before the damage and a
// damage report saying want.
func wantDamage(t *testing.T, name string, data []byte, events int, want string) *File {
	t.Helper()
	f, err := readBounded(t, name, data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if f.Damage == nil {
		t.Fatalf("%s: read without damage; want %q", name, want)
	}
	if len(f.Events) != events {
		t.Fatalf("%s: %d events before the damage, want %d", name, len(f.Events), events)
	}
	if msg := f.Damage.Error(); !strings.Contains(msg, want) || !strings.HasPrefix(msg, name+": ") || !strings.Contains(msg, "byte offset") {
		t.Fatalf("%s: %q does not say %q", name, msg, want)
	}
	return f
}

// After an end record only a new segment's header (or an optional record)
// may follow; anything else is damage, and what came before is kept.
func TestRecordsAfterEndAreDamage(t *testing.T) {
	h := headerRec(t, testHeader())
	end := cborRec(t, TypeEnd, End{Reason: "done"})
	wantDamage(t, "event-after-end.lz4", rawTrace(h, eventRec(t, initEv("a", 1)), end, eventRec(t, initEv("b", 1))),
		1, "record type 0x45 (event) after the segment's end record")
	wantDamage(t, "gap-after-end.lz4", rawTrace(h, end, cborRec(t, TypeGap, Gap{Node: "a", From: 1})),
		0, "record type 0x47 (gap) after the segment's end record")
	wantDamage(t, "end-after-end.lz4", rawTrace(h, end, end), 0, "after the segment's end record")

	// A new segment, or an optional record, may follow an end.
	h1 := testHeader()
	h1.Segment = 1
	ok := rawTrace(h, end, rawRecord{0x80, []byte("ext")}, headerRec(t, h1), eventRec(t, initEv("a", 1)), end)
	f, err := readBounded(t, "two-segments.lz4", ok)
	if err != nil || f.Damage != nil || len(f.Segments) != 2 || len(f.Events) != 1 || !f.Ended {
		t.Fatalf("two segments: err %v damage %v segments %d events %d", err, f.Damage, len(f.Segments), len(f.Events))
	}
}

func TestUnknownCodecRejected(t *testing.T) {
	h := testHeader()
	h.Codec = "json/7"
	_, err := readBounded(t, "codec.lz4", rawTrace(headerRec(t, h)))
	if err == nil || !strings.Contains(err.Error(), `codec.lz4: message codec "json/7" is not supported`) || !strings.Contains(err.Error(), node.CodecName) {
		t.Fatalf("unknown codec: %v", err)
	}
	// In a later segment it is damage after what the first one holds.
	good := headerRec(t, testHeader())
	wantDamage(t, "codec2.lz4", rawTrace(good, eventRec(t, initEv("a", 1)), cborRec(t, TypeEnd, End{}), headerRec(t, h)),
		1, `message codec "json/7" is not supported`)
}

func TestBadGapsAreDamage(t *testing.T) {
	h := headerRec(t, testHeader())
	ev := eventRec(t, initEv("a", 1))
	for name, c := range map[string]struct {
		g    Gap
		want string
	}{
		"unknown-node.lz4": {Gap{Node: "zz", From: 2, To: 3}, `gap record for node "zz", which is not in the header's node list`},
		"from-zero.lz4":    {Gap{Node: "a", From: 0, To: 3}, "gap record for a from seq 0 (seqs start at 1)"},
		"backwards.lz4":    {Gap{Node: "a", From: 5, To: 3}, "gap record for a from seq 5 to seq 3"},
	} {
		wantDamage(t, name, rawTrace(h, ev, cborRec(t, TypeGap, c.g)), 1, c.want)
	}
}

// A seq of 0 is no event's; a first malformed event says so without an
// empty node name.
func TestEventSeqZeroIsDamage(t *testing.T) {
	h := headerRec(t, testHeader())
	f := wantDamage(t, "seq0.lz4", rawTrace(h, eventRec(t, initEv("a", 0))), 0, "seq 0")
	if msg := f.Damage.Error(); strings.Contains(msg, "  ") || strings.Contains(msg, "after  seq") {
		t.Fatalf("%q", msg)
	}
	wantDamage(t, "first.lz4", rawTrace(h, rawRecord{TypeEvent, []byte{0}}), 0, "malformed event record (the first event of the file)")
	wantDamage(t, "second.lz4", rawTrace(h, eventRec(t, initEv("b", 1)), rawRecord{TypeEvent, []byte{0}}), 1, "malformed event record after b seq 1")
}

// A later segment of another system names the segment by its place in the
// file, not by the number its (perhaps hostile) header claims.
func TestSegmentOfAnotherSystem(t *testing.T) {
	other := testHeader()
	other.System = "other"
	f := wantDamage(t, "mixed.lz4", rawTrace(headerRec(t, testHeader()), cborRec(t, TypeEnd, End{}), headerRec(t, other)),
		0, `segment 1 records system "other", but segment 0 records "test"`)
	var de *DamageError
	if !errors.As(f.Damage, &de) {
		t.Fatal("not a damage report")
	}
	_ = bytes.MinRead
}
