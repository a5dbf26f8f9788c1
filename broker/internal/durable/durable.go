package durable

import (
	"errors"
	"os"

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
