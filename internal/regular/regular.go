// Package regular opens and reads files that must be regular files: a
// named pipe blocks an open until a writer comes, and a device (or a
// link to one) never ends, so a path that names either is refused with
// one line saying what it is, before it is opened.
package regular

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Check says why path is not a regular file, or nil if it is (or cannot
// be looked at: the open that follows says why).
func Check(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() {
		return nil
	}
	what := Kind(st.Mode())
	if what == "" {
		what = "not a regular file"
	}
	return &NotRegularError{Path: path, What: what, Mode: st.Mode()}
}

// Kind names what a file of mode m is when it is not a regular file ("a
// named pipe"), or "" when it is, or is of a kind without a name here.
func Kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return ""
}

// NotRegularError is a path that names something other than a regular file.
type NotRegularError struct {
	Path string
	What string // "a named pipe", "a device", ...
	Mode os.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: %s, not a regular file", e.Path, e.What)
}

// Open opens path for reading if it is a regular file.
func Open(path string) (*os.File, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	// Checked again on the open file: the path may have changed between.
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, What: "not a regular file", Mode: st.Mode()}
	}
	return f, nil
}

// ErrTooBig is returned by ReadFile for a file larger than its bound.
var ErrTooBig = errors.New("larger than expected")

// ReadFile reads a regular file whole, refusing one over max bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A file that says it is too big is refused before it is read (a
	// 300 MB file cost 600 MB to refuse), and one that is not is read
	// into a buffer of its size rather than one doubled up to it.
	var b []byte
	if st, err := f.Stat(); err == nil {
		if st.Size() > max {
			return nil, fmt.Errorf("%s: %w (over %d bytes)", path, ErrTooBig, max)
		}
		// The size it says, then whatever it grew by while read.
		b = make([]byte, st.Size())
		n, err := io.ReadFull(f, b)
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return b[:n], nil // it shrank while read
		case err != nil:
			return nil, err
		}
	}
	rest, err := io.ReadAll(io.LimitReader(f, max+1-int64(len(b))))
	if err != nil {
		return nil, err
	}
	b = append(b, rest...)
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w (over %d bytes)", path, ErrTooBig, max)
	}
	return b, nil
}
