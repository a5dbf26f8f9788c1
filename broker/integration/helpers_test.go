package integration

import (
	"context"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type kadmOffset = kadm.ListedOffset

// batch builds an uncompressed RecordBatch v2 with a correct CRC, the way a
// producer sends it. producerID -1 makes it non-idempotent.
func batch(producerID int64, epoch int16, firstSeq int32, values ...string) []byte {
	var records []byte
	now := time.Now().UnixMilli()
	for i, v := range values {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Value = []byte(v)
		r.Length = int32(len(r.AppendTo(nil)) - 1) // everything after the zero length varint
		records = r.AppendTo(records)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: producerID, ProducerEpoch: epoch,
		FirstSequence: firstSeq, NumRecords: int32(len(values)), Records: records,
	}
	raw := b.AppendTo(nil)
	// Length covers everything after itself; the CRC covers everything after itself.
	b.Length = int32(len(raw) - 12)
	raw = b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(nil)
}

// produceRaw sends one Produce request for one partition and returns the
// partition's response.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, partition int32, acks int16, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("produce request: %v", err)
		}
		p := resp.Topics[0].Partitions[0]
		// Leadership may still be settling right after a topic is created.
		if p.ErrorCode == 6 && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		return p
	}
}
