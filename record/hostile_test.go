package record

import (
	"bytes"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/syncbuf"
)

// readBounded reads data as a trace, failing the test if Read does not
// return within a few seconds.
func readBounded(t *testing.T, name string, data []byte) (*File, error) {
	t.Helper()
	type result struct {
		f   *File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := Read(bytes.NewReader(data), name, int64(len(data)))
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: Read did not return within 10s", name)
		return nil, nil
	}
}

// unclosedTrace is a trace whose writer flushed and was never closed, as a
// killed recorder leaves it.
func unclosedTrace(t *testing.T, n int) ([]byte, int) {
	t.Helper()
	evs := genEvents(n, 21)
	pr := &syncbuf.Buffer{}
	w, err := NewWriter(pr, testHeader(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if err := w.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	data := pr.Bytes()
	w.Close(End{})
	return data, len(evs)
}

// The lz4 frame magic alone, or after an unclosed trace (a restarted
// recorder killed at once), once recursed until the stack overflowed.
func TestFrameMagicAloneEnds(t *testing.T) {
	_, err := readBounded(t, "magic.lz4", frameMagic[:])
	if err == nil {
		t.Fatal("four bytes of lz4 magic read as a trace")
	}
}

func TestUnclosedTraceThenFrameMagic(t *testing.T) {
	unclosed, n := unclosedTrace(t, 300)
	data := append(bytes.Clone(unclosed), frameMagic[:]...)
	f, err := readBounded(t, "restarted.lz4", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Events) != n {
		t.Fatalf("recovered %d of %d events", len(f.Events), n)
	}
	if f.Damage == nil || !f.Damage.Truncated || f.Damage.Offset != int64(len(unclosed)) {
		t.Fatalf("damage %v, want a truncation at byte offset %d", f.Damage, len(unclosed))
	}
}
