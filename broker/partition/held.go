package partition

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// What ordered growth (docs/design/ordered-growth.md) reads of a log: the
// keys of the records after a split, and the records before a hold.

// EachKey calls fn with the offset and key of each record in batches, as
// Read returns them, in order, and returns the offset after the last
// batch it read whole; control batches hold no record of a producer's and
// are skipped. It stops at the first batch that does not parse, with its
// error.
func EachKey(batches []byte, fn func(offset int64, key []byte)) (int64, error) {
	decompressing <- struct{}{}
	defer func() { <-decompressing }()
	dec := batchDecompressor()
	next := int64(-1)
	for len(batches) >= batchHeaderLength {
		h, err := readHeader(batches)
		if err != nil || int(h.Length) > len(batches) {
			return next, err
		}
		raw := batches[:h.Length]
		batches = batches[h.Length:]
		if h.Attributes&attrControl == 0 {
			if err := eachRecord(raw, dec, func(offset int64, r *kmsg.Record, _ int64) { fn(offset, r.Key) }); err != nil {
				return next, err
			}
		}
		next = h.BaseOffset + int64(h.LastDelta) + 1
	}
	return next, nil
}

// RecordsBefore trims batches, as Read returns them, to the records before
// offset: the batches that end before it whole, and the one that spans it
// rewritten to end there. A consumer held at offset then reads nothing
// past it, and its next fetch starts at offset, inside the batch, as a
// client does after a batch cut short.
func RecordsBefore(batches []byte, offset int64) []byte {
	n := 0
	for n+batchHeaderLength <= len(batches) {
		h, err := readHeader(batches[n:])
		if err != nil || h.BaseOffset >= offset || n+int(h.Length) > len(batches) {
			break
		}
		if h.BaseOffset+int64(h.LastDelta) < offset {
			n += int(h.Length)
			continue
		}
		return append(batches[:n:n], cutBatch(batches[n:n+int(h.Length)], offset)...)
	}
	return batches[:n]
}

// cutBatch is raw with only its records before offset, its last offset
// delta moved to offset-1: a client takes a batch's last offset for where
// to fetch next. A batch with no record at or past offset (compaction
// left a gap there) stays whole, and so does one whose records do not
// parse (compactBatch): the fetch then serves it as the log holds it.
func cutBatch(raw []byte, offset int64) []byte {
	decompressing <- struct{}{}
	defer func() { <-decompressing }()
	out, removed, err := compactBatch(raw, func(o int64, _ *kmsg.Record, _ int64) bool { return o < offset }, batchDecompressor())
	if err != nil || removed == 0 {
		return raw
	}
	base := int64(binary.BigEndian.Uint64(out[offBaseOffset:]))
	binary.BigEndian.PutUint32(out[offLastDelta:], uint32(offset-1-base))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], crc32c))
	return out
}

// EndOfBatches is one past the last offset of whole batches as Read
// returns them; 0 for none.
func EndOfBatches(batches []byte) int64 {
	end := int64(0)
	for n := 0; n+batchHeaderLength <= len(batches); {
		h, err := readHeader(batches[n:])
		if err != nil || n+int(h.Length) > len(batches) {
			break
		}
		end = h.BaseOffset + int64(h.LastDelta) + 1
		n += int(h.Length)
	}
	return end
}
