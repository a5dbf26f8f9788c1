package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// DefaultSegmentBytes is when the active segment file rolls over.
const DefaultSegmentBytes = 128 << 20

type segment struct {
	base  int64 // first offset in the file
	path  string
	f     *os.File
	size  int64
	dirty bool // written since its last fsync
}

// batchRef locates one batch on disk, with what the producer table needs.
type batchRef struct {
	base, last    int64
	maxTimestamp  int64
	epoch         int32
	seg           *segment
	pos           int64
	size          int32
	producerID    int64
	producerEpoch int16
	baseSequence  int32
}

func (b batchRef) producerHeader() header {
	return header{BaseOffset: b.base, LastDelta: int32(b.last - b.base), ProducerID: b.producerID,
		ProducerEpoch: b.producerEpoch, BaseSequence: b.baseSequence}
}

type epochStart struct {
	Epoch int32
	Start int64
}

// Log is a partition's segmented log. Writers (the state machine) hold mu;
// readers take it shared only to find file positions and read with ReadAt.
type Log struct {
	dir          string
	segmentBytes int64

	mu       sync.RWMutex
	segs     []*segment
	batches  []batchRef
	next     int64 // log end offset: one past the last applied record
	start    int64 // log start offset
	epochs   []epochStart
	producer producers
	changed  chan struct{} // closed and replaced whenever next moves
}

func segmentName(base int64) string { return fmt.Sprintf("%020d.log", base) }

func openLog(dir string, segmentBytes int64, ck checkpoint) (*Log, error) {
	if segmentBytes <= 0 {
		segmentBytes = DefaultSegmentBytes
	}
	l := &Log{dir: dir, segmentBytes: segmentBytes, producer: producers{}, changed: make(chan struct{}),
		next: ck.NextOffset, start: ck.LogStartOffset}
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	end := int64(0)
	for _, name := range names {
		base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(name), ".log"), 10, 64)
		if err != nil {
			continue
		}
		if base >= ck.NextOffset && base > 0 {
			// Written after the last checkpoint: Raft replays those entries.
			if err := os.Remove(name); err != nil {
				return nil, err
			}
			continue
		}
		f, err := os.OpenFile(name, os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		seg := &segment{base: base, path: name, f: f}
		if err := l.scanSegment(seg, ck.NextOffset); err != nil {
			f.Close()
			return nil, err
		}
		l.segs = append(l.segs, seg)
		if n := len(l.batches); n > 0 {
			end = l.batches[n-1].last + 1
		}
	}
	if end < ck.NextOffset && ck.NextOffset > ck.LogStartOffset {
		l.Close()
		return nil, fmt.Errorf("partition %s: log ends at %d but checkpoint says %d: refusing to start with missing data", dir, end, ck.NextOffset)
	}
	l.dropBefore(l.start)
	return l, nil
}

// scanSegment indexes a segment's batches, truncating anything at or beyond
// limit and any torn write at the tail.
func (l *Log) scanSegment(seg *segment, limit int64) error {
	st, err := seg.f.Stat()
	if err != nil {
		return err
	}
	var hdr [batchHeaderLength]byte
	pos := int64(0)
	for pos+batchHeaderLength <= st.Size() {
		if _, err := seg.f.ReadAt(hdr[:], pos); err != nil {
			break
		}
		h, err := readHeader(hdr[:])
		if err != nil || pos+int64(h.Length) > st.Size() || h.BaseOffset >= limit {
			break
		}
		l.index(h, seg, pos)
		pos += int64(h.Length)
	}
	if pos != st.Size() {
		if err := seg.f.Truncate(pos); err != nil {
			return err
		}
	}
	seg.size = pos
	return nil
}

func (l *Log) index(h header, seg *segment, pos int64) {
	ref := batchRef{base: h.BaseOffset, last: h.BaseOffset + int64(h.LastDelta), maxTimestamp: h.MaxTimestamp,
		epoch: h.LeaderEpoch, seg: seg, pos: pos, size: h.Length,
		producerID: h.ProducerID, producerEpoch: h.ProducerEpoch, baseSequence: h.BaseSequence}
	l.batches = append(l.batches, ref)
	if n := len(l.epochs); n == 0 || l.epochs[n-1].Epoch < h.LeaderEpoch {
		l.epochs = append(l.epochs, epochStart{Epoch: h.LeaderEpoch, Start: h.BaseOffset})
	}
	l.producer.record(h)
}

// append writes one already-validated batch at the log end. The caller
// syncs; the batch becomes visible to readers only in publish.
func (l *Log) append(b []byte, epoch int32) (header, error) {
	h, err := readHeader(b)
	if err != nil {
		return h, err
	}
	seg, err := l.activeSegment()
	if err != nil {
		return h, err
	}
	patchBatch(b, l.next, epoch)
	h.BaseOffset, h.LeaderEpoch = l.next, epoch
	if _, err := seg.f.WriteAt(b, seg.size); err != nil {
		// Leave no partial batch behind: the next open would truncate it,
		// but this replica keeps running and must stay consistent.
		_ = seg.f.Truncate(seg.size)
		return h, err
	}
	l.mu.Lock()
	l.index(h, seg, seg.size)
	seg.size += int64(h.Length)
	seg.dirty = true
	l.next = h.BaseOffset + int64(h.LastDelta) + 1
	l.mu.Unlock()
	return h, nil
}

func (l *Log) activeSegment() (*segment, error) {
	if n := len(l.segs); n > 0 && l.segs[n-1].size < l.segmentBytes {
		return l.segs[n-1], nil
	}
	path := filepath.Join(l.dir, segmentName(l.next))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syncDir(l.dir); err != nil {
		f.Close()
		return nil, err
	}
	seg := &segment{base: l.next, path: path, f: f}
	l.mu.Lock()
	l.segs = append(l.segs, seg)
	l.mu.Unlock()
	return seg, nil
}

// sync fsyncs every segment written since its last fsync: also one that
// rolled over since, whose tail would otherwise be left to the kernel.
func (l *Log) sync() error {
	l.mu.RLock()
	segs := append([]*segment(nil), l.segs...)
	l.mu.RUnlock()
	for _, seg := range segs {
		if !seg.dirty {
			continue
		}
		if err := seg.f.Sync(); err != nil {
			return err
		}
		seg.dirty = false
	}
	return nil
}

// publish wakes fetchers waiting for new data.
func (l *Log) publish() {
	l.mu.Lock()
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// dropBefore moves the log start offset and deletes whole segments that lie
// below it; a partly covered segment stays, and reads skip its head.
func (l *Log) dropBefore(offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset > l.start {
		l.start = offset
	}
	var doomed []*segment
	for len(l.segs) > 1 && l.segs[1].base <= l.start {
		doomed = append(doomed, l.segs[0])
		l.segs = l.segs[1:]
	}
	i := sort.Search(len(l.batches), func(i int) bool { return l.batches[i].last >= l.start })
	l.batches = append([]batchRef(nil), l.batches[i:]...)
	// The producer table is a function of the batches still in the log, the
	// same whether this replica kept running or reopened since: otherwise a
	// replica that restarted after records were deleted could judge a
	// producer's next batch differently from one that did not.
	if i > 0 {
		l.producer = producers{}
		for _, b := range l.batches {
			l.producer.record(b.producerHeader())
		}
	}
	for _, s := range doomed {
		s.f.Close()
		os.Remove(s.path)
	}
}

// beginAt moves the end of a log without segment files back to offset, so
// that a batch holding its start can be appended; it reports whether the
// log was such.
func (l *Log) beginAt(offset int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.segs) > 0 {
		return false
	}
	l.next = offset
	return true
}

// Offsets returns the log start and end offsets.
func (l *Log) Offsets() (start, end int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.start, l.next
}

// Changed returns a channel closed when the log end next moves.
func (l *Log) Changed() <-chan struct{} {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.changed
}

// ErrOffsetOutOfRange is returned by Read for an offset outside the log.
var ErrOffsetOutOfRange = errors.New("partition: offset out of range")

// Read returns whole batches starting with the one holding offset, up to
// maxBytes but always at least one batch, as Kafka's fetch does.
func (l *Log) Read(offset int64, maxBytes int32) ([]byte, error) {
	l.mu.RLock()
	if offset < l.start || offset > l.next {
		l.mu.RUnlock()
		return nil, ErrOffsetOutOfRange
	}
	i := sort.Search(len(l.batches), func(i int) bool { return l.batches[i].last >= offset })
	if i == len(l.batches) {
		l.mu.RUnlock()
		return nil, nil
	}
	first := l.batches[i]
	n := int64(first.size)
	for j := i + 1; j < len(l.batches); j++ {
		b := l.batches[j]
		if b.seg != first.seg || n+int64(b.size) > int64(maxBytes) {
			break
		}
		n += int64(b.size)
	}
	l.mu.RUnlock()
	buf := make([]byte, n)
	if _, err := first.seg.f.ReadAt(buf, first.pos); err != nil {
		if errors.Is(err, os.ErrClosed) || errors.Is(err, io.EOF) {
			return nil, ErrOffsetOutOfRange // deleted by retention meanwhile
		}
		return nil, err
	}
	return buf, nil
}

// OffsetForTimestamp returns the first offset whose batch has a max
// timestamp at or after ts, or the log end if none has.
func (l *Log) OffsetForTimestamp(ts int64) (int64, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, b := range l.batches {
		if b.maxTimestamp >= ts {
			return max(b.base, l.start), b.maxTimestamp
		}
	}
	return l.next, -1
}

// MaxTimestamp returns the offset and time of the record with the largest
// timestamp, for ListOffsets' max-timestamp query.
func (l *Log) MaxTimestamp() (int64, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	off, ts := int64(-1), int64(-1)
	for _, b := range l.batches {
		if b.maxTimestamp > ts {
			off, ts = b.last, b.maxTimestamp
		}
	}
	return off, ts
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the epoch that is at most
// the asked one, and the offset where the next epoch starts.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i := len(l.epochs) - 1; i >= 0; i-- {
		if l.epochs[i].Epoch <= epoch {
			if i == len(l.epochs)-1 {
				return l.epochs[i].Epoch, l.next
			}
			return l.epochs[i].Epoch, l.epochs[i+1].Start
		}
	}
	return -1, -1
}

// SizeBytes is the bytes the log holds on disk.
func (l *Log) SizeBytes() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// RetentionPoint returns the offset below which whole segments are older
// than minTimestamp or beyond the byte budget. Segments are the unit of
// deletion, as in Kafka; the active segment is never deleted.
func (l *Log) RetentionPoint(minTimestamp, maxBytes int64) int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	point := l.start
	total := int64(0)
	for _, s := range l.segs {
		total += s.size
	}
	for i := 0; i+1 < len(l.segs); i++ {
		seg, next := l.segs[i], l.segs[i+1]
		tooOld := minTimestamp > 0 && l.segmentMaxTimestamp(seg) < minTimestamp
		tooBig := maxBytes >= 0 && total > maxBytes
		if !tooOld && !tooBig {
			break
		}
		total -= seg.size
		point = next.base
	}
	return point
}

func (l *Log) segmentMaxTimestamp(seg *segment) int64 {
	ts := int64(-1)
	for _, b := range l.batches {
		if b.seg == seg && b.maxTimestamp > ts {
			ts = b.maxTimestamp
		}
	}
	return ts
}

// Close closes the segment files.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segs {
		s.f.Close()
	}
	l.segs = nil
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// checkpoint is what the state machine persists beside the segments: the
// last applied Raft index and the log bounds at that index. It is written
// into one of two fixed slots, alternating, each with its own CRC, so a torn
// write leaves the other slot intact.
type checkpoint struct {
	Seq            uint64
	AppliedIndex   uint64
	NextOffset     int64
	LogStartOffset int64
}

const checkpointSlot = 40

func (c checkpoint) encode() []byte {
	b := make([]byte, checkpointSlot)
	be := binary.BigEndian
	be.PutUint64(b[0:], c.Seq)
	be.PutUint64(b[8:], c.AppliedIndex)
	be.PutUint64(b[16:], uint64(c.NextOffset))
	be.PutUint64(b[24:], uint64(c.LogStartOffset))
	be.PutUint32(b[32:], crc32.Checksum(b[:32], crc32c))
	return b
}

func decodeCheckpoint(b []byte) (checkpoint, bool) {
	be := binary.BigEndian
	if len(b) < checkpointSlot || crc32.Checksum(b[:32], crc32c) != be.Uint32(b[32:]) {
		return checkpoint{}, false
	}
	return checkpoint{Seq: be.Uint64(b[0:]), AppliedIndex: be.Uint64(b[8:]),
		NextOffset: int64(be.Uint64(b[16:])), LogStartOffset: int64(be.Uint64(b[24:]))}, true
}

func readCheckpoint(f *os.File) (checkpoint, error) {
	buf := make([]byte, 2*checkpointSlot)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return checkpoint{}, err
	}
	buf = buf[:n]
	var best checkpoint
	for slot := 0; (slot+1)*checkpointSlot <= len(buf); slot++ {
		if c, ok := decodeCheckpoint(buf[slot*checkpointSlot:]); ok && c.Seq >= best.Seq {
			best = c
		}
	}
	return best, nil
}

func writeCheckpoint(f *os.File, c checkpoint) error {
	_, err := f.WriteAt(c.encode(), int64(c.Seq%2)*checkpointSlot)
	return err
}
