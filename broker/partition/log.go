package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/raftka/raftka/broker/frames"
	"github.com/raftka/raftka/broker/internal/durable"
)

// DefaultSegmentBytes is when the active segment file rolls over.
const DefaultSegmentBytes = 128 << 20

// indexIntervalBytes is the most batch bytes between two entries of a
// segment's sparse index, as Kafka's index.interval.bytes: the index costs
// 16 bytes per 4 KiB of log however small the batches are, and a lookup
// reads at most this much past its entry.
const indexIntervalBytes = 4096

// maxSegmentOffsets keeps offsets relative to a segment's base in 32 bits.
const maxSegmentOffsets = 1<<31 - 1

type segment struct {
	base  int64 // the log end when the file was created
	path  string
	f     segmentFile
	size  int64
	dirty bool // written since its last fsync

	// firstTimestamp is its first batch's max timestamp: segment.ms rolls
	// by record time from there.
	firstTimestamp     int64
	last               int64 // last offset of its last batch, base-1 when empty
	maxTimestamp       int64
	maxTimestampOffset int64 // last offset of the first batch with maxTimestamp
	index              []indexEntry
}

// indexEntry locates one batch of a segment. Entries are at most
// indexIntervalBytes apart, and the first batch always has one.
type indexEntry struct {
	relOffset uint32 // batch base offset minus the segment's base
	pos       uint32
	// timestampBefore is the largest timestamp of the segment's batches
	// before this one, so a time lookup can skip everything before the
	// last entry whose value is below the time asked for.
	timestampBefore int64
}

type epochStart struct {
	Epoch int32
	Start int64
}

// Log is a partition's segmented log. Writers (the state machine) hold mu;
// readers take it shared only to find file positions and read with ReadAt.
type Log struct {
	dir string
	// segment.bytes and segment.ms; the broker may change them at any
	// time: where a segment ends is this replica's own business.
	segmentBytes, segmentMs atomic.Int64

	// frames is the partition's frame log, where the Raft log store puts
	// its entries; nil keeps every batch in segments of its own.
	frames frames.Reader

	mu       sync.RWMutex
	segs     []*segment
	next     int64 // log end offset: one past the last applied record
	start    int64 // log start offset
	horizon  int64 // producers whose batches all end below it are forgotten
	epochs   []epochStart
	producer producers
	txn      txns          // transactions open and aborted here (txn.go)
	changed  chan struct{} // closed and replaced whenever next moves
	// doomed are segments below the log start, deleted from disk only
	// once a checkpoint past them is durable (removeDoomed).
	doomed []*segment

	// Compaction's own: where its last pass ended, and replaced segment
	// files that readers may still be reading.
	cleanPoint int64
	retired    []retiredFile
}

func segmentName(base int64) string { return fmt.Sprintf("%020d.log", base) }

func newSegment(base int64, path string, f segmentFile) *segment {
	return &segment{base: base, path: path, f: f, last: base - 1, maxTimestamp: -1, maxTimestampOffset: -1}
}

// openLog opens the segments of dir as a checkpoint (durable) names them.
func openLog(dir string, ck checkpoint, fl frames.Reader) (*Log, error) {
	return openLogWith(dir, ck, fl, true)
}

// openLogWith is openLog; without sidecars it reads every batch header, the
// reference the sidecars are tested against.
func openLogWith(dir string, ck checkpoint, fl frames.Reader, useSidecars bool) (*Log, error) {
	l := &Log{dir: dir, producer: producers{}, txn: newTxns(), changed: make(chan struct{}), frames: fl,
		next: ck.NextOffset, start: ck.LogStartOffset, horizon: ck.ProducerHorizon}
	if err := removeCleanerLeftovers(dir); err != nil {
		return nil, err
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	framed, err := filepath.Glob(filepath.Join(dir, "*"+framedSuffix))
	if err != nil {
		return nil, err
	}
	for _, name := range framed {
		// A framed segment that compaction replaced, when the process
		// died before it removed it: the cleaned segment is complete.
		if _, err := os.Stat(strings.TrimSuffix(name, framedSuffix) + ".log"); err == nil {
			if err := os.Remove(name); err != nil {
				return nil, err
			}
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names) // the base is zero-padded: by name is by base
	var bases []int64
	var paths []string
	for _, name := range names {
		base, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSuffix(filepath.Base(name), ".log"), framedSuffix), 10, 64)
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
		bases, paths = append(bases, base), append(paths, name)
	}
	if err := removeOrphanSidecars(dir, bases); err != nil {
		return nil, err
	}
	// Batches before the newest fold need not be folded again, and closed
	// segments with an index file need not be read at all.
	foldFrom := int64(-1)
	if useSidecars {
		for i := len(bases) - 1; i >= 0; i-- {
			if f, ok := loadFold(dir, bases[i]); ok {
				foldFrom, l.epochs, l.producer, l.txn = bases[i], f.epochs, f.producer, f.txn
				break
			}
		}
	}
	end := int64(0)
	firstBatch, haveBatches := int64(0), false
	for i, base := range bases {
		f, err := openSegmentFile(paths[i], fl)
		if err != nil {
			l.Close()
			return nil, err
		}
		seg := newSegment(base, paths[i], f)
		l.segs = append(l.segs, seg)
		closed, fold := i+1 < len(bases), base >= foldFrom
		loaded := false
		if useSidecars && closed && !fold {
			if st, err := f.Stat(); err == nil {
				loaded = loadSegmentIndex(seg, st, ck.NextOffset)
			}
		}
		if !loaded {
			if err := l.scanSegment(seg, ck.NextOffset, fold); err != nil {
				l.Close()
				return nil, err
			}
			if useSidecars && closed {
				writeSegmentIndex(seg) // what a checkpoint names is durable
			}
		}
		if seg.size > 0 {
			end = seg.last + 1
			if !haveBatches {
				firstBatch, haveBatches = seg.base+int64(seg.index[0].relOffset), true
			}
		}
	}
	if foldFrom >= 0 {
		l.epochs = canonicalEpochs(l.epochs, firstBatch, haveBatches)
	}
	if end < ck.NextOffset && ck.NextOffset > ck.LogStartOffset {
		l.Close()
		return nil, fmt.Errorf("partition %s: log ends at %d but checkpoint says %d: refusing to start with missing data", dir, end, ck.NextOffset)
	}
	l.dropBefore(l.start)
	l.removeDoomed() // the checkpoint that put them below the start is durable
	return l, nil
}

// openSegmentFile opens a segment of either kind.
func openSegmentFile(path string, fl frames.Reader) (segmentFile, error) {
	if strings.HasSuffix(path, framedSuffix) {
		return openFramedFile(path, fl)
	}
	return os.OpenFile(path, os.O_RDWR, 0o644)
}

// segmentScans counts segments whose headers an open read, for tests.
var segmentScans atomic.Int64

// scanSegment indexes a segment's batches, folding them into the log's
// epochs and producer table if fold is set, and truncates anything at or
// beyond limit and any torn write at the tail.
func (l *Log) scanSegment(seg *segment, limit int64, fold bool) error {
	segmentScans.Add(1)
	st, err := seg.f.Stat()
	if err != nil {
		return err
	}
	pos := int64(0)
	err = scanHeaders(seg.f, 0, st.Size(), func(h header, at int64) bool {
		if at+int64(h.Length) > st.Size() || h.BaseOffset >= limit || h.BaseOffset < seg.base ||
			h.BaseOffset+int64(h.LastDelta)-seg.base > maxSegmentOffsets || at+int64(h.Length) > math.MaxUint32 {
			return false
		}
		seg.indexBatch(h, at)
		if fold {
			var m marker
			if h.isControl() {
				m, _ = readMarkerAt(seg.f, h, at)
			}
			l.fold(h, m)
		}
		pos = at + int64(h.Length)
		return true
	})
	if err != nil {
		return err
	}
	if pos != st.Size() {
		if err := seg.f.Truncate(pos); err != nil {
			return err
		}
	}
	seg.size = pos
	return nil
}

// scanHeaders calls fn with the header and position of each batch of f from
// pos on, until fn returns false or a header would pass end. It reads in
// windows, so walking small batches costs few reads. A malformed header ends
// the walk as the end of the file would.
func scanHeaders(f io.ReaderAt, pos, end int64, fn func(h header, pos int64) bool) error {
	buf := make([]byte, indexIntervalBytes+batchHeaderLength)
	var window []byte
	windowPos := int64(0)
	for pos+batchHeaderLength <= end {
		if pos < windowPos || pos+batchHeaderLength > windowPos+int64(len(window)) {
			n := min(int64(len(buf)), end-pos)
			if _, err := f.ReadAt(buf[:n], pos); err != nil {
				return err
			}
			window, windowPos = buf[:n], pos
		}
		h, err := readHeader(window[pos-windowPos:])
		if err != nil || !fn(h, pos) {
			return nil
		}
		pos += int64(h.Length)
	}
	return nil
}

// index adds a batch just written at pos of seg, the last in it; m is
// what it says if it is a marker.
func (l *Log) index(h header, seg *segment, pos int64, m marker) {
	seg.indexBatch(h, pos)
	l.fold(h, m)
}

// readMarkerAt reads the marker a control batch at pos of f says.
func readMarkerAt(f io.ReaderAt, h header, pos int64) (marker, bool) {
	b := make([]byte, h.Length)
	if _, err := f.ReadAt(b, pos); err != nil {
		return marker{}, false
	}
	return readMarker(b)
}

// indexBatch adds a batch at pos to the segment's own index and bounds.
func (seg *segment) indexBatch(h header, pos int64) {
	if pos == 0 {
		seg.firstTimestamp = h.MaxTimestamp
	}
	if n := len(seg.index); n == 0 || pos-int64(seg.index[n-1].pos) >= indexIntervalBytes {
		seg.index = append(seg.index, indexEntry{relOffset: uint32(h.BaseOffset - seg.base), pos: uint32(pos),
			timestampBefore: seg.maxTimestamp})
	}
	seg.last = h.BaseOffset + int64(h.LastDelta)
	if h.MaxTimestamp > seg.maxTimestamp {
		seg.maxTimestamp, seg.maxTimestampOffset = h.MaxTimestamp, seg.last
	}
}

// fold adds a batch to what the log's batches leave behind: the leader
// epochs, the idempotent-producer table and the transaction table.
func (l *Log) fold(h header, m marker) {
	if n := len(l.epochs); n == 0 || l.epochs[n-1].Epoch < h.LeaderEpoch {
		l.epochs = append(l.epochs, epochStart{Epoch: h.LeaderEpoch, Start: h.BaseOffset})
	}
	l.producer.record(h)
	l.txn.record(h, m)
}

// append writes one already-validated batch at the log end. The caller
// syncs; the batch becomes visible to readers only in publish.
// at, when not nil, is where b lies in the partition's frame log: the
// batch is then not written again, only its place recorded.
func (l *Log) append(b []byte, epoch int32, at *frames.Loc) (header, error) {
	h, err := readHeader(b)
	if err != nil {
		return h, err
	}
	var m marker
	if h.isControl() {
		m, _ = readMarker(b)
	}
	seg, err := l.activeSegment(h, at != nil)
	if err != nil {
		return h, err
	}
	patchBatch(b, l.next, epoch)
	h.BaseOffset, h.LeaderEpoch = l.next, epoch
	if ff, ok := seg.f.(*framedFile); ok {
		// Under mu, as releaseFrames computes its mark: a mark computed
		// before this batch and given after it would release its file.
		l.mu.Lock()
		err = ff.appendBatch(*at, l.next, epoch)
		l.mu.Unlock()
	} else if _, err = seg.f.WriteAt(b, seg.size); err != nil {
		// Leave no partial batch behind: the next open would truncate it,
		// but this replica keeps running and must stay consistent.
		_ = seg.f.Truncate(seg.size)
	}
	if err != nil {
		return h, err
	}
	l.mu.Lock()
	l.index(h, seg, seg.size, m)
	seg.size += int64(h.Length)
	seg.dirty = true
	l.next = h.BaseOffset + int64(h.LastDelta) + 1
	l.mu.Unlock()
	return h, nil
}

// activeSegment returns the segment that h is to be appended to: the last
// one, unless it is full (segment.bytes), its first record is segment.ms
// older than h's (by record time, as Kafka rolls: a quiet segment rolls
// with the next append), or h would not fit its 32-bit relative offsets and
// positions.
//
// A batch that lies in the frame log goes to a framed segment, any other to
// a segment that holds its bytes; a change of kind starts a new segment.
func (l *Log) activeSegment(h header, framed bool) (*segment, error) {
	if n := len(l.segs); n > 0 && isFramed(l.segs[n-1]) == framed {
		seg := l.segs[n-1]
		segmentBytes, segmentMs := l.segmentBytes.Load(), l.segmentMs.Load()
		if segmentBytes <= 0 {
			segmentBytes = DefaultSegmentBytes
		}
		fits := seg.size < segmentBytes && seg.size+int64(h.Length) <= math.MaxUint32 &&
			l.next+int64(h.LastDelta)-seg.base <= maxSegmentOffsets &&
			(segmentMs <= 0 || h.MaxTimestamp-seg.firstTimestamp < segmentMs)
		if fits || seg.size == 0 {
			return seg, nil
		}
	}
	var f segmentFile
	var err error
	path := filepath.Join(l.dir, segmentName(l.next))
	if framed {
		path = filepath.Join(l.dir, framedSegmentName(l.next))
		f, err = createFramedFile(path, l.frames)
	} else {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	}
	if err != nil {
		return nil, err
	}
	if err := durable.SyncDir(l.dir); err != nil {
		_ = f.Close()
		return nil, err
	}
	seg := newSegment(l.next, path, f)
	// Only this goroutine changes the epochs and the producer table.
	writeFold(l.dir, l.next, l.epochs, l.producer, &l.txn)
	l.mu.Lock()
	if n := len(l.segs); n > 0 && !l.segs[n-1].dirty {
		writeSegmentIndex(l.segs[n-1]) // closed, and fsynced already; else sync writes it
	}
	l.segs = append(l.segs, seg)
	l.mu.Unlock()
	return seg, nil
}

func isFramed(seg *segment) bool {
	_, ok := seg.f.(*framedFile)
	return ok
}

// sync fsyncs every segment written since its last fsync: also one that
// rolled over since, whose tail would otherwise be left to the kernel.
func (l *Log) sync() error { return l.syncSegments(false) }

// syncClosed is sync for the segments no append goes to any more: the
// cleaner works only on durable segments, and Update leaves durability to
// the state machine's Sync.
func (l *Log) syncClosed() error { return l.syncSegments(true) }

func (l *Log) syncSegments(closedOnly bool) error {
	l.mu.RLock()
	var segs []*segment
	for i, seg := range l.segs {
		if seg.dirty && (!closedOnly || i < len(l.segs)-1) {
			segs = append(segs, seg)
		}
	}
	l.mu.RUnlock()
	for _, seg := range segs {
		if err := seg.f.Sync(); err != nil {
			return err
		}
		l.mu.Lock()
		seg.dirty = false
		if l.holds(seg) && seg != l.segs[len(l.segs)-1] {
			writeSegmentIndex(seg) // closed and now durable: it no longer changes
		}
		l.mu.Unlock()
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

// dropBefore moves the log start offset and takes out the whole segments
// that lie below it, the last one too when the start is the log end (the
// next append begins a new one); a partly covered segment stays, and reads
// skip its head. Their files go in removeDoomed.
func (l *Log) dropBefore(offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset > l.start {
		l.start = offset
	}
	for len(l.segs) > 0 && (len(l.segs) > 1 && l.segs[1].base <= l.start || l.start >= l.next && l.segs[0].size > 0) {
		l.doomed = append(l.doomed, l.segs[0])
		l.segs = l.segs[1:]
	}
	// The producer table must be the same whether this replica kept
	// running or reopened since: otherwise a replica that restarted after
	// records were deleted could judge a producer's next batch differently
	// from one that did not.
	l.producer.dropBefore(l.producerStart())
	l.txn.trim(l.start)
	for i, a := range l.txn.aborted {
		if a.FirstOffset < l.start {
			// Where its records begin from the start on: what an open
			// that reads the headers left finds, and all a reader needs.
			l.txn.aborted[i].FirstOffset = l.firstBatchOf(a.ProducerID, l.start, a.LastOffset)
		}
	}
}

// firstBatchOf is the offset of producerID's first transactional batch
// that ends at or after from, looking up to upTo; upTo if there is none
// or the headers cannot be read. The caller holds mu.
func (l *Log) firstBatchOf(producerID, from, upTo int64) int64 {
	found := upTo
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].last >= from })
	for ; i < len(l.segs) && l.segs[i].base <= found; i++ {
		seg := l.segs[i]
		v := seg.view(0)
		if j := sort.Search(len(seg.index), func(j int) bool { return seg.base+int64(seg.index[j].relOffset) > from }); j > 0 {
			v = seg.view(j - 1)
		}
		_ = scanHeaders(v.f, v.from, v.size, func(h header, _ int64) bool {
			if h.BaseOffset >= found {
				return false
			}
			if h.ProducerID == producerID && h.isTransactional() && !h.isControl() && h.BaseOffset+int64(h.LastDelta) >= from {
				found = h.BaseOffset
				return false
			}
			return true
		})
	}
	return found
}

// producerStart is where the batches the producer table remembers begin:
// the log start, or the producer horizon past it.
func (l *Log) producerStart() int64 { return max(l.start, l.horizon) }

// expireProducers forgets the idempotent producers whose batches all end
// below offset (at most the log end), as Kafka's producer.id.expiration.ms
// does for producers idle that long: the leader picks the offset from the
// clock (see the broker), the state machine applies it. A horizon by offset
// keeps the table what a rebuild from the batches gives (dropBefore at the
// horizon), and every batch appended later is above it, so a producer
// that writes again is remembered again.
func (l *Log) expireProducers(offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset = min(offset, l.next); offset > l.horizon {
		l.horizon = offset
		l.producer.dropBefore(l.producerStart())
	}
}

// ProducerHorizon is the offset below which producers are forgotten.
func (l *Log) ProducerHorizon() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.horizon
}

// hasDoomed reports whether segments wait for removeDoomed.
func (l *Log) hasDoomed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.doomed) > 0
}

// removeDoomed deletes the files of segments below the log start. The
// caller has made a checkpoint with that start durable: with an older one,
// the next open would find records missing that it still names.
func (l *Log) removeDoomed() {
	l.mu.Lock()
	doomed := l.doomed
	l.doomed = nil
	l.mu.Unlock()
	for _, s := range doomed {
		_ = s.f.Close()
		// A file left behind lies below the log start: the next open
		// drops it again.
		_ = os.Remove(s.path)
		removeSidecars(l.dir, s.base)
	}
	l.releaseFrames()
}

// releaseFrames tells the frame log which of its files the segments no
// longer point into: those below the first framed segment's first batch
// (batches go to frame files in order).
func (l *Log) releaseFrames() {
	if l.frames == nil {
		return
	}
	below := frames.NoFile
	// The mark is computed and given under mu, which framed appends take
	// too (append), so that none comes between.
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, seg := range l.segs {
		if ff, ok := seg.f.(*framedFile); ok {
			if first, ok := ff.firstFrameFile(); ok {
				below = first
				break
			}
		}
	}
	l.frames.ReleaseData(below)
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

// ProducerState is what a partition remembers of one idempotent producer.
type ProducerState struct {
	ID            int64
	Epoch         int16
	LastSequence  int32
	LastTimestamp int64 // the max timestamp of its last batch
	// TxnStartOffset is where its open transaction here begins, -1 for
	// none.
	TxnStartOffset int64
}

// Producers returns the idempotent producers whose batches are in the log,
// for DescribeProducers.
func (l *Log) Producers() []ProducerState {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]ProducerState, 0, len(l.producer))
	for id, st := range l.producer {
		ps := ProducerState{ID: id, Epoch: st.Epoch, LastSequence: -1, LastTimestamp: -1, TxnStartOffset: -1}
		if first, ok := l.txn.open[id]; ok {
			ps.TxnStartOffset = first
		}
		if n := len(st.Recent); n > 0 {
			ps.LastSequence, ps.LastTimestamp = st.Recent[n-1].LastSeq, st.Recent[n-1].MaxTimestamp
		}
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// LastStable is the last stable offset: the first offset of the oldest
// transaction open here, or the log end.
func (l *Log) LastStable() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.txn.stable(l.next)
}

// AbortedIn are the transactions aborted here with records in
// [from, to), for a read_committed Fetch.
func (l *Log) AbortedIn(from, to int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.txn.abortedIn(from, to)
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

// segmentView is what a reader needs of a segment, copied under the lock:
// the file, its size then, and the index entry's position to walk from.
type segmentView struct {
	f    segmentFile
	size int64
	from int64
}

// viewAt returns the segment holding offset, if any, and the last index
// entry at or before it.
func (l *Log) viewAt(offset int64) (segmentView, bool) {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].last >= offset })
	if i == len(l.segs) {
		return segmentView{}, false
	}
	seg := l.segs[i]
	j := sort.Search(len(seg.index), func(j int) bool { return seg.base+int64(seg.index[j].relOffset) > offset })
	return seg.view(max(j-1, 0)), true
}

func (seg *segment) view(entry int) segmentView {
	v := segmentView{f: seg.f, size: seg.size}
	if entry < len(seg.index) {
		v.from = int64(seg.index[entry].pos)
	}
	return v
}

// readErr maps reading a segment that retention closed meanwhile to
// ErrOffsetOutOfRange, as if the read had come a moment later.
func readErr(err error) error {
	if errors.Is(err, os.ErrClosed) || errors.Is(err, io.EOF) {
		return ErrOffsetOutOfRange
	}
	return err
}

// Read returns whole batches starting with the one holding offset, up to
// maxBytes but always at least one batch, as Kafka's fetch does.
func (l *Log) Read(offset int64, maxBytes int32) ([]byte, error) {
	l.mu.RLock()
	if offset < l.start || offset > l.next {
		l.mu.RUnlock()
		return nil, ErrOffsetOutOfRange
	}
	v, ok := l.viewAt(offset)
	l.mu.RUnlock()
	if !ok {
		return nil, nil
	}
	pos, first := int64(-1), int64(0)
	err := scanHeaders(v.f, v.from, v.size, func(h header, at int64) bool {
		if h.BaseOffset+int64(h.LastDelta) < offset {
			return true
		}
		pos, first = at, int64(h.Length)
		return false
	})
	if err != nil {
		return nil, readErr(err)
	}
	if pos < 0 {
		return nil, fmt.Errorf("partition %s: offset %d is not in the segment that should hold it", l.dir, offset)
	}
	buf := make([]byte, max(first, min(int64(maxBytes), v.size-pos)))
	if _, err := v.f.ReadAt(buf, pos); err != nil {
		return nil, readErr(err)
	}
	return wholeBatches(buf), nil
}

// wholeBatches trims b to the batches it holds whole; the first always is.
func wholeBatches(b []byte) []byte {
	n := 0
	for n+batchHeaderLength <= len(b) {
		h, err := readHeader(b[n:])
		if err != nil || n+int(h.Length) > len(b) {
			break
		}
		n += int(h.Length)
	}
	return b[:n]
}

// OffsetForTimestamp returns the first offset whose batch has a max
// timestamp at or after ts, or the log end if none has.
func (l *Log) OffsetForTimestamp(ts int64) (int64, int64, error) {
	l.mu.RLock()
	start, next := l.start, l.next
	var views []segmentView
	for _, seg := range l.segs {
		if seg.maxTimestamp < ts || seg.last < start {
			continue
		}
		// Every batch before the last entry that precedes ts is older.
		j := sort.Search(len(seg.index), func(j int) bool { return seg.index[j].timestampBefore >= ts })
		views = append(views, seg.view(max(j-1, 0)))
	}
	l.mu.RUnlock()
	for _, v := range views {
		off, found := int64(-1), int64(-1)
		err := scanHeaders(v.f, v.from, v.size, func(h header, _ int64) bool {
			if h.MaxTimestamp < ts || h.BaseOffset+int64(h.LastDelta) < start {
				return true
			}
			off, found = max(h.BaseOffset, start), h.MaxTimestamp
			return false
		})
		if err != nil {
			return 0, 0, readErr(err)
		}
		if off >= 0 {
			return off, found, nil
		}
	}
	return next, -1, nil
}

// MaxTimestamp returns the offset and time of the record with the largest
// timestamp, for ListOffsets' max-timestamp query.
func (l *Log) MaxTimestamp() (int64, int64, error) {
	l.mu.RLock()
	start := l.start
	off, ts := int64(-1), int64(-1)
	var head segmentView
	for i, seg := range l.segs {
		if i == 0 && seg.maxTimestampOffset < start {
			// Its largest timestamp was deleted: walk what remains of it.
			head, _ = l.viewAt(start)
			continue
		}
		if seg.maxTimestamp > ts {
			off, ts = seg.maxTimestampOffset, seg.maxTimestamp
		}
	}
	l.mu.RUnlock()
	if head.f == nil {
		return off, ts, nil
	}
	headOff, headTS := int64(-1), int64(-1)
	err := scanHeaders(head.f, head.from, head.size, func(h header, _ int64) bool {
		if last := h.BaseOffset + int64(h.LastDelta); last >= start && h.MaxTimestamp > headTS {
			headOff, headTS = last, h.MaxTimestamp
		}
		return true
	})
	if err != nil {
		return 0, 0, readErr(err)
	}
	if headTS >= ts {
		return headOff, headTS, nil
	}
	return off, ts, nil
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
	for i, seg := range l.segs {
		tooOld := minTimestamp > 0 && seg.maxTimestamp < minTimestamp
		if i+1 == len(l.segs) {
			// The active segment goes only when all of it expired, as
			// Kafka rolls and deletes it: otherwise a quiet topic would
			// keep its records long past retention.ms.
			if tooOld && seg.size > 0 {
				point = l.next
			}
			break
		}
		tooBig := maxBytes >= 0 && total > maxBytes
		if !tooOld && !tooBig {
			break
		}
		total -= seg.size
		point = l.segs[i+1].base
	}
	return point
}

// Close closes the segment files, which were fsynced when written.
func (l *Log) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range append(l.segs, l.doomed...) {
		_ = s.f.Close()
	}
	for _, r := range l.retired {
		_ = r.f.Close()
	}
	l.segs, l.doomed, l.retired = nil, nil, nil
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
	// ProducerHorizon is the offset below which idempotent producers are
	// forgotten (producer.id.expiration.ms; see Log.expireProducers).
	ProducerHorizon int64
}

// The file holds two legacy slots (40 bytes, no horizon), read only when
// it has no current slot, then the two current slots. Keeping the legacy
// slots where they are makes the upgrade safe: the first current slot
// written never tears the legacy ones.
const (
	legacyCheckpointSlot = 40
	checkpointSlot       = 48
	checkpointSlotsAt    = 2 * legacyCheckpointSlot
)

func (c checkpoint) encode() []byte {
	b := make([]byte, checkpointSlot)
	be := binary.BigEndian
	be.PutUint64(b[0:], c.Seq)
	be.PutUint64(b[8:], c.AppliedIndex)
	be.PutUint64(b[16:], uint64(c.NextOffset))
	be.PutUint64(b[24:], uint64(c.LogStartOffset))
	be.PutUint64(b[32:], uint64(c.ProducerHorizon))
	be.PutUint32(b[40:], crc32.Checksum(b[:40], crc32c))
	return b
}

func decodeCheckpoint(b []byte) (checkpoint, bool) {
	be := binary.BigEndian
	if len(b) < checkpointSlot || crc32.Checksum(b[:40], crc32c) != be.Uint32(b[40:]) {
		return checkpoint{}, false
	}
	return checkpoint{Seq: be.Uint64(b[0:]), AppliedIndex: be.Uint64(b[8:]), NextOffset: int64(be.Uint64(b[16:])),
		LogStartOffset: int64(be.Uint64(b[24:])), ProducerHorizon: int64(be.Uint64(b[32:]))}, true
}

func decodeLegacyCheckpoint(b []byte) (checkpoint, bool) {
	be := binary.BigEndian
	if len(b) < legacyCheckpointSlot || crc32.Checksum(b[:32], crc32c) != be.Uint32(b[32:]) {
		return checkpoint{}, false
	}
	return checkpoint{Seq: be.Uint64(b[0:]), AppliedIndex: be.Uint64(b[8:]),
		NextOffset: int64(be.Uint64(b[16:])), LogStartOffset: int64(be.Uint64(b[24:]))}, true
}

func readCheckpoint(f *os.File) (checkpoint, error) {
	buf := make([]byte, checkpointSlotsAt+2*checkpointSlot)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return checkpoint{}, err
	}
	buf = buf[:n]
	best, found := newestSlot(buf[min(n, checkpointSlotsAt):], checkpointSlot, decodeCheckpoint)
	if !found {
		best, _ = newestSlot(buf[:min(n, checkpointSlotsAt)], legacyCheckpointSlot, decodeLegacyCheckpoint)
	}
	return best, nil
}

func newestSlot(buf []byte, size int, decode func([]byte) (checkpoint, bool)) (best checkpoint, found bool) {
	for slot := 0; (slot+1)*size <= len(buf); slot++ {
		if c, ok := decode(buf[slot*size:]); ok && (!found || c.Seq >= best.Seq) {
			best, found = c, true
		}
	}
	return best, found
}

func writeCheckpoint(f *os.File, c checkpoint) error {
	_, err := f.WriteAt(c.encode(), checkpointSlotsAt+int64(c.Seq%2)*checkpointSlot)
	return err
}
