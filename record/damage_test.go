package record

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/syncbuf"
	"github.com/replaycheck/replaycheck/node"
)

// smallTrace is a closed trace that fits in one lz4 block.
func smallTrace(t *testing.T) []byte {
	t.Helper()
	return writeTrace(t, genEvents(30, 31), WriterOptions{})
}

// Damage in the first lz4 block leaves nothing to recover; the report must
// say that the trace is truncated or corrupt, where, and that nothing could
// be recovered, not that the file is not a trace.
func TestFirstBlockDamageIsReported(t *testing.T) {
	good := smallTrace(t)
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0x10
	badHeader := bytes.Clone(good)
	badHeader[6] ^= 0xff // the frame descriptor's checksum byte
	cases := []struct {
		name      string
		data      []byte
		truncated bool
	}{
		{"cut.lz4", good[:len(good)/2], true},
		{"cut-in-frame-header.lz4", good[:6], true},
		{"magic.lz4", frameMagic[:], true},
		{"magic-prefix.lz4", frameMagic[:2], true},
		{"flipped.lz4", flipped, false},
		{"bad-frame-header.lz4", badHeader, false},
	}
	for _, c := range cases {
		_, err := readBounded(t, c.name, c.data)
		if err == nil {
			t.Errorf("%s: read as a trace", c.name)
			continue
		}
		msg := err.Error()
		var de *DamageError
		if !errors.As(err, &de) {
			t.Errorf("%s: %q is not a damage report", c.name, msg)
			continue
		}
		if errors.Is(err, ErrNotTrace) {
			t.Errorf("%s: damage reported as not a trace: %s", c.name, msg)
		}
		if de.Truncated != c.truncated || !de.Nothing {
			t.Errorf("%s: truncated %v nothing %v, want %v true: %s", c.name, de.Truncated, de.Nothing, c.truncated, msg)
		}
		what := "corrupt"
		if c.truncated {
			what = "truncated"
		}
		for _, want := range []string{c.name + ": ", what, fmt.Sprintf("byte offset %d", de.Offset), "nothing could be recovered"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q does not say %q", c.name, msg, want)
			}
		}
		if strings.Contains(msg, "not a replaycheck trace") {
			t.Errorf("%s: %q", c.name, msg)
		}
		if strings.Count(msg, "\n") > 0 {
			t.Errorf("%s: not one line: %q", c.name, msg)
		}
	}
}

// A file that is not an lz4 frame, or an lz4 file holding something else,
// is not a trace, and is not reported as damage.
func TestForeignFilesAreNotTraces(t *testing.T) {
	cases := map[string][]byte{
		"empty":          {},
		"text":           []byte("hello, this is not a trace\n"),
		"random":         randomBytes(4096),
		"one byte":       {0x05},
		"plain lz4":      plainLZ4([]byte("hello, compressed but not a trace")),
		"lz4 not header": plainLZ4([]byte{2, 'E', 0}),
		"lz4 H not cbor": plainLZ4([]byte("\x05Hello")),
		"zstd":           {0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0},
	}
	for name, data := range cases {
		_, err := readBounded(t, name, data)
		if err == nil {
			t.Errorf("%s: read as a trace", name)
			continue
		}
		var de *DamageError
		if errors.As(err, &de) || !errors.Is(err, ErrNotTrace) {
			t.Errorf("%s: %v: want a not-a-trace error", name, err)
		}
		if !strings.HasPrefix(err.Error(), name+": ") {
			t.Errorf("%s: %q does not name the file", name, err)
		}
	}
}

// multiBlock writes a trace whose lz4 blocks end where the test says
// (after the events before each index in cuts), and returns it with the
// file offset at the end of each of those blocks. bad, if set, is appended
// as a record of unknown mandatory type 0x01 before event bad.
func multiBlock(t *testing.T, evs []*node.Event, cuts []int, bad int) ([]byte, []int64) {
	t.Helper()
	buf := &syncbuf.Buffer{}
	w, err := NewWriter(buf, testHeader(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ends []int64
	next := 0
	for i, ev := range evs {
		if next < len(cuts) && i == cuts[next] {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			ends = append(ends, int64(len(buf.Bytes())))
			next++
		}
		if i == bad {
			w.mu.Lock()
			w.appendRecord(0x01, []byte("bogus"))
			w.mu.Unlock()
		}
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(End{Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), ends
}

// The bytes lost to a malformed record count from the lz4 block that holds
// it, not from the end of whatever the decoder had read ahead.
func TestLostBytesCountFromTheBlockOfTheBadRecord(t *testing.T) {
	evs := genEvents(400, 32)
	data, ends := multiBlock(t, evs, []int{100, 300, 350}, 200)
	f, err := readBounded(t, "bad-record.lz4", data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Damage == nil || f.Damage.Truncated {
		t.Fatalf("damage %v, want corruption", f.Damage)
	}
	if len(f.Events) != 200 {
		t.Fatalf("recovered %d events, want the 200 before the bad record", len(f.Events))
	}
	if f.Damage.Offset != ends[0] {
		t.Fatalf("damage at byte offset %d, want %d (the block holding the bad record): %v", f.Damage.Offset, ends[0], f.Damage)
	}
	want := fmt.Sprintf("%d bytes from byte offset %d", int64(len(data))-ends[0], ends[0])
	if !strings.Contains(f.Damage.Error(), want) || strings.Contains(f.Damage.Error(), "after the file's end") {
		t.Fatalf("%q does not say %q alone", f.Damage.Error(), want)
	}
}

// A record that spans blocks is lost whole when a later block is damaged:
// the lost bytes count from the block where it begins.
func TestLostBytesIncludeARecordsEarlierBlocks(t *testing.T) {
	evs := genEvents(60, 33)
	for _, ev := range evs {
		ev.Kind, ev.MsgType, ev.Payload = node.KindInput, "t.Ping", bytes.Repeat([]byte{byte(ev.Seq)}, 100<<10)
	}
	// Blocks end after events 10 and 20; event 20..29 are each 100 KiB,
	// so the block after the second flush fills inside a record.
	data, ends := multiBlock(t, evs, []int{10, 20}, -1)
	blockStart := ends[1]
	f, err := readBounded(t, "spanning.lz4", data[:len(data)-100])
	if err != nil {
		t.Fatal(err)
	}
	if f.Damage == nil || !f.Damage.Truncated {
		t.Fatalf("damage %v, want a truncation", f.Damage)
	}
	// Every block after blockStart holds part of a 100 KiB record that
	// began in the block before; the last recovered event's record ends
	// inside some block, and the next record's bytes begin there.
	if f.Damage.LostFrom < blockStart || f.Damage.LostFrom >= f.Damage.Offset {
		t.Fatalf("lost from byte offset %d, damage at %d: the partial record began in an earlier block (after %d)", f.Damage.LostFrom, f.Damage.Offset, blockStart)
	}
}
