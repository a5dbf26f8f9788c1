package durable

import (
	"errors"
	"io"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// Fdatasync makes f's data durable, retrying when a signal interrupts it.
func Fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// SyncDir makes the entries of dir durable: files created, renamed or
// removed in it.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// StartWriteback asks the kernel to begin writing f's dirty pages in
// [off, off+n) to the disk now, without waiting for them: data that no
// fdatasync needs yet then reaches the disk at the pace it was written,
// instead of in one burst when the kernel's writeback comes for it (after
// 30 s by default), which the fsyncs issued meanwhile would wait behind.
// It makes nothing durable; an error only means the pages stay for later.
func StartWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// maxIovecs is the most buffers one pwritev takes (Linux's IOV_MAX).
const maxIovecs = 1024

// WriteAtv writes bufs one after the other at off in f with as few
// pwritev calls as it can: a buffer is written from where it lies, not
// first copied next to the others. Like WriteAt, it writes all or
// returns an error.
func WriteAtv(f *os.File, bufs [][]byte, off int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	bufs = slices.Clone(bufs) // trimmed below as they are written
	for len(bufs) > 0 {
		if len(bufs[0]) == 0 {
			bufs = bufs[1:]
			continue
		}
		var n int
		var werr error
		if err := rc.Write(func(fd uintptr) bool {
			n, werr = unix.Pwritev(int(fd), bufs[:min(len(bufs), maxIovecs)], off)
			return true
		}); err != nil {
			return err
		}
		if errors.Is(werr, unix.EINTR) {
			continue
		}
		if werr != nil {
			return &os.PathError{Op: "pwritev", Path: f.Name(), Err: werr}
		}
		if n == 0 {
			return &os.PathError{Op: "pwritev", Path: f.Name(), Err: io.ErrShortWrite}
		}
		off += int64(n)
		for n > 0 {
			k := min(n, len(bufs[0]))
			bufs[0] = bufs[0][k:]
			n -= k
			if len(bufs[0]) == 0 {
				bufs = bufs[1:]
			}
		}
	}
	return nil
}
