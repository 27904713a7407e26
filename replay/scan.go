package replay

import (
	"errors"
	"runtime"
	"sync"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// Files are decoded ahead of the loader in batches of scanBatch events, at
// most scanAhead batches ahead per file: decoding (decompression and the
// event records) is most of a load, and the loader's own work (holding or
// spilling each event) is a small part.
const (
	scanBatch = 256
	scanAhead = 64
)

var errScanStopped = errors.New("scan stopped")

// scanFiles reads every file, handing each event to add in file order
// and, within a file, in its order: what reading the files one after the
// other does, and the first error in that order is the one returned. With
// more than one core, files are decoded on up to GOMAXPROCS goroutines
// meanwhile (a live recording is a file per node), and a single file is
// decoded on one goroutine while add runs on another.
func scanFiles(paths []string, add func(fi uint16, ev *node.Event) error) ([]*record.File, error) {
	files := make([]*record.File, 0, len(paths))
	workers := min(len(paths), runtime.GOMAXPROCS(0))
	if runtime.GOMAXPROCS(0) < 2 {
		for fi, p := range paths {
			f, err := record.ScanFile(p, func(ev *node.Event) error { return add(uint16(fi), ev) })
			if err != nil {
				return nil, err
			}
			files = append(files, f)
		}
		return files, nil
	}

	type scanned struct {
		events chan []*node.Event // closed once file and err are set
		file   *record.File
		err    error
	}
	out := make([]*scanned, len(paths))
	for i := range out {
		out[i] = &scanned{events: make(chan []*node.Event, scanAhead)}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		// Files start in order as decoders come free, so the file the
		// loader waits for is always being decoded, or done.
		defer wg.Done()
		slots := make(chan struct{}, workers)
		for i, p := range paths {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
				s := out[i]
				defer close(s.events)
				send := func(b []*node.Event) error {
					select {
					case s.events <- b:
						return nil
					case <-stop:
						return errScanStopped
					}
				}
				batch := make([]*node.Event, 0, scanBatch)
				s.file, s.err = record.ScanFile(p, func(ev *node.Event) error {
					batch = append(batch, ev)
					if len(batch) < scanBatch {
						return nil
					}
					b := batch
					batch = make([]*node.Event, 0, scanBatch)
					return send(b)
				})
				if s.err == nil && len(batch) > 0 {
					s.err = send(batch)
				}
			}()
		}
	}()
	defer func() {
		close(stop) // decoders still running stop at their next batch
		wg.Wait()
	}()
	for fi, s := range out {
		for batch := range s.events {
			for _, ev := range batch {
				if err := add(uint16(fi), ev); err != nil {
					return nil, err
				}
			}
		}
		if s.err != nil {
			return nil, s.err
		}
		files = append(files, s.file)
	}
	return files, nil
}
