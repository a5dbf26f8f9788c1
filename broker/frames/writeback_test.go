package frames

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Frames that no fsync asks for yet are written out as the file grows,
// not left dirty for the kernel's writeback half a minute later: appended
// and never synced, all but the last writebackBytes of them leave the
// page cache's dirty pages within seconds.
func TestUnsyncedFramesAreWrittenOut(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skip("the temporary directory is a tmpfs: its pages are never written out")
	}
	raw, err := os.ReadFile("/proc/sys/vm/dirty_expire_centisecs")
	if err != nil {
		t.Skip(err)
	}
	if expire, _ := strconv.Atoi(strings.TrimSpace(string(raw))); expire < 2000 {
		t.Skipf("the kernel writes dirty pages out after %d cs anyway", expire)
	}

	l := mustOpen(t, dir, DefaultFileBytes)
	const appended = 8 << 20
	for range appended / (64 << 10) {
		if _, err := l.Append(encoded(payloads(0, 1, 64<<10))); err != nil {
			t.Fatal(err)
		}
	}
	f := l.files[len(l.files)-1].f
	var dirty uint64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var st unix.Cachestat_t
		err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Off: 0, Len: 0}, &st, 0)
		if errors.Is(err, unix.ENOSYS) {
			t.Skip("no cachestat(2) in this kernel to count dirty pages")
		}
		if err != nil {
			t.Fatal(err)
		}
		dirty = (st.Dirty + st.Writeback) * uint64(os.Getpagesize())
		if dirty <= writebackBytes+pageBytes {
			return
		}
	}
	t.Fatalf("%d of %d bytes appended are still dirty or being written; want at most %d", dirty, appended, writebackBytes+pageBytes)
}
