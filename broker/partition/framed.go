package partition

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"sort"
	"sync"

	"github.com/raftka/raftka/broker/frames"
)

// segmentFile is a segment's bytes as the log reads them: an *os.File for
// a segment that holds its batches, or a framedFile for one whose batches
// stay in the partition's frame log.
type segmentFile interface {
	io.ReaderAt
	io.WriterAt
	Truncate(size int64) error
	Sync() error
	Stat() (os.FileInfo, error)
	Close() error
}

const framedSuffix = ".framed"

// Locate finds where, in the frame log, the Raft log store wrote the
// command of a partition's Raft entry at index, whose length is cmdLen;
// false if it cannot tell (the entry was not framed).
type Locate func(index uint64, cmdLen int) (frames.Loc, bool)

func framedSegmentName(base int64) string { return fmt.Sprintf("%020d%s", base, framedSuffix) }

// framedRecordBytes is the size of one framedFile record: the batch's
// position in the segment, its frame file, position and length there, the
// offset and leader epoch it was given, and a CRC-32C of all that.
const framedRecordBytes = 48

// extent is one batch of a framed segment.
type extent struct {
	pos        int64      // in the segment, as if it held its batches
	at         frames.Loc // the batch's bytes in the frame log
	baseOffset int64
	epoch      int32
}

func (e extent) end() int64 { return e.pos + int64(e.at.Size) }

// framedFile is a segment whose batches lie where the Raft log store
// wrote them, in the partition's frame log (docs/design/write-once-storage.md):
// each produced byte is then written once per replica. Its own file holds
// one record per batch; a read copies the batches out of the frame log and
// writes into each header the offset and leader epoch the batch was given,
// which lie outside the batch CRC. To the log it reads like a segment that
// holds its batches, so indexing, reads, sidecars and retention are the
// same code for both.
//
// Memory holds a mark every framedMarkBytes of batches, as a segment's
// sparse index does, not a record per batch: a read searches the marks and
// reads the records from the file (the page cache) from there.
type framedFile struct {
	f      *os.File
	frames frames.Reader

	mu    sync.RWMutex // readers read while the state machine appends
	count int          // records
	size  int64        // of the batches, as a segment holding them
	first extent       // the first record, when count > 0
	marks []framedMark
}

// framedMark is where record idx is, the first at or after pos.
type framedMark struct {
	pos int64
	idx int
}

const (
	framedMarkBytes = indexIntervalBytes
	// framedReadRecords is how many records a read takes from the file
	// at a time.
	framedReadRecords = 64
)

// createFramedFile starts an empty framed segment at path.
func createFramedFile(path string, fl frames.Reader) (*framedFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &framedFile{f: f, frames: fl}, nil
}

// openFramedFile reads a framed segment's records up to the first torn or
// damaged one, which it cuts off: records are fsynced before the checkpoint
// that counts their batches.
func openFramedFile(path string, fl frames.Reader) (*framedFile, error) {
	if fl == nil {
		return nil, fmt.Errorf("partition: %s needs the partition's frame log, which is not open", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	ff := &framedFile{f: f, frames: fl}
	r := bufio.NewReaderSize(f, framedReadRecords*framedRecordBytes)
	rec := make([]byte, framedRecordBytes)
	for {
		if _, err := io.ReadFull(r, rec); err != nil {
			break
		}
		e, ok := decodeExtent(rec)
		if !ok || e.pos != ff.size {
			break
		}
		ff.add(e)
	}
	if err := f.Truncate(int64(ff.count) * framedRecordBytes); err != nil {
		_ = f.Close()
		return nil, err
	}
	return ff, nil
}

// add counts record e, the next, in memory; the caller holds mu or owns ff.
func (ff *framedFile) add(e extent) {
	if ff.count == 0 {
		ff.first = e
	}
	if n := len(ff.marks); n == 0 || e.pos-ff.marks[n-1].pos >= framedMarkBytes {
		ff.marks = append(ff.marks, framedMark{pos: e.pos, idx: ff.count})
	}
	ff.count++
	ff.size = e.end()
}

// records reads up to n records from record idx on.
func (ff *framedFile) records(idx, n int) ([]extent, error) {
	buf := make([]byte, n*framedRecordBytes)
	if _, err := ff.f.ReadAt(buf, int64(idx)*framedRecordBytes); err != nil {
		return nil, err
	}
	out := make([]extent, n)
	for i := range out {
		e, ok := decodeExtent(buf[i*framedRecordBytes : (i+1)*framedRecordBytes])
		if !ok {
			return nil, fmt.Errorf("partition: %s: record %d is damaged", ff.f.Name(), idx+i)
		}
		out[i] = e
	}
	return out, nil
}

// markAt is the record index of the last mark at or before pos.
func markAt(marks []framedMark, pos int64) int {
	i := sort.Search(len(marks), func(i int) bool { return marks[i].pos > pos })
	if i == 0 {
		return 0
	}
	return marks[i-1].idx
}

func encodeExtent(e extent) []byte {
	b := make([]byte, framedRecordBytes)
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(e.pos))
	be.PutUint32(b[8:], e.at.File)
	be.PutUint64(b[12:], uint64(e.at.Off))
	be.PutUint32(b[20:], e.at.Size)
	be.PutUint64(b[24:], uint64(e.baseOffset))
	be.PutUint32(b[32:], uint32(e.epoch))
	be.PutUint32(b[36:], crc32.Checksum(b[:36], crc32c))
	return b
}

func decodeExtent(b []byte) (extent, bool) {
	be := binary.BigEndian
	if crc32.Checksum(b[:36], crc32c) != be.Uint32(b[36:]) {
		return extent{}, false
	}
	e := extent{pos: int64(be.Uint64(b[0:])), at: frames.Loc{File: be.Uint32(b[8:]), Off: int64(be.Uint64(b[12:])), Size: be.Uint32(b[20:])},
		baseOffset: int64(be.Uint64(b[24:])), epoch: int32(be.Uint32(b[32:]))}
	return e, e.at.Size >= batchHeaderLength
}

// firstFrameFile is the frame file of the segment's first batch.
func (ff *framedFile) firstFrameFile() (uint32, bool) {
	ff.mu.RLock()
	defer ff.mu.RUnlock()
	return ff.first.at.File, ff.count > 0
}

// appendBatch adds the batch at at, given baseOffset and epoch, at the
// segment's end.
func (ff *framedFile) appendBatch(at frames.Loc, baseOffset int64, epoch int32) error {
	ff.frames.HoldData(at.File) // before the frame log can take its file
	ff.mu.Lock()
	defer ff.mu.Unlock()
	e := extent{pos: ff.size, at: at, baseOffset: baseOffset, epoch: epoch}
	if _, err := ff.f.WriteAt(encodeExtent(e), int64(ff.count)*framedRecordBytes); err != nil {
		return err
	}
	ff.add(e)
	return nil
}

var errFramedWrite = errors.New("partition: a framed segment takes batches by location only")

// WriteAt implements segmentFile; batches reach a framed segment through
// appendBatch.
func (ff *framedFile) WriteAt([]byte, int64) (int, error) { return 0, errFramedWrite }

// ReadAt implements io.ReaderAt over the batches as a segment holding them
// would have them, with their offsets and leader epochs in their headers.
func (ff *framedFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("partition: negative read position %d", off)
	}
	ff.mu.RLock()
	count, marks := ff.count, ff.marks
	ff.mu.RUnlock()
	n := 0
	for idx := markAt(marks, off); idx < count && n < len(p); {
		batch, err := ff.records(idx, min(framedReadRecords, count-idx))
		if err != nil {
			return n, err
		}
		idx += len(batch)
		for _, e := range batch {
			if n == len(p) {
				break
			}
			if e.end() <= off+int64(n) {
				continue // before the range
			}
			from := off + int64(n) - e.pos // within the batch
			chunk := p[n:min(len(p), n+int(int64(e.at.Size)-from))]
			if err := ff.frames.ReadAt(e.at.File, chunk, e.at.Off+from); err != nil {
				return n, err
			}
			patchExtentHeader(chunk, from, e)
			n += len(chunk)
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// patchExtentHeader writes e's offset and epoch into the part of its
// batch's header that chunk, which starts from bytes into the batch, holds.
func patchExtentHeader(chunk []byte, from int64, e extent) {
	if from >= batchHeaderLength {
		return
	}
	var hdr [batchHeaderLength]byte
	patchBatch(hdr[:], e.baseOffset, e.epoch)
	for _, field := range [][2]int64{{offBaseOffset, offBaseOffset + 8}, {offLeaderEpoch, offLeaderEpoch + 4}} {
		for j := max(field[0], from); j < field[1] && j-from < int64(len(chunk)); j++ {
			chunk[j-from] = hdr[j]
		}
	}
}

// Truncate implements segmentFile: size must be where a batch ends.
func (ff *framedFile) Truncate(size int64) error {
	ff.mu.Lock()
	defer ff.mu.Unlock()
	idx := ff.count
	if size != ff.size {
		idx = -1
		for i := markAt(ff.marks, size); i < ff.count && idx < 0; {
			batch, err := ff.records(i, min(framedReadRecords, ff.count-i))
			if err != nil {
				return err
			}
			for j, e := range batch {
				if e.pos == size {
					idx = i + j
					break
				}
			}
			i += len(batch)
		}
		if idx < 0 {
			return fmt.Errorf("partition: framed segment cut at %d, not at a batch", size)
		}
	}
	if err := ff.f.Truncate(int64(idx) * framedRecordBytes); err != nil {
		return err
	}
	keep := sort.Search(len(ff.marks), func(i int) bool { return ff.marks[i].idx >= idx })
	ff.marks = slices.Clone(ff.marks[:keep]) // readers may hold the old slice
	ff.count, ff.size = idx, size
	return nil
}

// Sync implements segmentFile: the records are durable; the batches were
// made durable by the Raft log store before they were committed.
func (ff *framedFile) Sync() error { return ff.f.Sync() }

// Stat implements segmentFile: the records file's, with the segment's size.
func (ff *framedFile) Stat() (os.FileInfo, error) {
	st, err := ff.f.Stat()
	if err != nil {
		return nil, err
	}
	ff.mu.RLock()
	defer ff.mu.RUnlock()
	return framedInfo{st, ff.size}, nil
}

func (ff *framedFile) Close() error { return ff.f.Close() }

type framedInfo struct {
	os.FileInfo
	size int64
}

func (fi framedInfo) Size() int64 { return fi.size }
