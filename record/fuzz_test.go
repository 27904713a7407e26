package record

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"
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
			return
		}
		if tf.Damage != nil && tf.Ended && len(tf.Ends) == 0 {
			t.Fatal("ended without an end record")
		}
		if tf.Damage != nil {
			var de *DamageError
			if !errors.As(tf.Damage, &de) || de.Offset > int64(len(data)) {
				t.Fatalf("damage offset %d beyond %d bytes", tf.Damage.Offset, len(data))
			}
		}
		for _, ev := range tf.Events {
			if ev.Node == "" {
				t.Fatal("event without a node")
			}
		}
	})
}
