package record

import (
	"bytes"
	"io"
	"testing"

	"github.com/replaycheck/replaycheck/node"
)

// BenchmarkAppend is the recorder's hot path: encoding one event into the
// in-memory buffer (compression runs on another goroutine).
func BenchmarkAppend(b *testing.B) {
	evs := genEvents(10000, 1)
	w, err := NewWriter(io.Discard, testHeader(), WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		ev := evs[i%len(evs)]
		if err := w.Append(ev); err != nil {
			b.Fatal(err)
		}
	}
	w.Close(End{})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkRead decodes a whole trace (decompression and record decoding).
func BenchmarkRead(b *testing.B) {
	evs := genEvents(50000, 2)
	data := writeTrace(b, evs, WriterOptions{})
	b.SetBytes(int64(len(data)))
	n := 0
	for b.Loop() {
		rd, err := NewReader(bytes.NewReader(data), "bench", int64(len(data)))
		if err != nil {
			b.Fatal(err)
		}
		var ev node.Event
		for {
			if _, err := rd.Next(&ev); err != nil {
				break
			}
			n++
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}
