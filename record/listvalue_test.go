package record_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/record"
)

// Merging (or forking from) thousands of files must not make a header the
// writer refuses.
func TestListValueFitsAHeaderValue(t *testing.T) {
	var paths []string
	for i := range 5000 {
		paths = append(paths, fmt.Sprintf("/var/log/cluster/node-%05d.lz4", i))
	}
	got := record.ListValue(paths)
	if len(got) > record.MaxValueLen || !strings.HasSuffix(got, "more)") || !strings.HasPrefix(got, "/var/log/cluster/node-00000.lz4 ") {
		t.Fatalf("%d bytes: %.80s ... %s", len(got), got, got[max(0, len(got)-40):])
	}
	if got := record.ListValue(paths[:3]); got != strings.Join(paths[:3], " ") {
		t.Fatalf("a short list changed: %s", got)
	}
}
