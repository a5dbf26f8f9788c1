package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// writePattern is one way for the replicas of a partition to make a produced
// batch durable, timed on the disk alone (no brokers, no Raft, no network),
// so that a storage design can be judged before it is built.
type writePattern struct {
	name string
	// recycled partition files are written over, as a segment file that
	// retention freed would be; otherwise they grow, as new segments do.
	recycled bool
	// write makes one batch durable on one replica.
	write func(wal, part *durableFile, batch []byte)
}

// The broker today: the batch goes into the replica's Raft log (one file
// shared by its Raft groups, written over spares as broker/raftlog does),
// then, once applied, into the partition's segment file.
func raftLogThenSegment(wal, part *durableFile, batch []byte) {
	wal.syncThrough(wal.append(batch))
	part.syncThrough(part.append(batch))
}

// Each byte once per replica: the batch goes into the partition's own file,
// which is both its Raft log and its segment, and the shared log keeps a
// small record of where it lies.
func partitionFileThenLocation(wal, part *durableFile, batch []byte) {
	part.syncThrough(part.append(batch))
	wal.syncThrough(wal.append(batch[:64]))
}

var writePatterns = []writePattern{
	{name: "today: Raft log, then segment (each byte twice per replica)", write: raftLogThenSegment},
	{name: "today, with recycled segment files", recycled: true, write: raftLogThenSegment},
	{name: "once per replica, into the partition's file (growing)", write: partitionFileThenLocation},
	{name: "once per replica, into the partition's file (recycled)", recycled: true, write: partitionFileThenLocation},
}

// durableFile appends to a file and makes appends durable with fdatasync
// calls that concurrent writers share (group commit), as the broker's Raft
// log does. A file with a wrap size is pre-written to it and then written
// over from its start again, so that its size never changes.
type durableFile struct {
	f    *os.File
	wrap int64

	mu      sync.Mutex
	off     int64
	seq     uint64
	syncing sync.Mutex
	done    uint64 // appends durable, guarded by syncing
}

func newDurableFile(b *testing.B, path string, wrap int64) *durableFile {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	if wrap > 0 {
		chunk := make([]byte, 1<<20)
		for off := int64(0); off < wrap; off += int64(len(chunk)) {
			if _, err := f.WriteAt(chunk, off); err != nil {
				b.Fatal(err)
			}
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	return &durableFile{f: f, wrap: wrap}
}

func (d *durableFile) append(p []byte) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.wrap > 0 && d.off+int64(len(p)) > d.wrap {
		d.off = 0
	}
	if _, err := d.f.WriteAt(p, d.off); err != nil {
		panic(err) // the benchmark's own files; a failed write means no result
	}
	d.off += int64(len(p))
	d.seq++
	return d.seq
}

func (d *durableFile) syncThrough(seq uint64) {
	d.syncing.Lock()
	defer d.syncing.Unlock()
	if d.done >= seq {
		return
	}
	d.mu.Lock()
	upTo := d.seq
	d.mu.Unlock()
	if err := unix.Fdatasync(int(d.f.Fd())); err != nil {
		panic(err)
	}
	d.done = upTo
}

// runWritePattern writes for d with the benchmark's shape (3 replicas of 6
// partitions, 4 batches of 32 KiB in flight per partition replica) and
// returns the produce rate it sustains: bytes made durable on every replica
// per second.
func runWritePattern(b *testing.B, p writePattern, d time.Duration) float64 {
	const replicas, partitions, inFlight, batchBytes = 3, 6, 4, 32 << 10
	dir := b.TempDir()
	batch := make([]byte, batchBytes)
	for i := range batch {
		batch[i] = byte(i * 7)
	}
	type writer struct{ wal, part *durableFile }
	var writers []writer
	for r := 0; r < replicas; r++ {
		wal := newDurableFile(b, filepath.Join(dir, fmt.Sprintf("replica-%d.wal", r)), 128<<20)
		for i := 0; i < partitions; i++ {
			wrap := int64(0)
			if p.recycled {
				wrap = 32 << 20
			}
			part := newDurableFile(b, filepath.Join(dir, fmt.Sprintf("replica-%d-partition-%d", r, i)), wrap)
			for range inFlight {
				writers = append(writers, writer{wal, part})
			}
		}
	}
	var mu sync.Mutex
	var written int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	began := time.Now()
	for _, w := range writers {
		wg.Go(func() {
			n := int64(0)
			for time.Now().Before(stop) {
				p.write(w.wal, w.part, batch)
				n += batchBytes
			}
			mu.Lock()
			written += n
			mu.Unlock()
		})
	}
	wg.Wait()
	return float64(written) / replicas / time.Since(began).Seconds()
}

// BenchmarkWritePatterns times the broker's storage write pattern beside
// the one a Raft log that is also the partition's segment would have, on
// the disk under the test's temporary directory, in alternating rounds.
func BenchmarkWritePatterns(b *testing.B) {
	const rounds, each = 3, 8 * time.Second
	rates := make([][]float64, len(writePatterns))
	for range rounds {
		for i, p := range writePatterns {
			rates[i] = append(rates[i], runWritePattern(b, p, each))
		}
	}
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	today := median(rates[0])
	for i, p := range writePatterns {
		m := median(rates[i])
		b.ReportMetric(m/1e6, fmt.Sprintf("MB/s-%d", i))
		row("disk write pattern alone: "+p.name, fmt.Sprintf("%.0f MB/s produced (median of %d rounds), %.2fx today's", m/1e6, rounds, m/today))
	}
}
