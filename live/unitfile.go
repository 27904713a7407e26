package live

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
)

// unitFile writes an lz4 frame stream to a file so that every frame
// header, data block and end mark reaches the file in one write call, and
// a failed write is cut back to the last whole unit. The lz4 encoder
// writes a block's size, data and checksum with separate calls; a process
// killed between them would leave half a block, and the restarted node's
// new frame appended after it would be unreadable. With whole units, a
// killed writer leaves a file that ends at a block boundary, which readers
// join with the next frame.
//
// Layout (lz4 frame format): magic (4 bytes), FLG, BD, optional content
// size (8, FLG bit 3), optional dictionary id (4, FLG bit 0), header
// checksum (1); then blocks: a 4-byte little-endian size (high bit: stored
// uncompressed), the data, and a 4-byte checksum when FLG bit 4 is set; a
// zero size is the end mark, followed by a 4-byte content checksum when FLG
// bit 2 is set.
type unitFile struct {
	f    unitTarget
	size int64 // bytes known to be in the file
	buf  []byte
	flg  byte
	body bool // inside a frame, past its header
	// parsed counts the buffered bytes already parsed (a frame header
	// waiting for its first block).
	parsed int
	// reserve, if set, allocates the file's blocks from off for n
	// bytes without growing it (fallocate's KEEP_SIZE). The file keeps
	// noticeRoom bytes allocated past what it holds: when the disk is
	// full, the write that cannot keep them fails before writing, and
	// the stop notice that follows goes into them. Without it a full
	// disk left no room for the notice, and the trace read as one
	// whose process was killed, which checks clean.
	reserve  func(off, n int64) error
	reserved int64 // the file's blocks are allocated up to here
	full     bool  // a reservation failed for want of space
}

// noticeRoom is the room kept for a stop notice (a few hundred bytes:
// a header, a gap per node and an end record); reserveStep is how far
// past it a reservation reaches, so that one is made per that many
// bytes written.
const (
	noticeRoom  = 16 << 10
	reserveStep = 1 << 20
)

// keepRoom makes sure that noticeRoom bytes stay allocated after n more
// bytes are written. It fails only when the disk is full.
func (u *unitFile) keepRoom(n int64) error {
	if u.reserve == nil || u.full || u.size+n+noticeRoom <= u.reserved {
		return nil
	}
	// A step ahead, so that this is not a call per write; near the end
	// of the disk, just what this write and the notice need.
	for _, ahead := range []int64{n + noticeRoom + reserveStep, n + noticeRoom} {
		err := u.reserve(u.size, ahead)
		switch {
		case err == nil:
			u.reserved = u.size + ahead
			return nil
		case !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT):
			u.reserve = nil // the file system cannot: record without it
			return nil
		}
	}
	u.full = true
	return syscall.ENOSPC
}

// unitTarget is what a unitFile writes to: an *os.File opened for append.
type unitTarget interface {
	Write(p []byte) (int, error)
	Truncate(size int64) error
}

func (u *unitFile) Write(p []byte) (int, error) {
	u.buf = append(u.buf, p...)
	end, err := u.wholeUnits()
	if err != nil {
		return 0, err
	}
	if end == 0 {
		return len(p), nil
	}
	if err := u.keepRoom(int64(end)); err != nil {
		u.buf, u.body, u.parsed = u.buf[:0], false, 0
		return 0, fmt.Errorf("keeping room for a stop notice: %w", err)
	}
	n, err := u.f.Write(u.buf[:end])
	if err != nil {
		// The frame is abandoned (its writer stops at the first
		// error): forget what is buffered of it, so that the next
		// write, a stop notice, starts a new frame.
		u.buf, u.body, u.parsed = u.buf[:0], false, 0
		// Cut a partial write back, so that the file still ends at a
		// unit boundary.
		if n > 0 {
			if terr := u.f.Truncate(u.size); terr != nil {
				return 0, fmt.Errorf("%w (and cutting the partial write back failed: %v)", err, terr)
			}
		}
		return 0, err
	}
	u.size += int64(n)
	u.buf = append(u.buf[:0], u.buf[end:]...)
	return len(p), nil
}

// wholeUnits returns the length of the longest prefix of buf made of whole
// units, advancing the parse state past them. A frame header counts only
// with the block that follows it: a file must not end in a frame with no
// block, which no reader can tell from damage.
func (u *unitFile) wholeUnits() (int, error) {
	off, end := u.parsed, 0
	for {
		rest := u.buf[off:]
		if !u.body {
			if len(rest) < 5 {
				break
			}
			if binary.LittleEndian.Uint32(rest) != 0x184D2204 {
				return 0, fmt.Errorf("trace file writer: lz4 stream out of step (no frame magic at offset %d)", u.size+int64(off))
			}
			flg := rest[4]
			n := 7
			if flg&0x08 != 0 {
				n += 8
			}
			if flg&0x01 != 0 {
				n += 4
			}
			if len(rest) < n {
				break
			}
			u.flg, u.body = flg, true
			off += n
			continue
		}
		if len(rest) < 4 {
			break
		}
		size := binary.LittleEndian.Uint32(rest)
		n := 4
		if size == 0 {
			if u.flg&0x04 != 0 {
				n += 4
			}
			if len(rest) < n {
				break
			}
			u.body = false
			off += n
			end = off
			continue
		}
		n += int(size & 0x7fffffff)
		if u.flg&0x10 != 0 {
			n += 4
		}
		if len(rest) < n {
			break
		}
		off += n
		end = off
	}
	// Remember how far the parse got, relative to what stays buffered.
	u.parsed = off - end
	return end, nil
}
