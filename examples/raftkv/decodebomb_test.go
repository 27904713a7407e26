package raftkv

import (
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// A trace is input: a forged message of millions of empty entries (two
// bytes each on the wire) decoded into gigabytes before anything looked
// at it. One of more entries than raft puts in one append is refused
// before decoding; one at the limit, of real entries, still decodes.
func TestAMessageOfMoreEntriesThanRaftSendsIsRefused(t *testing.T) {
	full := &raftpb.Message{Type: raftpb.MessageType_MsgApp.Enum(), To: proto.Uint64(2), From: proto.Uint64(1), Term: proto.Uint64(3)}
	for i := range maxEntriesPerMessage {
		full.Entries = append(full.Entries, &raftpb.Entry{Term: proto.Uint64(3), Index: proto.Uint64(uint64(i + 1))})
	}
	b, err := (&Message{M: full}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var m Message
	if err := m.Unmarshal(b); err != nil || len(m.M.Entries) != maxEntriesPerMessage {
		t.Fatalf("a message at the limit: %v", err)
	}
	// One empty entry more: field 7, length 0.
	bomb := append(b, byte(entriesField)<<3|2, 0)
	err = m.Unmarshal(bomb)
	if err == nil || !strings.Contains(err.Error(), "more than raftkv sends") {
		t.Fatalf("a message over the limit: %v", err)
	}
	// The same elements hidden in responses (messages of their own, with
	// entries of their own): a hostile pass's 8 million empty responses
	// took 4 GB.
	hidden := []byte{byte(responsesField)<<3 | 2, 2, byte(entriesField)<<3 | 2, 0}
	var resp []byte
	for range maxEntriesPerMessage/2 + 1 {
		resp = append(resp, hidden...)
	}
	if err := m.Unmarshal(resp); err == nil || !strings.Contains(err.Error(), "more than raftkv sends") {
		t.Fatalf("responses over the limit: %v", err)
	}
}
