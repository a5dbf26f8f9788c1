package partition

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Byte positions inside a RecordBatch v2 header, as fixed by the Kafka log
// format. Only the fields the log patches or indexes are named.
const (
	offBaseOffset     = 0
	offBatchLength    = 8
	offLeaderEpoch    = 12
	offMagic          = 16
	offCRC            = 17
	offAttributes     = 21
	offLastDelta      = 23
	offMaxTimestamp   = 35
	offProducerID     = 43
	offProducerEpoch  = 51
	offBaseSequence   = 53
	batchHeaderLength = 61

	attrTimestampType = 0x08 // set: the timestamps are the log append time
	attrTransactional = 0x10
	attrControl       = 0x20
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// header is the part of a batch header the log needs to index a batch.
type header struct {
	BaseOffset    int64
	Length        int32 // whole batch, including the first 12 bytes
	LeaderEpoch   int32
	Attributes    int16
	LastDelta     int32
	MaxTimestamp  int64
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
}

func (h header) lastSequence() int32 { return addSeq(h.BaseSequence, h.LastDelta) }

var errShortBatch = errors.New("partition: truncated record batch")

func readHeader(b []byte) (header, error) {
	if len(b) < batchHeaderLength {
		return header{}, errShortBatch
	}
	be := binary.BigEndian
	h := header{
		BaseOffset:    int64(be.Uint64(b[offBaseOffset:])),
		Length:        int32(be.Uint32(b[offBatchLength:])) + 12,
		LeaderEpoch:   int32(be.Uint32(b[offLeaderEpoch:])),
		Attributes:    int16(be.Uint16(b[offAttributes:])),
		LastDelta:     int32(be.Uint32(b[offLastDelta:])),
		MaxTimestamp:  int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:    int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch: int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:  int32(be.Uint32(b[offBaseSequence:])),
	}
	if h.Length < batchHeaderLength || b[offMagic] != 2 || h.LastDelta < 0 {
		return header{}, kerr.CorruptMessage
	}
	return h, nil
}

// RecordCount is how many records batches that SplitBatches returned
// hold, by their headers: the last offset delta of each, plus one.
func RecordCount(batches [][]byte) int {
	n := 0
	for _, b := range batches {
		if h, err := readHeader(b); err == nil {
			n += int(h.LastDelta) + 1
		}
	}
	return n
}

// SplitBatches validates a produce request's records field and returns its
// batches. It rejects anything but well-formed RecordBatch v2 with a correct
// CRC, so nothing malformed ever reaches the Raft log.
func SplitBatches(records []byte, maxBatchBytes int32) ([][]byte, error) {
	if len(records) == 0 {
		return nil, kerr.InvalidRecord
	}
	var out [][]byte
	for len(records) > 0 {
		h, err := readHeader(records)
		if err != nil {
			return nil, kerr.CorruptMessage
		}
		if int(h.Length) > len(records) {
			return nil, kerr.CorruptMessage
		}
		if maxBatchBytes > 0 && h.Length > maxBatchBytes {
			return nil, kerr.MessageTooLarge
		}
		b := records[:h.Length]
		if crc32.Checksum(b[offAttributes:], crc32c) != binary.BigEndian.Uint32(b[offCRC:]) {
			return nil, kerr.CorruptMessage
		}
		if h.Attributes&attrControl != 0 {
			return nil, kerr.InvalidRecord // markers are the coordinator's alone
		}
		out = append(out, b)
		records = records[h.Length:]
	}
	return out, nil
}

// addSeq adds to a producer sequence number with Kafka's wrap-around at
// MaxInt32.
func addSeq(seq, delta int32) int32 {
	s := int64(seq) + int64(delta)
	if s > 1<<31-1 {
		s -= 1 << 31
	}
	return int32(s)
}

// stampAppendTime marks a batch's timestamps as the log append time and
// sets its max timestamp to it, as Kafka does for LogAppendTime topics
// (consumers then read that time for every record); the CRC covers both.
func stampAppendTime(b []byte, appendTimeMs int64) {
	be := binary.BigEndian
	be.PutUint16(b[offAttributes:], be.Uint16(b[offAttributes:])|attrTimestampType)
	be.PutUint64(b[offMaxTimestamp:], uint64(appendTimeMs))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
}

func patchBatch(b []byte, baseOffset int64, epoch int32) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(baseOffset))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// TransactionalProducer reports the producer of a request's batches for a
// partition if they are all transactional and of one producer and epoch,
// as a transactional producer sends them.
func TransactionalProducer(batches [][]byte) (producerID int64, epoch int16, ok bool) {
	for i, b := range batches {
		h, err := readHeader(b)
		if err != nil || !h.isTransactional() || h.isControl() || i > 0 && (h.ProducerID != producerID || h.ProducerEpoch != epoch) {
			return 0, 0, false
		}
		producerID, epoch = h.ProducerID, h.ProducerEpoch
	}
	return producerID, epoch, len(batches) > 0
}
