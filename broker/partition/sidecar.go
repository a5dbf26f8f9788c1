package partition

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Sidecar files spare an open from reading every batch header of a long
// log, as Kafka's index and producer-snapshot files do. They are caches:
// each carries a CRC and says which file and log position it describes, an
// open that finds one missing, damaged or stale reads the headers instead,
// and none is ever fsynced.
//
//   - "<base>.idx" is a closed segment's sparse index and bounds, written
//     once the segment is durable (its fsync) and checked against the
//     segment file's inode and size.
//   - "<base>.fold" is what the batches before a segment leave behind: the
//     leader epochs, the idempotent-producer table and the transaction
//     table, written when the
//     segment starts. Both are functions of the log's batch headers, which
//     only appends change (compaction keeps every header, deletions only
//     take from the front, which an open trims again), so any fold written
//     for a base holds as long as a segment starts there.
const (
	segmentIndexMagic = "RAFTKA-SEGIDX-1\n"
	// foldMagic 2 adds each producer's last marker and the transaction
	// table; a fold of version 1 is not read (the headers are, once).
	foldMagic = "RAFTKA-FOLD-2\n\n\n"
)

func indexPath(segPath string) string {
	return strings.TrimSuffix(strings.TrimSuffix(segPath, ".log"), framedSuffix) + ".idx"
}

func foldPath(dir string, base int64) string {
	return filepath.Join(dir, strings.TrimSuffix(segmentName(base), ".log")+".fold")
}

func inode(st os.FileInfo) uint64 {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return sys.Ino
	}
	return 0
}

func sealSidecar(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32c))
}

// openSidecar returns the body of a sidecar file whose magic and CRC check.
func openSidecar(path, magic string) ([]byte, bool) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) < len(magic)+4 || string(b[:len(magic)]) != magic {
		return nil, false
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crc32c) != sum {
		return nil, false
	}
	return body[len(magic):], true
}

// writeSegmentIndex records a closed segment's index; the caller keeps the
// segment from changing meanwhile. Failing to write it only costs the next
// open a scan.
func writeSegmentIndex(seg *segment) {
	st, err := seg.f.Stat()
	if err != nil || inode(st) == 0 || st.Size() != seg.size {
		return
	}
	b := append([]byte(segmentIndexMagic), make([]byte, 0, 52+16*len(seg.index))...)
	be := binary.BigEndian
	b = be.AppendUint64(b, inode(st))
	b = be.AppendUint64(b, uint64(seg.size))
	b = be.AppendUint64(b, uint64(seg.last))
	b = be.AppendUint64(b, uint64(seg.firstTimestamp))
	b = be.AppendUint64(b, uint64(seg.maxTimestamp))
	b = be.AppendUint64(b, uint64(seg.maxTimestampOffset))
	b = be.AppendUint32(b, uint32(len(seg.index)))
	for _, e := range seg.index {
		b = be.AppendUint32(b, e.relOffset)
		b = be.AppendUint32(b, e.pos)
		b = be.AppendUint64(b, uint64(e.timestampBefore))
	}
	_ = os.WriteFile(indexPath(seg.path), sealSidecar(b), 0o644)
}

// loadSegmentIndex fills seg from its index file if that describes this
// very file (inode and size) and ends before limit; it reports whether it
// did.
func loadSegmentIndex(seg *segment, st os.FileInfo, limit int64) bool {
	body, ok := openSidecar(indexPath(seg.path), segmentIndexMagic)
	if !ok || len(body) < 52 {
		return false
	}
	be := binary.BigEndian
	if be.Uint64(body) != inode(st) || int64(be.Uint64(body[8:])) != st.Size() || inode(st) == 0 {
		return false
	}
	last := int64(be.Uint64(body[16:]))
	count := int(be.Uint32(body[48:]))
	entries := body[52:]
	if last >= limit || count == 0 || len(entries) != 16*count {
		return false
	}
	seg.size, seg.last = st.Size(), last
	seg.firstTimestamp = int64(be.Uint64(body[24:]))
	seg.maxTimestamp = int64(be.Uint64(body[32:]))
	seg.maxTimestampOffset = int64(be.Uint64(body[40:]))
	seg.index = make([]indexEntry, count)
	for i := range seg.index {
		e := entries[16*i:]
		seg.index[i] = indexEntry{relOffset: be.Uint32(e), pos: be.Uint32(e[4:]), timestampBefore: int64(be.Uint64(e[8:]))}
	}
	return true
}

// writeFold records the epochs, producer table and transaction table that
// the batches before base leave.
func writeFold(dir string, base int64, epochs []epochStart, p producers, tx *txns) {
	be := binary.BigEndian
	b := append([]byte(foldMagic), make([]byte, 0, 16+12*len(epochs)+72*len(p))...)
	b = be.AppendUint64(b, uint64(base))
	b = be.AppendUint32(b, uint32(len(epochs)))
	for _, e := range epochs {
		b = be.AppendUint32(b, uint32(e.Epoch))
		b = be.AppendUint64(b, uint64(e.Start))
	}
	b = be.AppendUint32(b, uint32(len(p)))
	for id, st := range p {
		b = be.AppendUint64(b, uint64(id))
		b = be.AppendUint16(b, uint16(st.Epoch))
		b = be.AppendUint64(b, uint64(st.Marker))
		b = append(b, byte(len(st.Recent)))
		for _, r := range st.Recent {
			b = be.AppendUint32(b, uint32(r.FirstSeq))
			b = be.AppendUint32(b, uint32(r.LastSeq))
			b = be.AppendUint64(b, uint64(r.BaseOffset))
			b = be.AppendUint64(b, uint64(r.LastOffset))
			b = be.AppendUint64(b, uint64(r.MaxTimestamp))
		}
	}
	b = be.AppendUint32(b, uint32(len(tx.open)))
	for id, first := range tx.open {
		b = be.AppendUint64(b, uint64(id))
		b = be.AppendUint64(b, uint64(first))
	}
	b = be.AppendUint32(b, uint32(len(tx.aborted)))
	for _, a := range tx.aborted {
		b = be.AppendUint64(b, uint64(a.ProducerID))
		b = be.AppendUint64(b, uint64(a.FirstOffset))
		b = be.AppendUint64(b, uint64(a.LastOffset))
	}
	b = be.AppendUint32(b, uint32(len(tx.ended)))
	for id, e := range tx.ended {
		b = be.AppendUint64(b, uint64(id))
		b = be.AppendUint64(b, uint64(e.Seq))
		b = be.AppendUint64(b, uint64(e.Marker))
	}
	_ = os.WriteFile(foldPath(dir, base), sealSidecar(b), 0o644)
}

// fold is what loadFold reads back.
type fold struct {
	epochs   []epochStart
	producer producers
	txn      txns
}

// loadFold reads the fold written for base.
func loadFold(dir string, base int64) (fold, bool) {
	body, ok := openSidecar(foldPath(dir, base), foldMagic)
	if !ok {
		return fold{}, false
	}
	r := sidecarReader{b: body}
	if int64(r.u64()) != base {
		return fold{}, false
	}
	n := int(r.u32())
	if n > len(body)/12 {
		return fold{}, false
	}
	f := fold{epochs: make([]epochStart, 0, n), producer: producers{}, txn: newTxns()}
	for ; n > 0; n-- {
		f.epochs = append(f.epochs, epochStart{Epoch: int32(r.u32()), Start: int64(r.u64())})
	}
	for n := r.u32(); n > 0 && r.ok(); n-- {
		id := int64(r.u64())
		st := &producerState{Epoch: int16(r.u16()), Marker: int64(r.u64())}
		count := int(r.u8())
		if count > producerWindow || count == 0 && st.Marker < 0 {
			return fold{}, false
		}
		for ; count > 0; count-- {
			st.Recent = append(st.Recent, producerBatch{FirstSeq: int32(r.u32()), LastSeq: int32(r.u32()),
				BaseOffset: int64(r.u64()), LastOffset: int64(r.u64()), MaxTimestamp: int64(r.u64())})
		}
		f.producer[id] = st
	}
	for n := r.u32(); n > 0 && r.ok(); n-- {
		f.txn.open[int64(r.u64())] = int64(r.u64())
	}
	for n := r.u32(); n > 0 && r.ok(); n-- {
		f.txn.aborted = append(f.txn.aborted, AbortedTxn{ProducerID: int64(r.u64()), FirstOffset: int64(r.u64()), LastOffset: int64(r.u64())})
	}
	for n := r.u32(); n > 0 && r.ok(); n-- {
		f.txn.ended[int64(r.u64())] = endedTxn{Seq: int64(r.u64()), Marker: int64(r.u64())}
	}
	if !r.ok() || r.pos != len(body) {
		return fold{}, false
	}
	return f, true
}

// sidecarReader reads big-endian fields; reading past the end marks it bad
// and yields zeros.
type sidecarReader struct {
	b   []byte
	pos int
	bad bool
}

func (r *sidecarReader) take(n int) []byte {
	if r.bad || r.pos+n > len(r.b) {
		r.bad = true
		return make([]byte, n)
	}
	r.pos += n
	return r.b[r.pos-n : r.pos]
}

func (r *sidecarReader) ok() bool    { return !r.bad }
func (r *sidecarReader) u8() uint8   { return r.take(1)[0] }
func (r *sidecarReader) u16() uint16 { return binary.BigEndian.Uint16(r.take(2)) }
func (r *sidecarReader) u32() uint32 { return binary.BigEndian.Uint32(r.take(4)) }
func (r *sidecarReader) u64() uint64 { return binary.BigEndian.Uint64(r.take(8)) }

// canonicalEpochs is the epoch list a scan of the remaining batches would
// build, given one that may start with epochs of batches since deleted:
// the epoch in force at the first remaining batch starts there.
func canonicalEpochs(epochs []epochStart, firstBatch int64, haveBatches bool) []epochStart {
	if !haveBatches {
		return nil
	}
	for len(epochs) > 1 && epochs[1].Start <= firstBatch {
		epochs = epochs[1:]
	}
	if len(epochs) > 0 && epochs[0].Start < firstBatch {
		epochs = append([]epochStart{{Epoch: epochs[0].Epoch, Start: firstBatch}}, epochs[1:]...)
	}
	return epochs
}

func removeSidecars(dir string, base int64) {
	_ = os.Remove(indexPath(filepath.Join(dir, segmentName(base))))
	_ = os.Remove(foldPath(dir, base))
}

// removeOrphanSidecars deletes sidecar files of segments that are gone.
func removeOrphanSidecars(dir string, bases []int64) error {
	keep := map[string]bool{}
	for _, b := range bases {
		keep[indexPath(filepath.Join(dir, segmentName(b)))] = true
		keep[foldPath(dir, b)] = true
	}
	for _, pattern := range []string{"*.idx", "*.fold"} {
		names, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return err
		}
		for _, n := range names {
			if !keep[n] {
				if err := os.Remove(n); err != nil && !os.IsNotExist(err) {
					return err
				}
			}
		}
	}
	return nil
}
