package latency

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/raftka/raftka/broker/internal/durable"
)

// diskLog is one replica's log in the disk-alone measurement: a file
// written with zeros first (no fdatasync writes the file's metadata for a
// new size), written over in turn.
type diskLog struct {
	f      *os.File
	size   int64
	mu     sync.Mutex // orders writes
	off    int64
	synced uint64 // writes durable; under syncMu
	wrote  uint64 // writes made; under mu
	syncMu sync.Mutex
}

const diskLogBytes = 64 << 20

func openDiskLog(b *testing.B, path string) *diskLog {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < diskLogBytes; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros, off); err != nil {
			b.Fatal(err)
		}
	}
	if err := durable.Fdatasync(f); err != nil {
		b.Fatal(err)
	}
	return &diskLog{f: f, size: diskLogBytes}
}

// append writes rec and returns once it is durable.
func (l *diskLog) append(rec []byte) error {
	l.mu.Lock()
	if l.off+int64(len(rec)) > l.size {
		l.off = 0
	}
	_, err := l.f.WriteAt(rec, l.off)
	l.off += int64(len(rec))
	l.wrote++
	seq := l.wrote
	l.mu.Unlock()
	if err != nil {
		return err
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.synced >= seq {
		return nil
	}
	l.mu.Lock()
	target := l.wrote
	l.mu.Unlock()
	if err := durable.Fdatasync(l.f); err != nil {
		return err
	}
	l.synced = target
	return nil
}

// diskAlone is the floor under any replicated log that fsyncs before it
// acknowledges, on this machine: three logs on the benchmark's disk, as
// three replicas would have, each message written to all three at once
// and acknowledged once the first (the leader's) and the quicker of the
// other two are durable, with no network, Raft or protocol around it.
func diskAlone(b *testing.B, dir string) sendFunc {
	var logs [3]*diskLog
	for i := range logs {
		logs[i] = openDiskLog(b, filepath.Join(dir, fmt.Sprintf("replica-%d.log", i)))
	}
	rec := value()
	return func(done func(error)) {
		go func() {
			leader := make(chan error, 1)
			followers := make(chan error, 2)
			go func() { leader <- logs[0].append(rec) }()
			go func() { followers <- logs[1].append(rec) }()
			go func() { followers <- logs[2].append(rec) }()
			err := <-leader
			if ferr := <-followers; err == nil {
				err = ferr
			}
			done(err)
		}()
	}
}
