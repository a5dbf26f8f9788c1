// Package volume reads the size of the file system that holds a broker's
// data directory: for DescribeLogDirs, the free-space refusal of produce,
// and the disk metrics.
package volume

import "syscall"

// Bytes is the size of dir's file system and what of it an unprivileged
// process may still use.
func Bytes(dir string) (total, usable int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Blocks * uint64(st.Bsize)), int64(st.Bavail * uint64(st.Bsize)), nil
}
