package brokertest

import (
	"hash/crc32"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RecordBatch builds an uncompressed RecordBatch v2 with a correct CRC, the
// way a producer sends it. producerID -1 makes it non-idempotent.
func RecordBatch(producerID int64, epoch int16, firstSeq int32, values ...string) []byte {
	return RecordBatchAt(time.Now().UnixMilli(), producerID, epoch, firstSeq, values...)
}

// RecordBatchAt is RecordBatch with every record stamped at now
// (milliseconds since the epoch).
func RecordBatchAt(now int64, producerID int64, epoch int16, firstSeq int32, values ...string) []byte {
	return recordBatch(now, 0, producerID, epoch, firstSeq, values...)
}

// TransactionalRecordBatch is RecordBatch marked transactional, as a
// transactional producer's.
func TransactionalRecordBatch(producerID int64, epoch int16, firstSeq int32, values ...string) []byte {
	return recordBatch(time.Now().UnixMilli(), 0x10, producerID, epoch, firstSeq, values...)
}

func recordBatch(now int64, attributes int16, producerID int64, epoch int16, firstSeq int32, values ...string) []byte {
	var records []byte
	for i, v := range values {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Value = []byte(v)
		r.Length = int32(len(r.AppendTo(nil)) - 1) // everything after the zero length varint
		records = r.AppendTo(records)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: attributes, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: producerID, ProducerEpoch: epoch,
		FirstSequence: firstSeq, NumRecords: int32(len(values)), Records: records,
	}
	// Length counts the bytes after itself; the CRC covers those after itself.
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	raw := b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(nil)
}
