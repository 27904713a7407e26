// Package atomicfile writes a whole file or nothing: through a temporary
// file beside it and a rename, so that a reader (or a process writing
// the same file at once) never sees it half written.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes data to path with permissions perm, replacing any file
// there at once.
func Write(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), perm)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
