package statedb

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/internal/regular"
)

// Outputs that must never be seen half-written (trace files, databases)
// are written beside their target under a hidden name, ".NAME.partial-N",
// and renamed into place when complete; a database replaced while a
// debugger still reads it is moved aside as ".NAME.old-N". A process
// killed before the rename leaves its partial output behind. Each one is
// locked by the process writing or reading it (a database by Badger's
// directory lock, a file by CreatePartial), so one that nobody holds and
// that is older than staleAge is garbage: RemoveStale removes it.

// partialPrefixes are the leftovers' name prefixes for a target.
func partialPrefixes(target string) []string {
	base := "." + filepath.Base(target)
	return []string{base + ".partial-", base + ".old-"}
}

// CreatePartial creates a file beside target to be renamed onto it once
// complete, locked until closed so that RemoveStale leaves it alone. It
// first removes target's stale leftovers.
func CreatePartial(target string) (*os.File, error) {
	// The file is locked a moment after it is created: a few seconds
	// cover that moment many times over.
	RemoveStale(target, 10*time.Second)
	f, err := createExclusive(filepath.Join(filepath.Dir(target), partialPrefixes(target)[0]))
	if err != nil {
		return nil, err
	}
	if _, err := tryLock(f, false); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return f, nil
}

// createExclusive creates a new file named prefix followed by a random
// number. Unlike os.CreateTemp, whose files are 0600, it asks for 0666
// and lets the umask decide, as any other output a user writes: a trace
// or report renamed into place is then as readable as a file they made.
func createExclusive(prefix string) (*os.File, error) {
	for range 100 {
		f, err := os.OpenFile(prefix+strconv.FormatUint(rand.Uint64(), 10), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("create %s*: no unused name after 100 tries", prefix)
}

// RemoveStale removes target's leftovers (".NAME.partial-N",
// ".NAME.old-N" beside it) that no live process holds, and returns how
// many bytes that freed. Partial outputs younger than minAge are kept (one
// may be a moment from being locked); a builder of target, which holds
// its build lock, knows no one else makes them and passes 0. Failures are
// ignored: a leftover that cannot be removed now is tried again next
// time.
func RemoveStale(target string, minAge time.Duration) (freed int64) {
	dir := filepath.Dir(target)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	for _, e := range entries {
		kind := leftover(e.Name(), target)
		if kind < 0 {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			// A database's leftover holds a database's files only.
			sub, err := os.ReadDir(p)
			if _, ok := onlyDatabaseFiles(p, sub, true); err != nil || !ok {
				continue
			}
		}
		info, err := os.Lstat(p)
		// A database moved aside was complete: its readers hold it already.
		if err != nil || info.Mode()&fs.ModeSymlink != 0 || kind == 0 && time.Since(info.ModTime()) < minAge {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		// Held while removing: no one can take it over meanwhile.
		if ok, err := tryLock(f, false); err == nil && ok {
			n := SizeOnDisk(p)
			if os.RemoveAll(p) == nil {
				freed += n
			}
		}
		f.Close()
	}
	return freed
}

// leftover tells whether name is one of target's leftovers: a prefix of
// partialPrefixes followed by the ending this package gives such names
// (leftoverSuffix). It returns the prefix's index, -1 for none.
func leftover(name, target string) int {
	for i, prefix := range partialPrefixes(target) {
		rest, ok := strings.CutPrefix(name, prefix)
		if ok && leftoverSuffix[i].MatchString(rest) {
			return i
		}
	}
	return -1
}

// leftoverSuffix are the endings this package gives its temporary names,
// exactly: a random number (partial), a pid and a time in ns (old). A
// user's ".run.lz4.old-2024-05-01" or ".run.lz4.db.old-2" is theirs.
var leftoverSuffix = [2]*regexp.Regexp{regexp.MustCompile(`^\d+$`), regexp.MustCompile(`^\d+-\d{16,}$`)}

// buildLockPath is the lock file that makes one process at a time build
// the database at dir.
func buildLockPath(dir string) string {
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".lock")
}

// lockBuild makes this process the only one building the database at dir.
// While another holds the lock it calls waiting (once) with the holder's
// pid (0 if unknown) and polls until the lock is free or stop says to
// give up. waited reports whether it had to wait: the other build may
// have made the database this one wanted. unlock removes the lock file
// and releases the lock.
func lockBuild(dir string, waiting func(pid int), stop func() bool) (unlock func(), waited bool, err error) {
	path := buildLockPath(dir)
	for {
		// The lock file is truncated and written: a link there would
		// make that someone else's file.
		if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
			return nil, waited, fmt.Errorf("cannot build the trace database %s: its build lock %s is not a regular file (a link?): remove it", dir, path)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|noFollow, 0o644)
		if err != nil {
			return nil, waited, fmt.Errorf("cannot build the trace database %s (name a writable place with --db): %w", dir, err)
		}
		ok, err := tryLock(f, false)
		if err != nil {
			f.Close()
			return nil, waited, fmt.Errorf("take the build lock of %s: %w", dir, err)
		}
		if ok {
			// The previous holder removes the file when done: the lock
			// counts only on the file that is still at path.
			mine, err1 := f.Stat()
			now, err2 := os.Stat(path)
			if err1 == nil && err2 == nil && os.SameFile(mine, now) {
				f.Truncate(0)
				f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
				return func() {
					os.Remove(path)
					f.Close()
				}, waited, nil
			}
			f.Close()
			continue
		}
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		if !waited && waiting != nil {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:n])))
			waiting(pid)
		}
		waited = true
		if stop != nil && stop() {
			return nil, waited, ErrStopped
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// inUse tells why a database directory cannot be opened for reading: a
// process holds it for writing (an older replay, which opened databases
// read-write). It returns "" when nothing holds it so.
func inUse(dir string) string {
	f, err := os.Open(dir)
	if err != nil {
		return ""
	}
	defer f.Close()
	if ok, err := tryLock(f, true); err != nil || ok {
		return ""
	}
	who := "another process"
	if b, err := regular.ReadFile(filepath.Join(dir, "LOCK"), 64); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			who = fmt.Sprintf("another process (pid %d)", pid)
		}
	}
	return who
}
