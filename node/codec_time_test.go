package node_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
)

type Lease struct{ Expiry time.Time }

// A time.Time in a message or on Disk keeps its nanoseconds (the first
// codec kept whole seconds without a word, and a new user's lock server
// that restored a lease from disk re-granted it early), encodes an
// instant the same in any time zone, and a trace recorded with the first
// codec is encoded as it was.
func TestTimesKeepTheirNanoseconds(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 4, 314267746, time.FixedZone("CET", 3600))

	b, err := node.Marshal(Lease{at})
	if err != nil {
		t.Fatal(err)
	}
	var got Lease
	if err := node.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Expiry.Equal(at) {
		t.Fatalf("Disk round trip: %v, want %v", got.Expiry, at)
	}

	codec := node.NewCodec().MustRegister(Lease{})
	name, p, err := codec.Encode(Lease{at})
	if err != nil {
		t.Fatal(err)
	}
	m, err := codec.Decode(name, p)
	if err != nil {
		t.Fatal(err)
	}
	if e := m.(Lease).Expiry; !e.Equal(at) || e.Nanosecond() != at.Nanosecond() {
		t.Fatalf("message round trip: %v, want %v", e, at)
	}
	if _, utc, _ := codec.Encode(Lease{at.UTC()}); !bytes.Equal(p, utc) {
		t.Fatalf("one instant in two zones encodes differently: %x and %x", p, utc)
	}

	v1, err := codec.ForTrace("cbor-core-deterministic/1")
	if err != nil {
		t.Fatal(err)
	}
	_, old, err := v1.Encode(Lease{at})
	if err != nil {
		t.Fatal(err)
	}
	m, err = codec.Decode(name, old)
	if err != nil {
		t.Fatal(err)
	}
	if e := m.(Lease).Expiry; e.Unix() != at.Unix() || e.Nanosecond() != 0 || bytes.Equal(old, p) {
		t.Fatalf("the first codec's encoding changed: %x decodes to %v", old, e)
	}
	if same, _ := codec.ForTrace(node.CodecName); same != codec {
		t.Fatal("ForTrace of the current codec is not the codec itself")
	}
	if _, err := codec.ForTrace("json/7"); err == nil || !strings.Contains(err.Error(), `"json/7" is not supported`) {
		t.Fatalf("an unknown codec: %v", err)
	}
}

// RFC 3339 holds the years 0000-9999: a time outside them encodes but
// cannot be read back, and the error says why.
func TestTimesOutsideRFC3339SaySo(t *testing.T) {
	codec := node.NewCodec().MustRegister(Lease{})
	name, p, err := codec.Encode(Lease{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := codec.Decode(name, p); err == nil || !strings.Contains(err.Error(), "years 0000-9999") {
		t.Fatalf("year 10000: %v", err)
	}
}
