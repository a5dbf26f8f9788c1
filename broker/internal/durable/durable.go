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
