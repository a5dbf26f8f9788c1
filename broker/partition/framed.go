package partition

import (
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
type framedFile struct {
	f      *os.File
	frames *frames.Log

	mu      sync.RWMutex // readers read while the state machine appends
	extents []extent
	size    int64
}

// createFramedFile starts an empty framed segment at path.
func createFramedFile(path string, fl *frames.Log) (*framedFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &framedFile{f: f, frames: fl}, nil
}

// openFramedFile reads a framed segment's records up to the first torn or
// damaged one, which it cuts off: records are fsynced before the checkpoint
// that counts their batches.
func openFramedFile(path string, fl *frames.Log) (*framedFile, error) {
	if fl == nil {
		return nil, fmt.Errorf("partition: %s needs the partition's frame log, which is not open", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	ff := &framedFile{f: f, frames: fl}
	for len(b) >= framedRecordBytes {
		e, ok := decodeExtent(b[:framedRecordBytes])
		if !ok || e.pos != ff.size {
			break
		}
		ff.extents = append(ff.extents, e)
		ff.size = e.end()
		b = b[framedRecordBytes:]
	}
	if err := f.Truncate(int64(len(ff.extents)) * framedRecordBytes); err != nil {
		f.Close()
		return nil, err
	}
	return ff, nil
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
	if len(ff.extents) == 0 {
		return 0, false
	}
	return ff.extents[0].at.File, true
}

// appendBatch adds the batch at at, given baseOffset and epoch, at the
// segment's end.
func (ff *framedFile) appendBatch(at frames.Loc, baseOffset int64, epoch int32) error {
	ff.mu.Lock()
	defer ff.mu.Unlock()
	e := extent{pos: ff.size, at: at, baseOffset: baseOffset, epoch: epoch}
	if _, err := ff.f.WriteAt(encodeExtent(e), int64(len(ff.extents))*framedRecordBytes); err != nil {
		return err
	}
	ff.extents = append(ff.extents, e)
	ff.size = e.end()
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
	extents := ff.extents
	ff.mu.RUnlock()
	i := sort.Search(len(extents), func(i int) bool { return extents[i].end() > off })
	n := 0
	for ; i < len(extents) && n < len(p); i++ {
		e := extents[i]
		from := off + int64(n) - e.pos // within the batch
		chunk := p[n:min(len(p), n+int(int64(e.at.Size)-from))]
		if err := ff.frames.ReadAt(e.at.File, chunk, e.at.Off+from); err != nil {
			return n, err
		}
		patchExtentHeader(chunk, from, e)
		n += len(chunk)
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
	i := sort.Search(len(ff.extents), func(i int) bool { return ff.extents[i].pos >= size })
	if i < len(ff.extents) && ff.extents[i].pos != size || i == len(ff.extents) && ff.size != size {
		return fmt.Errorf("partition: framed segment cut at %d, not at a batch", size)
	}
	if err := ff.f.Truncate(int64(i) * framedRecordBytes); err != nil {
		return err
	}
	ff.extents = slices.Clone(ff.extents[:i]) // readers may hold the old slice
	ff.size = size
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
