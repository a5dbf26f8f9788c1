package partition

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/internal/durable"
)

// Log compaction (cleanup.policy=compact) keeps, in the segments that are
// no longer written, only the newest record of each key, and drops
// tombstones (a null value) once they are older than delete.retention.ms.
//
// It is a replica's own business, as in Kafka: it changes which records a
// segment holds, never an offset or a batch's header. Every batch stays,
// with its base and last offset, timestamps and producer fields, emptied
// if need be. So the replicated state (log end, log start, leader epochs,
// the idempotent-producer table) is the same on a replica that has
// compacted and on one that has not, and compaction needs no Raft entry.

// CleanOptions are a partition's compaction settings, with the time read
// by the caller (the state machine reads no clock).
type CleanOptions struct {
	NowMs int64
	// DeleteRetentionMs is how long a tombstone is kept, so that a consumer
	// reading from the start sees the deletion (delete.retention.ms).
	DeleteRetentionMs int64
	// MinCompactionLagMs keeps segments holding newer records as they are
	// (min.compaction.lag.ms).
	MinCompactionLagMs int64
	// MinCleanableDirtyRatio is the share of the cleanable bytes that must
	// be new since the last pass (min.cleanable.dirty.ratio).
	MinCleanableDirtyRatio float64
	// MaxCompactionLagMs cleans regardless of the ratio once a record not
	// cleaned yet is older than this (max.compaction.lag.ms); 0 is never.
	MaxCompactionLagMs int64
	// MaxKeys bounds a pass's map of keys, and with it its memory; a log
	// with more keys new since the last pass is cleaned in several.
	// 0 is DefaultCleanerMaxKeys.
	MaxKeys int
}

// DefaultCleanerMaxKeys keeps a pass's key map to some 50 MiB.
const DefaultCleanerMaxKeys = 1 << 20

// errKeyMapFull stops a pass's mapping where its key map is full.
var errKeyMapFull = errors.New("partition: key map full")

// errUnstable ends a pass's mapping at the last stable offset.
var errUnstable = errors.New("partition: reached the last stable offset")

// CleanResult says what one pass did.
type CleanResult struct {
	Cleaned        bool  // whether the pass ran
	SegmentsRead   int   // segments the pass covered
	BytesRemoved   int64 // segment bytes freed
	RecordsRemoved int64
}

// maxDecompressedBatchBytes bounds what one batch may decompress to. A
// compressed batch of a few kilobytes can claim gigabytes; past this bound
// it is refused (and a stored one is left as it is) rather than allowed to
// take the broker's memory.
const maxDecompressedBatchBytes = 128 << 20

// batchDecompressor is franz-go's decompressor with that bound; a client's
// configuration is the only way to get one (DefaultDecompressor allows 2
// GiB).
var batchDecompressor = sync.OnceValue(func() kgo.Decompressor {
	cl, err := kgo.NewClient(kgo.MaxDecompressBatchBytes(maxDecompressedBatchBytes))
	if err != nil {
		panic(fmt.Sprintf("partition: building the decompressor: %v", err))
	}
	defer cl.Close()
	return cl.OptValue(kgo.WithDecompressor).(kgo.Decompressor)
})

// decompressing bounds how many produce requests decompress at once, and
// with it the memory that takes.
var decompressing = make(chan struct{}, max(2, runtime.NumCPU()))

// keyHash stands for a key in the offset map: the map's size then depends
// on the number of keys only. A collision needs two keys with the same
// SHA-256 prefix, which Kafka's MD5 map accepts on far weaker odds.
type keyHash [16]byte

func hashKey(k []byte) keyHash {
	sum := sha256.Sum256(k)
	return keyHash(sum[:16])
}

// cleanable is a segment a pass may rewrite, as it was when the pass began.
type cleanable struct {
	seg  *segment
	f    segmentFile
	size int64
}

// Clean runs one compaction pass if the log has enough new data in its
// segments that are no longer written.
func (s *StateMachine) Clean(opts CleanOptions) (CleanResult, error) {
	s.cleaning.Lock()
	defer s.cleaning.Unlock()
	if err := s.log.syncClosed(); err != nil {
		return CleanResult{}, fmt.Errorf("partition %s: fsync: %w", s.dir, err)
	}
	return s.log.clean(opts)
}

// retiredFile is a segment file that compaction replaced, kept open for
// readers that found it before, as Kafka delays deleting files
// (file.delete.delay.ms).
type retiredFile struct {
	f       segmentFile
	afterMs int64 // when it may be closed
}

const retiredFileDelayMs = 60_000

// clean runs a pass as Kafka's cleaner does. Everything below the clean
// point holds one record per key, the newest as of the pass that put it
// there. A pass maps the keys of the records from the clean point on (the
// dirty part) to their newest offsets, until the map is full; then, up to
// where the map reaches, it drops every record that the map knows a newer
// one of, and old tombstones, and moves the clean point there.
func (l *Log) clean(opts CleanOptions) (CleanResult, error) {
	l.closeRetired(opts.NowMs)
	segs, cleanPoint, dirty, total, oldestDirty := l.cleanableSegments(opts)
	if len(segs) == 0 || dirty == 0 {
		return CleanResult{}, nil
	}
	overdue := opts.MaxCompactionLagMs > 0 && oldestDirty >= 0 && oldestDirty < opts.NowMs-opts.MaxCompactionLagMs
	if float64(dirty)/float64(total) < opts.MinCleanableDirtyRatio && !overdue {
		return CleanResult{}, nil
	}
	maxKeys := opts.MaxKeys
	if maxKeys <= 0 {
		maxKeys = DefaultCleanerMaxKeys
	}
	dec := batchDecompressor()
	latest := map[keyHash]int64{}
	mappedEnd := int64(-1)
	// Nothing at or past the last stable offset is mapped, as Kafka's
	// cleaner stops there: until the open transaction ends, what follows
	// its first record is not yet what read_committed consumers see.
	stable := l.LastStable()
	aborted := l.AbortedIn(cleanPoint, stable)
	for _, c := range segs {
		if c.seg.last < cleanPoint {
			continue
		}
		err := eachBatch(c.f, c.size, func(raw []byte) error {
			if len(latest) >= maxKeys {
				return errKeyMapFull
			}
			h, _ := readHeader(raw)
			if h.BaseOffset+int64(h.LastDelta) >= stable {
				return errUnstable
			}
			if h.isControl() || (h.isTransactional() && abortedBatch(aborted, h)) {
				return nil // supersedes nothing: a marker, or a record no consumer of read_committed is given
			}
			if last := h.BaseOffset + int64(h.LastDelta); last >= cleanPoint {
				// A batch whose records do not parse (written before the
				// topic was compacted; produce checks them since) stays
				// as it is.
				_ = eachRecord(raw, dec, func(offset int64, r *kmsg.Record, _ int64) {
					if r.Key != nil && offset >= cleanPoint {
						latest[hashKey(r.Key)] = offset
					}
				})
				mappedEnd = last
			}
			return nil
		})
		if errors.Is(err, errKeyMapFull) || errors.Is(err, errUnstable) {
			break
		}
		if err != nil {
			return CleanResult{}, readErr(err)
		}
	}
	tombstoneHorizon := opts.NowMs - opts.DeleteRetentionMs
	keep := func(offset int64, r *kmsg.Record, timestamp int64) bool {
		if r.Key == nil {
			return true // produced before the topic was compacted
		}
		if offset > mappedEnd {
			return true // the map does not reach it: a later pass
		}
		if newest, ok := latest[hashKey(r.Key)]; ok && newest > offset {
			return false
		}
		// The newest of its key up to mappedEnd: a tombstone goes once
		// consumers had delete.retention.ms to see it (any older record
		// of its key is gone by now, so nothing comes back).
		return r.Value != nil || timestamp >= tombstoneHorizon
	}
	res := CleanResult{Cleaned: true}
	for _, c := range segs {
		if c.seg.base > mappedEnd {
			break
		}
		freed, removed, err := l.rewrite(c, transactionalKeep(l.AbortedIn(c.seg.base, stable), keep), dec, opts.NowMs)
		if err != nil {
			return res, err
		}
		res.SegmentsRead++
		res.BytesRemoved += freed
		res.RecordsRemoved += removed
	}
	l.mu.Lock()
	l.cleanPoint = max(l.cleanPoint, mappedEnd+1)
	l.mu.Unlock()
	l.releaseFrames()
	return res, nil
}

// transactionalKeep is keep for a batch: a batch of an aborted transaction
// keeps no record, as Kafka's cleaner removes them; a committed
// transaction's records are compacted as any others, and its emptied
// batches keep their headers, which the transaction table is read from.
func transactionalKeep(aborted []AbortedTxn, keep func(int64, *kmsg.Record, int64) bool) func(header) func(int64, *kmsg.Record, int64) bool {
	none := func(int64, *kmsg.Record, int64) bool { return false }
	return func(h header) func(int64, *kmsg.Record, int64) bool {
		if h.isTransactional() && abortedBatch(aborted, h) {
			return none
		}
		return keep
	}
}

// abortedBatch reports whether a transactional batch belongs to one of the
// aborted transactions (sorted by their markers): its producer's, from
// that transaction's first offset up to its marker.
func abortedBatch(aborted []AbortedTxn, h header) bool {
	i, _ := slices.BinarySearchFunc(aborted, h.BaseOffset, func(a AbortedTxn, off int64) int {
		return int(min(max(a.LastOffset-off, -1), 1))
	})
	for _, a := range aborted[i:] {
		if a.ProducerID == h.ProducerID { // its first abort ending at or after the batch
			return a.FirstOffset <= h.BaseOffset
		}
	}
	return false
}

// cleanableSegments returns the segments a pass may rewrite: all but the
// active one, and none from the first one holding records newer than the
// minimum compaction lag. It also returns the clean point, the bytes of
// those segments that no pass has covered yet, their total, and the newest
// timestamp of the oldest such segment (-1 if none).
func (l *Log) cleanableSegments(opts CleanOptions) (segs []cleanable, cleanPoint, dirty, total, oldestDirty int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	oldestDirty, cleanPoint = -1, l.cleanPoint
	for i := 0; i+1 < len(l.segs); i++ {
		seg := l.segs[i]
		if seg.dirty || (opts.MinCompactionLagMs > 0 && seg.maxTimestamp > opts.NowMs-opts.MinCompactionLagMs) {
			break
		}
		segs = append(segs, cleanable{seg: seg, f: seg.f, size: seg.size})
		total += seg.size
		if seg.last >= l.cleanPoint {
			dirty += seg.size
			if oldestDirty < 0 {
				oldestDirty = seg.maxTimestamp
			}
		}
	}
	return segs, cleanPoint, dirty, total, oldestDirty
}

// rewrite writes c's batches with only the records keep accepts into a new
// file and, if that removed anything, puts it in the segment's place.
func (l *Log) rewrite(c cleanable, keep func(header) func(int64, *kmsg.Record, int64) bool, dec kgo.Decompressor, nowMs int64) (freed, removed int64, err error) {
	var out bytes.Buffer
	var index []indexEntry
	maxTimestamp := int64(-1)
	err = eachBatch(c.f, c.size, func(raw []byte) error {
		cleaned, n, err := raw, int64(0), error(nil)
		if h, herr := readHeader(raw); herr == nil && !h.isControl() {
			// A marker stays whole: it keeps saying what it ended, for
			// the transaction table a reopened replica reads off the log.
			cleaned, n, err = compactBatch(raw, keep(h), dec)
		}
		if err != nil {
			return err
		}
		removed += n
		h, err := readHeader(cleaned)
		if err != nil {
			return err
		}
		pos := int64(out.Len())
		if len(index) == 0 || pos-int64(index[len(index)-1].pos) >= indexIntervalBytes {
			index = append(index, indexEntry{relOffset: uint32(h.BaseOffset - c.seg.base), pos: uint32(pos), timestampBefore: maxTimestamp})
		}
		maxTimestamp = max(maxTimestamp, h.MaxTimestamp)
		out.Write(cleaned)
		return nil
	})
	if err != nil {
		return 0, 0, readErr(err)
	}
	if removed == 0 {
		return 0, 0, nil
	}
	// A framed segment's cleaned batches are a segment of their own: its
	// batches change, and the frame files they lay in can then go.
	target := c.seg.path
	if isFramed(c.seg) {
		target = filepath.Join(l.dir, segmentName(c.seg.base))
	}
	tmp := target + ".cleaned"
	if err := writeFileSync(tmp, out.Bytes()); err != nil {
		return 0, 0, err
	}
	f, err := os.OpenFile(tmp, os.O_RDWR, 0o644)
	if err != nil {
		return 0, 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.holds(c.seg) {
		// Retention or a snapshot took the segment meanwhile.
		f.Close()
		return 0, 0, os.Remove(tmp)
	}
	if err := os.Rename(tmp, target); err != nil {
		f.Close()
		return 0, 0, err
	}
	if err := durable.SyncDir(l.dir); err != nil {
		// The rename may or may not be durable; both files hold the same
		// batches, so either is a correct segment after a crash (an open
		// that finds a framed segment beside one that holds the same
		// base's batches keeps the latter).
		l.retired = append(l.retired, retiredFile{f, nowMs + retiredFileDelayMs})
		return 0, 0, err
	}
	if target != c.seg.path {
		_ = os.Remove(c.seg.path) // if it stays, the next open removes it
		c.seg.path = target
	}
	l.retired = append(l.retired, retiredFile{c.seg.f, nowMs + retiredFileDelayMs})
	c.seg.f, c.seg.size, c.seg.index = f, int64(out.Len()), index
	writeSegmentIndex(c.seg) // the cleaned file was fsynced
	return c.size - int64(out.Len()), removed, nil
}

func (l *Log) holds(seg *segment) bool {
	for _, s := range l.segs {
		if s == seg {
			return true
		}
	}
	return false
}

func (l *Log) closeRetired(nowMs int64) {
	l.mu.Lock()
	var due []segmentFile
	kept := l.retired[:0]
	for _, r := range l.retired {
		if r.afterMs <= nowMs {
			due = append(due, r.f)
		} else {
			kept = append(kept, r)
		}
	}
	l.retired = kept
	l.mu.Unlock()
	for _, f := range due {
		_ = f.Close()
	}
}

// removeCleanerLeftovers deletes files of a pass that a crash interrupted.
func removeCleanerLeftovers(dir string) error {
	names, err := filepath.Glob(filepath.Join(dir, "*.log.cleaned"))
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := os.Remove(n); err != nil {
			return err
		}
	}
	return nil
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// eachBatch calls fn with every batch of a segment file, read in order.
func eachBatch(f io.ReaderAt, size int64, fn func(raw []byte) error) error {
	const chunk = 1 << 20
	buf := make([]byte, 0, chunk)
	pos := int64(0)
	for pos < size {
		n := min(int64(cap(buf)), size-pos)
		buf = buf[:n]
		if _, err := f.ReadAt(buf, pos); err != nil {
			return err
		}
		used := 0
		for used+batchHeaderLength <= len(buf) {
			h, err := readHeader(buf[used:])
			if err != nil {
				return fmt.Errorf("segment at %d: %w", pos+int64(used), err)
			}
			if used+int(h.Length) > len(buf) {
				break
			}
			if err := fn(buf[used : used+int(h.Length)]); err != nil {
				return err
			}
			used += int(h.Length)
		}
		if used == 0 {
			// One batch larger than the buffer: read it whole.
			h, err := readHeader(buf)
			if err != nil {
				return err
			}
			buf = make([]byte, 0, max(int64(h.Length), chunk))
			continue
		}
		pos += int64(used)
	}
	return nil
}

var errCorruptRecords = errors.New("partition: records do not match their batch")

// eachRecord calls fn with each record of a batch, its offset and its
// timestamp, decompressing the records if the batch is compressed.
func eachRecord(raw []byte, dec kgo.Decompressor, fn func(offset int64, r *kmsg.Record, timestamp int64)) error {
	_, err := splitRecords(raw, dec, func(offset int64, r *kmsg.Record, timestamp int64, _ []byte) {
		fn(offset, r, timestamp)
	})
	return err
}

// splitRecords parses a batch's records; fn gets each one's encoded bytes
// too. It returns the parsed batch.
func splitRecords(raw []byte, dec kgo.Decompressor, fn func(offset int64, r *kmsg.Record, timestamp int64, encoded []byte)) (*kmsg.RecordBatch, error) {
	var b kmsg.RecordBatch
	if err := b.ReadFrom(raw); err != nil {
		return nil, err
	}
	records, err := dec.Decompress(b.Records, kgo.CompressionCodecType(b.Attributes&0x07))
	if err != nil {
		return nil, err
	}
	for i := int32(0); i < b.NumRecords; i++ {
		length, n := binary.Varint(records)
		if n <= 0 || length < 0 || int64(n)+length > int64(len(records)) {
			return nil, errCorruptRecords
		}
		encoded := records[:int64(n)+length]
		var r kmsg.Record
		if err := r.ReadFrom(encoded); err != nil {
			return nil, err
		}
		fn(b.FirstOffset+int64(r.OffsetDelta), &r, b.FirstTimestamp+r.TimestampDelta64, encoded)
		records = records[len(encoded):]
	}
	return &b, nil
}

// compactBatch returns the batch with only the records keep accepts, and
// how many it dropped; a batch whose records do not parse, unchanged. The header stays as it was but for the record count,
// length and CRC: the offsets and timestamps it spans, and its producer
// fields, are part of the replicated state. Records keep their encoding;
// a compressed batch is compressed again with its codec.
func compactBatch(raw []byte, keep func(int64, *kmsg.Record, int64) bool, dec kgo.Decompressor) ([]byte, int64, error) {
	var kept []byte
	var removed int64
	b, err := splitRecords(raw, dec, func(offset int64, r *kmsg.Record, timestamp int64, encoded []byte) {
		if keep(offset, r, timestamp) {
			kept = append(kept, encoded...)
		} else {
			removed++
		}
	})
	if err != nil || removed == 0 {
		return raw, 0, nil // unparsable records stay, see clean
	}
	codec := kgo.CompressionCodecType(b.Attributes & 0x07)
	if len(kept) == 0 {
		// An empty batch is written uncompressed: there is nothing to
		// decompress, and a codec's empty stream is not empty bytes.
		b.Attributes &^= 0x07
	} else if kept, err = compressRecords(kept, codec); err != nil {
		return nil, 0, err
	}
	b.NumRecords -= int32(removed)
	b.Records = kept
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], crc32c))
	return out, removed, nil
}

func codecOf(t kgo.CompressionCodecType) kgo.CompressionCodec {
	switch t {
	case kgo.CodecGzip:
		return kgo.GzipCompression()
	case kgo.CodecSnappy:
		return kgo.SnappyCompression()
	case kgo.CodecLz4:
		return kgo.Lz4Compression()
	case kgo.CodecZstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// KeylessRecord reports whether any record of the batches has no key, which
// a compacted topic refuses as Kafka does: compaction could never remove it.
// A batch that would decompress past maxDecompressedBatchBytes is an error
// that wraps kgo.ErrMaxDecompress.
func KeylessRecord(batches [][]byte) (bool, error) {
	decompressing <- struct{}{}
	defer func() { <-decompressing }()
	dec := batchDecompressor()
	keyless := false
	for _, raw := range batches {
		err := eachRecord(raw, dec, func(_ int64, r *kmsg.Record, _ int64) {
			keyless = keyless || r.Key == nil
		})
		if err != nil {
			return false, err
		}
	}
	return keyless, nil
}
