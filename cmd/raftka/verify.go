package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitionReport is what verify read of one partition.
type partitionReport struct {
	Partition int32 `json:"partition"`
	From      int64 `json:"from"`
	To        int64 `json:"to"`
	Records   int64 `json:"records"`
	Batches   int64 `json:"batches"`
	// Producers counts the idempotent producers and the numbered records'
	// producers seen.
	Producers int `json:"producers"`
}

// verifyReport is verify's whole answer.
type verifyReport struct {
	Topic      string            `json:"topic"`
	Compacted  bool              `json:"compacted,omitempty"`
	Produced   int               `json:"produced,omitempty"`
	Acked      int               `json:"acknowledged,omitempty"`
	Partitions []partitionReport `json:"partitions"`
	Problems   []problem         `json:"problems"`
}

// verify reads a topic, or a window of it, and checks each partition for
// the two sequences the seeds describe: the idempotent producers' own, in
// every batch header, and numbered records' (numbering), and that offsets
// are dense where nothing may have removed records. With --produce N it
// first writes N numbered records itself and then checks that every
// acknowledged one is read back exactly once, in order.
func verify(fs *pflag.FlagSet) runFunc {
	from := fs.String("from", "start", "where to start: "+positionForms)
	to := fs.String("to", "end", "where to stop: "+positionForms)
	produceN := fs.Int("produce", 0, "first produce N numbered records, then verify them")
	return func(ctx context.Context, e *env, topics []string) error {
		if len(topics) != 1 {
			return usagef("name one topic")
		}
		if *produceN < 0 {
			return usagef("--produce %d: want a count of records", *produceN)
		}
		if *produceN > 0 && *from != "start" {
			return usagef("--produce reads what it writes: it takes no --from")
		}
		start, err := parsePosition("--from", *from)
		if err != nil {
			return err
		}
		end, err := parsePosition("--to", *to)
		if err != nil {
			return err
		}
		topic := topics[0]
		cl, err := e.client(ctx, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			return err
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		detail, err := describeTopic(ctx, adm, topic)
		if err != nil {
			return err
		}
		report := verifyReport{Topic: topic, Compacted: detail.compacted}
		if *produceN > 0 {
			// What the run writes: from where the partitions end now.
			start = position{kind: atEnd}
		}
		starts, err := start.resolve(ctx, adm, topic)
		if err != nil {
			return err
		}
		var own *numbering
		var acked map[int32][]int64
		if *produceN > 0 {
			own = newNumbering("verify-"+randomName(), int32(len(detail.partitions)))
			if acked, err = produceNumbered(ctx, cl, own, *produceN); err != nil {
				return err
			}
			report.Produced = *produceN
			for _, seqs := range acked {
				report.Acked += len(seqs)
			}
		}
		ends, err := end.resolve(ctx, adm, topic)
		if err != nil {
			return err
		}
		for _, p := range detail.partitions {
			r := partitionReader{cl: cl, adm: adm, topic: topic, id: detail.id, partition: p, compacted: detail.compacted, own: own, led: -1}
			pr, problems, err := r.read(ctx, starts[topic][p].Offset, ends[topic][p].Offset)
			if err != nil {
				return err
			}
			report.Partitions = append(report.Partitions, pr)
			report.Problems = append(report.Problems, problems...)
			if own != nil {
				report.Problems = append(report.Problems, r.missingAcked(acked[p])...)
			}
		}
		if err := printVerifyReport(e, report); err != nil {
			return err
		}
		if n := len(report.Problems); n > 0 {
			return fmt.Errorf("found %s in topic %s", plural(n, "problem"), topic)
		}
		return nil
	}
}

// topicDetail is what verify needs of a topic.
type topicDetail struct {
	id         [16]byte
	partitions []int32
	compacted  bool
}

// unknownTopicGrace is how long describeTopic asks again about a topic a
// broker does not know: one that just started may not have caught up
// with the metadata yet.
const unknownTopicGrace = 3 * time.Second

func describeTopic(ctx context.Context, adm *kadm.Client, topic string) (topicDetail, error) {
	var d kadm.TopicDetail
	for deadline := time.Now().Add(unknownTopicGrace); ; time.Sleep(200 * time.Millisecond) {
		details, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return topicDetail{}, err
		}
		d = details[topic]
		if !errors.Is(d.Err, kerr.UnknownTopicOrPartition) || time.Now().After(deadline) {
			break
		}
	}
	if d.Err != nil {
		return topicDetail{}, fmt.Errorf("topic %s: %w", topic, d.Err)
	}
	out := topicDetail{id: d.ID, partitions: d.Partitions.Numbers()}
	slices.Sort(out.partitions)
	configs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return topicDetail{}, err
	}
	if rc, err := configs.On(topic, nil); err == nil {
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" && c.Value != nil && strings.Contains(*c.Value, "compact") {
				out.compacted = true
			}
		}
	}
	return out, nil
}

// partitionReader reads one partition's batches from its leader with
// Fetch, as they are stored, headers included.
type partitionReader struct {
	cl        *kgo.Client
	adm       *kadm.Client
	topic     string
	id        [16]byte
	partition int32
	compacted bool
	own       *numbering // verify --produce's records, or nil
	// led is the partition's leader as last asked, or -1.
	led int32
	// ownRead counts the reads of each of own's sequences.
	ownRead map[int64]int
}

// maxEmptyFetches bounds the fetches that return nothing before the end
// verify was asked to read to.
const maxEmptyFetches = 20

func (r *partitionReader) read(ctx context.Context, from, to int64) (partitionReport, []problem, error) {
	pr := partitionReport{Partition: r.partition, From: from, To: to}
	batches := newSequences(r.partition, batchSequences)
	numbered := newSequences(r.partition, numberedSequences)
	// A read of the whole partition from offset 0 sees every number from
	// 0; records below a later log start were removed, not lost.
	numbered.fromZero = from == 0
	r.ownRead = map[int64]int{}
	var problems []problem
	note := func(p *problem) {
		if p != nil {
			problems = append(problems, *p)
		}
	}
	decompress := kgo.DefaultDecompressor()
	next, empty := from, 0
	for next < to {
		fetched, logStart, err := r.fetch(ctx, next)
		if err != nil {
			return pr, nil, err
		}
		if next < logStart {
			// Retention or DeleteRecords removed these: no loss.
			next, pr.From = logStart, max(pr.From, logStart)
			numbered.fromZero = false
			continue
		}
		if len(fetched) == 0 {
			if empty++; empty > maxEmptyFetches {
				return pr, nil, fmt.Errorf("partition %d: no records from offset %d, before the end %d", r.partition, next, to)
			}
			continue
		}
		empty = 0
		for _, b := range fetched {
			last := b.FirstOffset + int64(b.LastOffsetDelta)
			if last < next {
				continue
			}
			if b.FirstOffset > next && !r.compacted {
				note(&problem{Partition: r.partition, Kind: problemOffsetGap, Offset: b.FirstOffset,
					Detail: fmt.Sprintf("offsets %d to %d missing", next, b.FirstOffset-1)})
			}
			next = last + 1
			pr.Batches++
			control := b.Attributes&0x20 != 0
			if b.ProducerID >= 0 && !control {
				note(batches.observe(strconv.FormatInt(b.ProducerID, 10), b.ProducerEpoch, int64(b.FirstSequence), int64(b.LastOffsetDelta)+1, b.FirstOffset))
			}
			if control {
				continue
			}
			records, err := batchRecords(decompress, b)
			if err != nil {
				return pr, nil, fmt.Errorf("partition %d, batch at offset %d: %w", r.partition, b.FirstOffset, err)
			}
			for _, rec := range records {
				offset := b.FirstOffset + int64(rec.OffsetDelta)
				if offset < pr.From || offset >= to {
					continue
				}
				pr.Records++
				if producer, seq, ok := numberOf(rec.Headers); ok {
					note(numbered.observe(producer, 0, seq, 1, offset))
					if r.own != nil && producer == r.own.producer {
						r.ownRead[seq]++
					}
				}
			}
		}
	}
	pr.Producers = len(batches.producers) + len(numbered.producers)
	problems = append(problems, numbered.finish()...)
	slices.SortStableFunc(problems, func(a, b problem) int { return cmp.Compare(a.Offset, b.Offset) })
	return pr, problems, nil
}

// fetch asks the partition's leader for the batches from offset on,
// finding the leader again when it moved.
func (r *partitionReader) fetch(ctx context.Context, offset int64) ([]kmsg.RecordBatch, int64, error) {
	var lastErr error
	for attempt := 0; attempt < 10; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			case <-time.After(300 * time.Millisecond):
			}
		}
		leader, err := r.leader(ctx)
		if err != nil {
			lastErr = err
			continue
		}
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 200, 1, 8<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = r.topic, r.id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = r.partition, offset, 4<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, r.cl.Broker(int(leader)))
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			lastErr, r.led = err, -1 // the leader may have moved: ask again
			continue
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			lastErr = fmt.Errorf("partition %d: the leader answered %d topics", r.partition, len(resp.Topics))
			continue
		}
		p := resp.Topics[0].Partitions[0]
		switch err := kerr.ErrorForCode(p.ErrorCode); {
		case errors.Is(err, kerr.OffsetOutOfRange):
			return nil, p.LogStartOffset, nil
		case err != nil:
			lastErr, r.led = err, -1
			continue
		}
		batches, err := splitBatches(p.RecordBatches)
		return batches, p.LogStartOffset, err
	}
	return nil, 0, fmt.Errorf("read partition %d at offset %d: %w", r.partition, offset, lastErr)
}

// leader is the partition's leader, asked of the cluster only when not
// known yet or after a fetch failed.
func (r *partitionReader) leader(ctx context.Context) (int32, error) {
	if r.led >= 0 {
		return r.led, nil
	}
	md, err := r.adm.Metadata(ctx, r.topic)
	if err != nil {
		return -1, err
	}
	if r.led = md.Topics[r.topic].Partitions[r.partition].Leader; r.led < 0 {
		return -1, fmt.Errorf("partition %d has no leader", r.partition)
	}
	return r.led, nil
}

// splitBatches parses the record batches of a Fetch answer; a batch cut
// short at the end (the answer's size bound) is left for the next fetch.
func splitBatches(raw []byte) ([]kmsg.RecordBatch, error) {
	var out []kmsg.RecordBatch
	for len(raw) >= 12 {
		size := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
		if size > len(raw) {
			break
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:size]); err != nil {
			return nil, fmt.Errorf("a record batch does not parse: %w", err)
		}
		out = append(out, b)
		raw = raw[size:]
	}
	return out, nil
}

// batchRecords decompresses and parses a batch's records.
func batchRecords(d kgo.Decompressor, b kmsg.RecordBatch) ([]kmsg.Record, error) {
	raw := b.Records
	if codec := b.Attributes & 0x07; codec != 0 {
		var err error
		if raw, err = d.Decompress(raw, kgo.CompressionCodecType(codec)); err != nil {
			return nil, err
		}
	}
	out := make([]kmsg.Record, 0, b.NumRecords)
	for len(raw) > 0 {
		length, n := binary.Varint(raw)
		if n <= 0 || int(length) < 0 || n+int(length) > len(raw) {
			return nil, errors.New("a record is cut short")
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(raw[:n+int(length)]); err != nil {
			return nil, err
		}
		out = append(out, rec)
		raw = raw[n+int(length):]
	}
	return out, nil
}

// missingAcked reports acknowledged sequences of verify --produce's own
// records that the read did not find; those read twice are duplicates
// the sequence check reported already.
func (r *partitionReader) missingAcked(acked []int64) []problem {
	var out []problem
	for _, seq := range acked {
		if r.ownRead[seq] == 0 {
			out = append(out, problem{Partition: r.partition, Kind: problemUnacknowledged, Producer: r.own.producer, Offset: -1,
				Detail: fmt.Sprintf("acknowledged sequence %d not read back", seq)})
		}
	}
	return out
}

// produceNumbered writes n numbered records over the topic's partitions
// and returns each partition's acknowledged sequences.
func produceNumbered(ctx context.Context, cl *kgo.Client, own *numbering, n int) (map[int32][]int64, error) {
	var mu sync.Mutex
	acked := map[int32][]int64{}
	var firstErr error
	for i := 0; i < n; i++ {
		rec := &kgo.Record{Value: []byte("verify-" + strconv.Itoa(i))}
		seq := own.stamp(rec)
		cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			acked[r.Partition] = append(acked[r.Partition], seq)
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	for _, seqs := range acked {
		slices.Sort(seqs)
	}
	if firstErr != nil && len(acked) == 0 {
		return nil, fmt.Errorf("no record acknowledged: %w", firstErr)
	}
	return acked, nil
}

func randomName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func printVerifyReport(e *env, r verifyReport) error {
	if e.json {
		if r.Problems == nil {
			r.Problems = []problem{}
		}
		return printJSON(e.out, r)
	}
	var records, batches int64
	var cells [][]string
	for _, p := range r.Partitions {
		records += p.Records
		batches += p.Batches
		cells = append(cells, []string{strconv.Itoa(int(p.Partition)), strconv.FormatInt(p.From, 10), strconv.FormatInt(p.To, 10),
			strconv.FormatInt(p.Records, 10), strconv.Itoa(p.Producers)})
	}
	if r.Produced > 0 {
		_, _ = fmt.Fprintf(e.out, "produced %d numbered records, %d acknowledged\n", r.Produced, r.Acked)
	}
	_, _ = fmt.Fprintf(e.out, "topic %s: %d records in %d batches\n", r.Topic, records, batches)
	if err := printTable(e.out, []string{"PARTITION", "FROM", "TO", "RECORDS", "PRODUCERS"}, cells); err != nil {
		return err
	}
	if len(r.Problems) == 0 {
		_, _ = fmt.Fprintln(e.out, "no gaps, no duplicates")
		return nil
	}
	cells = nil
	for _, p := range r.Problems {
		offset := strconv.FormatInt(p.Offset, 10)
		if p.Offset < 0 {
			offset = "-"
		}
		cells = append(cells, []string{strconv.Itoa(int(p.Partition)), p.Kind, p.Producer, offset, p.Detail})
	}
	_, _ = fmt.Fprintln(e.out)
	return printTable(e.out, []string{"PARTITION", "PROBLEM", "PRODUCER", "OFFSET", "DETAIL"}, cells)
}
