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
	codec := node.NewCodec().MustRegister(Lease{}, Keyed{}, Embeds{}, Deep{}, Stamp{}, Quiet{}, Owned{}, Boxed{})
	instant := time.Date(2026, 1, 1, 0, 0, 0, 5, time.UTC)
	for _, tc := range []struct {
		m    node.Message
		want string
	}{
		{Lease{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "outside the years 0000-9999"},
		{Lease{time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}, "outside the years 0000-9999"},
		{Keyed{map[time.Time]int{instant: 1, instant.In(time.FixedZone("X", 3600)): 2}}, "two keys that encode alike"},
		{Deep{Stamp: Stamp{instant}, From: "n1"}, "embeds time.Time beside other fields"},
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
	// What does come back is not refused: a struct embedding time.Time
	// alone, or beside fields CBOR does not encode, or with an encoding
	// of its own; a time behind an interface (it travels as text).
	for _, m := range []node.Message{Lease{instant}, Lease{}, Keyed{map[time.Time]int{instant: 1, instant.Add(1): 2}},
		Stamp{instant}, Quiet{Time: instant, note: "x", Skip: 3}, Owned{Time: instant, N: 4}, Boxed{V: instant}} {
		if _, _, err := codec.Encode(m); err != nil {
			t.Errorf("%+v: %v", m, err)
		}
	}
}

// Stamp embeds time.Time alone: its MarshalBinary encodes all of it.
type Stamp struct{ time.Time }

// Deep embeds a time.Time through Stamp, beside a field it would drop.
type Deep struct {
	Stamp
	From string
}

// Quiet embeds time.Time beside fields CBOR does not encode.
type Quiet struct {
	time.Time
	note string
	Skip int `cbor:"-"`
}

// Owned embeds time.Time but encodes itself, every field.
type Owned struct {
	time.Time
	N int
}

func (o Owned) MarshalCBOR() ([]byte, error) {
	return node.Marshal(struct {
		T time.Time
		N int
	}{o.Time, o.N})
}

func (o *Owned) UnmarshalCBOR(b []byte) error {
	var v struct {
		T time.Time
		N int
	}
	if err := node.Unmarshal(b, &v); err != nil {
		return err
	}
	o.Time, o.N = v.T, v.N
	return nil
}

// Boxed holds a time behind an interface.
type Boxed struct{ V any }

// A trace written before the sender refused them may hold a time RFC
// 3339 cannot: its decode says why.
func TestTimesOutsideRFC3339SayWhyOnDecode(t *testing.T) {
	codec := node.NewCodec().MustRegister(Lease{})
	payload := []byte{0xa1, 0x66, 'E', 'x', 'p', 'i', 'r', 'y', 0x74}
	payload = append(payload, "10000-01-01T00:00:00Z"[:20]...)
	if _, err := codec.Decode("node_test.Lease", payload); err == nil || !strings.Contains(err.Error(), "years 0000-9999") {
		t.Fatalf("a year-10000 time on decode: %v", err)
	}
}
