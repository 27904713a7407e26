package state_test

import (
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/replaycheck/replaycheck/state"
)

// TestProtoMessageBookkeepingIsNotState: a protoc-gen-go message's
// runtime fields (type information set lazily, the size cache set by
// marshalling, unknown bytes) are not its value. Flattened, they made a
// raft message megabytes of reflection internals in `replay why`; hashed,
// marshalling a message changed its hash.
func TestProtoMessageBookkeepingIsNotState(t *testing.T) {
	m := &raftpb.Message{Type: raftpb.MsgApp.Enum(), Index: proto.Uint64(7), Entries: []*raftpb.Entry{{Index: proto.Uint64(8)}}}
	before := state.Hash(m)
	leaves := state.Flatten(m)
	if _, err := proto.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if after := state.Hash(m); after != before {
		t.Errorf("marshalling changed the message's hash: %x, then %x", before, after)
	}
	var paths []string
	for _, l := range leaves {
		paths = append(paths, l.Path)
	}
	all := strings.Join(paths, " ")
	if strings.Contains(all, "state") || strings.Contains(all, "sizeCache") || strings.Contains(all, "unknownFields") ||
		!strings.Contains(all, "Index") || !strings.Contains(all, "Entries[0].Index") || len(leaves) > 40 {
		t.Fatalf("%d leaves: %s", len(leaves), all)
	}
}
