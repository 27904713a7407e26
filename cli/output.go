package cli

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/statedb"
)

// atomicFile is an output file that appears under its name only when
// complete: it is written beside the target and renamed at Commit, so an
// interrupted run never leaves a partial file that looks whole. The
// partial file is locked while it is written; creating one removes the
// partials of the same target that killed runs left (statedb.RemoveStale).
type atomicFile struct {
	*os.File
	target string
	done   bool
	// direct: the target is a device or pipe (/dev/null, a FIFO), written
	// in place; renaming a file over it would replace the device.
	direct bool
}

func createAtomic(path string) (*atomicFile, error) {
	// A symbolic link is followed: the file it names is replaced and the
	// link stays a link.
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		path = resolved
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(path); err == nil {
		switch {
		case st.IsDir():
			return nil, badInput("output %s is a directory", path)
		case !st.Mode().IsRegular():
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return nil, badInput("cannot write output %s: %v", path, err)
			}
			return &atomicFile{File: f, target: path, direct: true}, nil
		}
	}
	f, err := statedb.CreatePartial(path)
	if err != nil {
		// Said of the folder: the partial file's name is this
		// program's, not something the user named.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if st, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
			err = errors.New("no such folder")
		} else if serr == nil && !st.IsDir() {
			err = errors.New("not a folder")
		}
		return nil, badInput("cannot create output %s in %s: %v", path, dir, err)
	}
	return &atomicFile{File: f, target: path}, nil
}

// Commit syncs and renames the file into place.
func (f *atomicFile) Commit() error {
	if f.direct {
		f.done = true
		if err := f.Close(); err != nil {
			return fmt.Errorf("write %s: %w", f.target, err)
		}
		return nil
	}
	if err := f.Sync(); err != nil {
		f.Abort()
		return fmt.Errorf("write %s: %w", f.target, withoutPath(err))
	}
	if err := f.Close(); err != nil {
		f.Abort()
		return fmt.Errorf("write %s: %w", f.target, withoutPath(err))
	}
	if err := os.Rename(f.Name(), f.target); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", f.target, err)
	}
	f.done = true
	return nil
}

// Abort removes the partial file; it is a no-op after Commit.
func (f *atomicFile) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.Close()
	if !f.direct {
		os.Remove(f.Name())
	}
}

// writeBytes writes a trace's bytes to path atomically.
func writeBytes(path string, data []byte) error {
	if err := replacesOnlyATrace(path); err != nil {
		return err
	}
	return writeAtomic(path, func(w *atomicFile) error { _, err := w.Write(data); return err })
}

// writeFresh writes a trace the user did not name (the debugger's
// searches) at path, or, when another file is there, at the first free
// path-2.lz4, path-3.lz4 ...: an interactive session must not replace a
// trace it did not write (a recovering walk the user kept from replay
// critical). A file that holds data already is reused. It returns the
// path written.
func writeFresh(path string, data []byte) (string, error) {
	base := strings.TrimSuffix(path, ".lz4")
	for i := 1; i <= 1000; i++ {
		p := path
		if i > 1 {
			p = fmt.Sprintf("%s-%d.lz4", base, i)
		}
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, writeBytes(p, data)
		}
		if err == nil && st.Mode().IsRegular() && st.Size() == int64(len(data)) {
			if have, err := os.ReadFile(p); err == nil && bytes.Equal(have, data) {
				return p, nil
			}
		}
	}
	return "", badInput("%s and 999 files named after it exist: remove some to write another", path)
}

// createTrace is createAtomic for a trace file.
func createTrace(path string) (*atomicFile, error) {
	if err := replacesOnlyATrace(path); err != nil {
		return nil, err
	}
	return createAtomic(path)
}

// replacesOnlyATrace refuses to write a trace over a file that is not
// one (a script, notes): running a verb again over its previous trace is
// usual, replacing anything else by mistake is not.
func replacesOnlyATrace(path string) error {
	if present, trace := existing(path); present && !trace {
		return badInput("%s exists and is not a trace: writing the trace there would replace it (remove it, or name another file)", path)
	}
	return nil
}

// notOverATrace refuses to write what is not a trace (a result file, a
// schedule, an export or report) over a trace, the other way round from
// replacesOnlyATrace: a mistyped -o or --results replaced a recording
// with JSON or text.
func notOverATrace(path, what string) error {
	if present, trace := existing(path); present && trace {
		return badInput("%s is a trace: writing %s there would replace it (name another file, or remove it first)", path, what)
	}
	return nil
}

// notOverInput is notOverATrace that also keeps an existing predicates
// script (.star): outputs that are neither (an export, a report, a
// profile) replaced a recording or a script named by mistake.
func notOverInput(path, what string) error {
	if err := notOverATrace(path, what); err != nil {
		return err
	}
	if present, _ := existing(path); present && strings.HasSuffix(path, ".star") {
		return badInput("%s is a predicates script (.star): writing %s there would replace it (name another file, or remove it first)", path, what)
	}
	return nil
}

// existing tells whether an output's path holds a file that writing it
// would lose (a regular file with something in it), and whether that file
// is a trace. A pipe or device is not opened: it is written in place, and
// opening it to read would wait for a writer. What cannot be read is left
// for createAtomic to say.
func existing(path string) (present, trace bool) {
	head, present := headOf(path, record.TraceMagicLen)
	return present, record.HasTraceMagic(head)
}

// headOf reads up to n first bytes of path when it is a regular file with
// something in it (present); see existing.
func headOf(path string, n int) (head []byte, present bool) {
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		return nil, false
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	head = make([]byte, n)
	k, _ := io.ReadFull(f, head)
	return head[:k], true
}

// startsLikeATrace reads the first bytes of r and says whether they open
// an lz4 frame, as every trace does.
func startsLikeATrace(r io.Reader) bool {
	head := make([]byte, record.TraceMagicLen)
	n, _ := io.ReadFull(r, head)
	return record.HasTraceMagic(head[:n])
}

// writeTrace writes a trace and, when sc is set, the schedule that
// re-runs it beside it (TRACE.schedule), returning the schedule's path
// ("" when none was written).
func writeTrace(path string, trace []byte, sc *sim.Schedule) (string, error) {
	if err := writeBytes(path, trace); err != nil {
		return "", err
	}
	if sc == nil {
		return "", nil
	}
	schedule := schedulePath(path)
	if err := replacesOnlyASchedule(schedule); err != nil {
		return "", err
	}
	return schedule, writeAtomic(schedule, func(w *atomicFile) error { return sc.Format(w) })
}

// schedulePath is where writeTrace puts the schedule of a trace.
func schedulePath(trace string) string {
	return strings.TrimSuffix(trace, ".lz4") + ".schedule"
}

// replacesOnlyASchedule refuses to write a schedule over a file that is
// not one (notes, a trace someone named .schedule), as replacesOnlyATrace
// does for traces.
func replacesOnlyASchedule(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil // a device or a pipe is written in place
	}
	head := make([]byte, len(sim.ScheduleMagic))
	n, _ := io.ReadFull(f, head)
	if string(head[:n]) != sim.ScheduleMagic {
		return badInput("%s exists and is not a schedule: writing the run's schedule there would replace it (remove it, or name another -o)", path)
	}
	return nil
}

// checkWritable refuses an output that cannot be created now, before a
// long search, rather than after it.
func checkWritable(path string) error {
	if st, err := os.Stat(path); err == nil && !st.IsDir() && !st.Mode().IsRegular() {
		// A pipe or a device is written in place: opening it to see
		// blocks until a reader comes, and closing it ends the reader's
		// input before anything is written.
		return nil
	}
	probe, err := createAtomic(path)
	if err != nil {
		return err
	}
	probe.Abort()
	return nil
}

// refuseInput refuses an output that is one of the inputs: writing it
// would destroy what it is made from. what names the output ("the fork").
func refuseInput(out string, inputs []string, what string) error {
	for _, in := range inputs {
		if sameFile(in, out) {
			return badInput("-o %s is also an input; write %s to another file", out, what)
		}
	}
	return nil
}

// withoutPath is a file error without the file's name: an output's is
// said as the output's, not its partial file's (or its own name twice).
func withoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// numberedOutputs checks the traces PREFIX-N.lz4 (N from 2) that a verb
// numbering its traces after out (explore --all) may write, and their
// schedules (OUT.schedule, PREFIX-N.schedule), before it runs: see
// numberedTraces.
func numberedOutputs(out string, inputs []string) error {
	if err := numbered(out, inputs, 2, true); err != nil {
		return err
	}
	return replacesOnlyASchedule(schedulePath(out))
}

// numberedAs says whether the file name is prefix, a plain decimal N >=
// first, and ext.
func numberedAs(name, prefix, ext string, first int) bool {
	n, ok := strings.CutSuffix(strings.TrimPrefix(name, prefix), ext)
	if !ok || !strings.HasPrefix(name, prefix) || n == "" || strings.TrimLeft(n, "0123456789") != "" || n[0] == '0' {
		return false
	}
	i, err := strconv.Atoi(n)
	return err == nil && i >= first
}

// leftoverTraces lists the traces PREFIX-N.lz4 with N past written, the
// last a run numbered: an earlier run's, which a reader of the folder
// would take for this one's, so the run says so (it does not remove
// them: they may be all that is left of that run).
func leftoverTraces(prefix string, written int) []string {
	entries, err := os.ReadDir(filepath.Dir(prefix))
	if err != nil {
		return nil
	}
	var left []string
	for _, e := range entries {
		if !e.IsDir() && numberedAs(e.Name(), filepath.Base(prefix)+"-", ".lz4", written+1) {
			left = append(left, filepath.Join(filepath.Dir(prefix), e.Name()))
		}
	}
	slices.SortFunc(left, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b)) })
	return left
}

// numberedTraces checks the traces PREFIX-N.lz4 (N from first) a verb
// may write after out, before it runs (refused only after the search,
// the search was lost): none may be an input, however the two paths are
// spelled (predict -o in.lz4 replaced its input ./in-1.lz4, compared as
// text), and none that exists may be a folder or anything but a trace.
// out without its folder names the prefix; a file whose number is not a
// plain decimal is not one of them.
func numberedTraces(out string, inputs []string, first int) error {
	return numbered(out, inputs, first, false)
}

// numbered is numberedTraces, and with schedules the schedules
// PREFIX-N.schedule too (a finding that panicked comes with one), in one
// pass over the folder.
func numbered(out string, inputs []string, first int, schedules bool) error {
	prefix := filepath.Base(strings.TrimSuffix(out, ".lz4") + "-")
	for _, in := range inputs {
		if numberedAs(filepath.Base(in), prefix, ".lz4", first) && sameFile(filepath.Dir(in), filepath.Dir(out)) {
			return badInput("-o %s would number its traces over the input %s (%sN.lz4); write them to another file", out, in, strings.TrimSuffix(out, ".lz4")+"-")
		}
	}
	entries, err := os.ReadDir(filepath.Dir(out))
	if err != nil {
		return nil // checkWritable says what is wrong with the folder
	}
	for _, e := range entries {
		p := filepath.Join(filepath.Dir(out), e.Name())
		switch {
		case numberedAs(e.Name(), prefix, ".lz4", first):
			if e.IsDir() {
				return badInput("%s is a directory: writing a trace there would fail after the search (remove it, or name another -o)", p)
			}
			if err := replacesOnlyATrace(p); err != nil {
				return err
			}
		case schedules && numberedAs(e.Name(), prefix, ".schedule", first):
			if err := replacesOnlyASchedule(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// unwrittenTrace is the error of a simulated run whose trace could not be
// written (a full disk, an I/O error), or nil. Such a trace is unreadable
// from where the write failed, and a simulated run is reproducible, so
// nothing is kept: the partial file is dropped and an existing output
// stays as it was (a full disk replaced a good trace with an unreadable
// one and said it held every event up to the error, exit 1).
func unwrittenTrace(out string, runErr error) error {
	var stopped *record.StoppedError
	if !errors.As(runErr, &stopped) {
		return nil
	}
	what := "a write error"
	if stopped.DiskFull {
		what = "a full disk"
	}
	return badInput("cannot write %s: %s (%v); nothing was written, and a file already there is unchanged: the run is reproducible, run it again where there is room", out, what, stopped.Cause)
}
