package predicates_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pierrec/lz4/v4"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/system"
)

// TestLoadOnATraceWithNoNodes: a header that lists no nodes is an error
// saying so when a script loads, not an index-out-of-range panic.
func TestLoadOnATraceWithNoNodes(t *testing.T) {
	// The writer refuses such a header, so the file is made by hand as
	// an attacker would: one lz4 frame holding one header record.
	hb, err := node.Marshal(record.Header{Magic: record.Magic, Version: record.Version, System: "paxos", Bug: "none", Codec: node.CodecName, Driver: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := lz4.NewWriter(&buf)
	body := append(binary.AppendUvarint(nil, uint64(len(hb)+1)), record.TypeHeader)
	if _, err := zw.Write(append(body, hb...)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	tr, err := replay.FromBytes(buf.Bytes(), "empty.lz4")
	if err != nil {
		// Refusing it when reading is as good; it must say why.
		if !strings.Contains(err.Error(), "no nodes") {
			t.Fatalf("reading a trace with no nodes: %v, want an error saying it has no nodes", err)
		}
		return
	}
	r, err := replay.New(tr, system.NewRegistry(paxos.System), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "p.star")
	if err := os.WriteFile(script, []byte("A = table(\"paxos.Agent\")\nsafety(\"Any\", lambda: len(A) >= 0)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = predicates.Load(script, r, predicates.Options{To: -1})
	if err == nil || !strings.Contains(err.Error(), "no nodes") {
		t.Fatalf("Load on a trace with no nodes: %v, want an error saying it has no nodes", err)
	}
}
