package record

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/replaycheck/replaycheck/node"
)

// DecodeAliasing decodes what Decode decodes; its payloads are b's own
// bytes, and growing one does not write into b.
func TestDecodeAliasingIsDecodeWithoutCopies(t *testing.T) {
	c := NewCodec()
	aliased := 0
	for i, ev := range genEvents(2000, 5) {
		rec, err := c.Append(nil, ev)
		if err != nil {
			t.Fatal(err)
		}
		before := bytes.Clone(rec)
		var copied, alias node.Event
		if err := c.Decode(rec, &copied); err != nil {
			t.Fatal(err)
		}
		if err := c.DecodeAliasing(rec, &alias); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(copied, alias) {
			t.Fatalf("event %d:\nDecode         %+v\nDecodeAliasing %+v", i, copied, alias)
		}
		if len(alias.Payload) == 0 {
			continue
		}
		aliased++
		alias.Payload[0] ^= 0xff // the record's own byte
		if bytes.Equal(rec, before) {
			t.Fatalf("event %d: the payload was copied", i)
		}
		alias.Payload[0] ^= 0xff
		_ = append(alias.Payload, 0xaa, 0xbb, 0xcc)
		if !bytes.Equal(rec, before) {
			t.Fatalf("event %d: appending to the payload wrote into the record", i)
		}
	}
	if aliased == 0 {
		t.Fatal("no event had a payload")
	}
}
