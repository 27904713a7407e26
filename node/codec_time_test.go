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

// What the encoding would lose of a time is refused where it is sent (a
// hostile pass: the receiver failed, or got something else, and nothing
// named the sender): a time outside the years RFC 3339 writes; a map keyed
// by time.Time with two keys of one instant (one key twice, in map order:
// the same seed gave two traces); a struct embedding time.Time beside
// other fields (time.Time's MarshalBinary dropped them).
func TestTimesThatWouldNotComeBackAreRefused(t *testing.T) {
	type Keyed struct{ At map[time.Time]int }
	type Embeds struct {
		time.Time
		N    int
		Note string
	}
	codec := node.NewCodec().MustRegister(Lease{}, Keyed{}, Embeds{})
	instant := time.Date(2026, 1, 1, 0, 0, 0, 5, time.UTC)
	for _, tc := range []struct {
		m    node.Message
		want string
	}{
		{Lease{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "outside the years 0000-9999"},
		{Lease{time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}, "outside the years 0000-9999"},
		{Keyed{map[time.Time]int{instant: 1, instant.In(time.FixedZone("X", 3600)): 2}}, "two keys of one instant"},
		{Embeds{Time: instant, N: 5, Note: "hello"}, "embeds time.Time beside other fields"},
	} {
		_, _, err := codec.Encode(tc.m)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%T: %v, want an error saying %q", tc.m, err, tc.want)
		}
		if _, err := node.Marshal(tc.m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Marshal %T: %v, want an error saying %q", tc.m, err, tc.want)
		}
	}
	// What does come back is not refused.
	for _, m := range []node.Message{Lease{instant}, Lease{}, Keyed{map[time.Time]int{instant: 1, instant.Add(1): 2}}} {
		if _, _, err := codec.Encode(m); err != nil {
			t.Errorf("%+v: %v", m, err)
		}
	}
}
