//go:build record

package live

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/replaycheck/replaycheck/internal/buildinfo"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/state"
)

// Recording reports whether this binary was built with -tags record.
const Recording = true

// FlushInterval is how often the recorder hands what it holds to the file.
// It bounds what a kill -9 loses: the events of at most the last interval
// (plus a block being compressed at that moment).
const FlushInterval = 100 * time.Millisecond

// recorder writes one node's trace: one segment per process start,
// appended to the node's file. It never stalls or crashes the node: the
// writer is lossy (a full buffer drops events and records a gap), and a
// write error stops recording with a log line saying where.
type recorder struct {
	w    *record.Writer
	file traceFile
	path string
	cfg  recorderConfig
	seg  int
}

// traceFile is what a recorder writes: an *os.File opened for appending.
type traceFile interface {
	unitTarget
	Stat() (os.FileInfo, error)
	Close() error
}

// openTraceFile opens a node's trace file; tests swap in one that fills up.
var openTraceFile = func(path string) (traceFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// reserverOf is how to keep room in f for a stop notice (nil: no way).
func reserverOf(f traceFile) func(off, n int64) error {
	switch f := f.(type) {
	case *os.File:
		return fileReserver(f)
	case interface{ Reserve(off, n int64) error }:
		return f.Reserve
	}
	return nil
}

func openRecorder(cfg recorderConfig) (*recorder, error) {
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("trace directory: %w", err)
	}
	path := filepath.Join(cfg.Dir, TraceFileName(cfg.Node))
	f, err := openTraceFile(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open trace: %w", err)
	}
	th := cfg.Header
	h := record.Header{
		System: th.System, Nodes: th.Nodes, Recorded: []node.ID{th.Node}, Bug: th.Bug, Params: th.Params,
		Run: th.runInfo(), Types: th.Types, Driver: "live", Start: time.Now().UnixNano(),
		Segment: th.Segment, StateHashes: th.StateHashes,
	}
	if th.StateHashes {
		h.HashBytes = state.DefaultHashBytes
	}
	// Which build recorded: replay tells a divergence from another
	// build apart.
	if b := buildinfo.Describe(); b != "" {
		h.Run[record.RunBuild] = b
	}
	if st.Size() == 0 {
		h.Segment = 0 // a new file (the old one was collected, or none yet)
	}
	uf := &unitFile{f: f, size: st.Size(), reserve: reserverOf(f)}
	r := &recorder{file: f, path: path, cfg: cfg}
	w, err := record.NewWriter(uf, h, record.WriterOptions{
		FlushInterval: FlushInterval,
		Lossy:         true,
		OnError: func(err error) {
			// err says "recording stopped: disk full at seq N ...";
			// the writer also appends that to the trace if it can.
			cfg.Log.Error("recording stopped; the node keeps running", "trace", path, "err", err)
		},
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("start trace segment: %w", err)
	}
	r.w, r.seg = w, h.Segment
	return r, nil
}

// append records one event; errors were already reported through OnError.
func (r *recorder) append(ev *node.Event) { _ = r.w.Append(ev) }

// segment is the number of the segment this process writes.
func (r *recorder) segment() int { return r.seg }

// close ends the segment and closes the file.
func (r *recorder) close(reason string, ts TransportStats, final []state.NodeHash) error {
	var states []record.FinalState
	for _, f := range final {
		states = append(states, record.FinalState(f))
	}
	st := r.w.Stats()
	end := record.End{Reason: reason, Time: time.Now().UnixNano(), Stats: map[string]int64{
		"sent": ts.Sent, "dropped": ts.Dropped, "received": ts.Received, "rejected": ts.Rejected,
		"recorder_dropped": int64(st.Dropped),
	}, States: states}
	err := r.w.Close(end)
	var stopped *record.StoppedError
	if errors.As(err, &stopped) {
		// Recording stopped earlier (or while closing), was logged when
		// it did, and the trace says so: stopping the node is no
		// failure. Say it again as the node goes.
		r.cfg.Log.Warn("the trace ends early", "trace", r.path, "err", err)
		err = nil
	}
	if cerr := r.file.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, record.ErrClosed) {
		return fmt.Errorf("close trace %s: %w", r.path, err)
	}
	return nil
}

// err is the error that stopped recording, if any.
func (r *recorder) err() error { return r.w.Err() }
