package lag

import (
	"cmp"
	"context"
	"encoding/binary"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MaxExact is the longest span Skipped reads: a longer one is counted in
// offsets. A marker matters where the lag is small (a scale to zero, an
// activation threshold); a lag of thousands is no less true for the one
// marker per transaction in it, and reading it all at every sync would
// cost as much as consuming it.
const MaxExact = 1000

// partitionMaxBytes bounds what one span's read returns; whatever it does
// not reach is counted as records, so a lag is never under-reported. It
// is small because exactness matters where a lag is a few records and
// the markers after them (a group that read everything, whose lag must
// read 0), and because a topic without transactions gains nothing from
// the read: at every sync it costs at most this per lagging partition.
const partitionMaxBytes = 64 << 10

// Span is a group's unread offsets of one partition, [From, End).
type Span struct {
	Topic     string
	Partition int32
	From, End int64
}

// Skipped returns, by topic and partition, how many offsets of each span
// of at most MaxExact offsets hold no record a read_committed consumer is
// given. It reads each span with one Fetch to the partition's leader;
// a span that cannot be read (no leader, no READ on the topic) counts
// nothing skipped.
func Skipped(ctx context.Context, cl *kgo.Client, spans []Span) map[string]map[int32]int64 {
	out := map[string]map[int32]int64{}
	var topics []string
	byTopic := map[string]map[int32]Span{}
	for _, s := range spans {
		if s.End-s.From <= 0 || s.End-s.From > MaxExact {
			continue
		}
		if byTopic[s.Topic] == nil {
			topics = append(topics, s.Topic)
			byTopic[s.Topic] = map[int32]Span{}
		}
		byTopic[s.Topic][s.Partition] = s
	}
	if len(topics) == 0 {
		return out
	}
	meta, err := kadm.NewClient(cl).Metadata(ctx, topics...)
	if err != nil {
		return out
	}
	names := map[[16]byte]string{} // v13+ names topics by id only
	for name, td := range meta.Topics {
		names[td.ID] = name
	}
	for leader, req := range fetchesByLeader(meta, byTopic) {
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err != nil {
			continue
		}
		for _, t := range resp.Topics {
			name := t.Topic
			if name == "" {
				name = names[t.TopicID]
			}
			for _, p := range t.Partitions {
				if s, ok := byTopic[name][p.Partition]; ok && p.ErrorCode == 0 {
					if out[name] == nil {
						out[name] = map[int32]int64{}
					}
					out[name][p.Partition] = skippedIn(s, p.RecordBatches, p.AbortedTransactions)
				}
			}
		}
	}
	return out
}

// fetchesByLeader builds one read_committed Fetch per leader for the spans.
func fetchesByLeader(meta kadm.Metadata, byTopic map[string]map[int32]Span) map[int32]*kmsg.FetchRequest {
	reqs := map[int32]*kmsg.FetchRequest{}
	for topic, spans := range byTopic {
		td, ok := meta.Topics[topic]
		if !ok || td.Err != nil {
			continue
		}
		for _, s := range spans {
			pd, ok := td.Partitions[s.Partition]
			if !ok || pd.Leader < 0 {
				continue
			}
			req := reqs[pd.Leader]
			if req == nil {
				req = kmsg.NewPtrFetchRequest()
				req.MaxBytes, req.IsolationLevel, req.SessionEpoch = 16<<20, 1, -1
				reqs[pd.Leader] = req
			}
			i := len(req.Topics) - 1
			if i < 0 || req.Topics[i].Topic != topic {
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic, rt.TopicID = topic, td.ID
				req.Topics = append(req.Topics, rt)
				i++
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = s.Partition, s.From, partitionMaxBytes
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		}
	}
	return reqs
}

// skippedIn counts the offsets of s, in the batches a read_committed
// Fetch returned from s.From, that hold a marker or an aborted record. A
// producer's batches are aborted from the first offset the Fetch names
// for one of its aborted transactions up to its abort marker, as Kafka's
// consumer reads them.
func skippedIn(s Span, batches []byte, aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction) int64 {
	aborted = slices.Clone(aborted)
	slices.SortFunc(aborted, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
		return cmp.Compare(a.FirstOffset, b.FirstOffset)
	})
	inAborted := map[int64]bool{}
	var skipped int64
	for len(batches) >= 12 {
		size := 12 + int(int32(binary.BigEndian.Uint32(batches[8:12])))
		if size <= 12 || size > len(batches) {
			break // a batch cut short by the byte limit
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(batches[:size]); err != nil || b.Magic != 2 {
			break
		}
		batches = batches[size:]
		lastOffset := b.FirstOffset + int64(b.LastOffsetDelta)
		for len(aborted) > 0 && aborted[0].FirstOffset <= lastOffset {
			inAborted[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		n := max(min(lastOffset, s.End-1)-max(b.FirstOffset, s.From)+1, 0)
		control, transactional := b.Attributes&0x20 != 0, b.Attributes&0x10 != 0
		switch {
		case control:
			skipped += n
			if isAbort(b) {
				delete(inAborted, b.ProducerID)
			}
		case transactional && inAborted[b.ProducerID]:
			skipped += n
		}
	}
	return skipped
}

// isAbort reads a control batch's record: its key's second int16 is the
// marker's type, 0 for an abort.
func isAbort(b kmsg.RecordBatch) bool {
	if b.NumRecords != 1 || b.Attributes&0x07 != 0 {
		return false // markers are single, uncompressed records
	}
	var r kmsg.Record
	if err := r.ReadFrom(b.Records); err != nil || len(r.Key) < 4 {
		return false
	}
	return binary.BigEndian.Uint16(r.Key[2:4]) == 0
}
