package record

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
)

// FuzzReader feeds arbitrary bytes to the reader. It must never panic or
// hang, and whatever it returns must be consistent: an error that is either
// "not a trace" or a damage report, never both a clean end and damage.
// Run locally with: go test ./record -run=^$ -fuzz=FuzzReader -fuzztime=60s
func FuzzReader(f *testing.F) {
	evs := genEvents(200, 11)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, testHeader(), WriterOptions{})
	if err != nil {
		f.Fatal(err)
	}
	for _, ev := range evs {
		w.Append(ev)
	}
	w.Close(End{Reason: "seed"})
	good := buf.Bytes()
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(good[:40])
	f.Add([]byte{})
	f.Add([]byte("not a trace"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The fuzzing engine does not notice an input that never returns;
		// a watchdog turns a hang into a failure with the input saved.
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				panic(fmt.Sprintf("Read did not return within 10s on %d bytes", len(data)))
			}
		}()
		tf, err := Read(bytes.NewReader(data), "fuzz.lz4", int64(len(data)))
		if err != nil {
			if tf != nil {
				t.Fatal("error with a file")
			}
			var de *DamageError
			if errors.As(err, &de) == errors.Is(err, ErrNotTrace) {
				t.Fatalf("an error that is not exactly one of damage and not-a-trace: %v", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a message of several lines: %q", err)
			}
			return
		}
		if tf.Damage != nil && tf.Ended && len(tf.Ends) == 0 {
			t.Fatal("ended without an end record")
		}
		if tf.Damage != nil {
			var de *DamageError
			if !errors.As(tf.Damage, &de) || de.Offset > int64(len(data)) || de.LostFrom > de.Offset {
				t.Fatalf("damage offset %d (lost from %d) beyond %d bytes", tf.Damage.Offset, tf.Damage.LostFrom, len(data))
			}
		}
		for _, ev := range tf.Events {
			if ev.Node == "" {
				t.Fatal("event without a node")
			}
		}
	})
}

// FuzzDecodeEvent feeds arbitrary event record bodies to the decoder, with
// the tables of a typical header. It must never panic, and what it accepts
// must survive re-encoding: decode(encode(decode(b))) = decode(b).
func FuzzDecodeEvent(f *testing.F) {
	h := testHeader()
	tab := newTables(&h)
	for _, ev := range genEvents(40, 13) {
		var e encoder
		if err := encodeEvent(&e, tab, ev, h.Start); err != nil {
			f.Fatal(err)
		}
		f.Add(e.b)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 1, 1, 2, 0, 0})
	f.Fuzz(func(t *testing.T, body []byte) {
		var ev node.Event
		if err := decodeEvent(&decoder{b: body}, tab, &ev, h.Start); err != nil {
			return
		}
		if ev.Node == "" {
			t.Fatal("decoded an event without a node")
		}
		var e encoder
		if err := encodeEvent(&e, tab, &ev, h.Start); err != nil {
			t.Fatalf("a decoded event does not encode: %v", err)
		}
		var again node.Event
		if err := decodeEvent(&decoder{b: e.b}, tab, &again, h.Start); err != nil {
			t.Fatalf("a re-encoded event does not decode: %v", err)
		}
		if !reflect.DeepEqual(normalize(&ev), normalize(&again)) {
			t.Fatalf("re-encoding changed the event:\n%+v\n%+v", ev, again)
		}
	})
}

// FuzzHeader feeds arbitrary header record bodies (CBOR) to the header
// decoder. It must never panic; what it accepts must be within the
// documented limits and survive re-encoding.
func FuzzHeader(f *testing.F) {
	h := testHeader()
	h.Magic, h.Version, h.Codec = Magic, Version, node.CodecName
	h.Params = map[string]string{"k": "v"}
	h.Run = map[string]string{"seed": "1"}
	good, err := headerEnc.Marshal(h)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{0xa0})
	f.Add([]byte{0xbf, 0xff})
	f.Add([]byte("not cbor"))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := decodeHeader(body)
		if err != nil {
			if got != nil {
				t.Fatal("a header with an error")
			}
			return
		}
		b, err := headerEnc.Marshal(got)
		if err != nil {
			t.Fatalf("an accepted header does not encode: %v", err)
		}
		again, err := decodeHeader(b)
		if err != nil {
			t.Fatalf("a re-encoded header is rejected: %v", err)
		}
		if b2, _ := headerEnc.Marshal(again); !bytes.Equal(b, b2) {
			t.Fatalf("re-encoding changed the header:\n%+v\n%+v", got, again)
		}
	})
}
