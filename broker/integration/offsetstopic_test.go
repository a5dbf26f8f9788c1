package integration

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
	"github.com/raftka/raftka/broker/meta"
)

// offsetsEntry is one record of __consumer_offsets, decoded with kmsg.
type offsetsEntry struct {
	offset int64
	commit *kmsg.OffsetCommitKey
	value  *kmsg.OffsetCommitValue
	group  *kmsg.GroupMetadataValue
}

// readOffsetsTopic reads partition p of __consumer_offsets from the start
// to its end, decoding each record as Kafka's schemas say.
func readOffsetsTopic(ctx context.Context, t *testing.T, c *brokertest.Cluster, p int32) []offsetsEntry {
	t.Helper()
	// Asked again while a broker the test killed still leads some of
	// the topic's partitions, or is the seed a client tries first.
	var end kadm.ListedOffset
	waitFor(t, 20*time.Second, "the end offset of "+meta.OffsetsTopic, func() bool {
		cl := c.Client()
		defer cl.Close()
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, meta.OffsetsTopic)
		o, ok := ends.Lookup(meta.OffsetsTopic, p)
		end = o
		return err == nil && ok && o.Err == nil
	})
	cl := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{meta.OffsetsTopic: {p: kgo.NewOffset().AtStart()}}))
	var out []offsetsEntry
	for len(out) == 0 || out[len(out)-1].offset < end.Offset-1 {
		fetches := cl.PollFetches(ctx)
		// A seed broker the test killed refuses the client's dials; it
		// retries on the others.
		if err := fetches.Err(); err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("reading %s/%d: %v (read %d records, end %d)", meta.OffsetsTopic, p, err, len(out), end.Offset)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			out = append(out, decodeOffsetsRecord(t, r))
		})
	}
	return out
}

func decodeOffsetsRecord(t *testing.T, r *kgo.Record) offsetsEntry {
	e := offsetsEntry{offset: r.Offset}
	if len(r.Key) < 2 {
		t.Fatalf("record at %d: key %x", r.Offset, r.Key)
	}
	switch version := int16(r.Key[0])<<8 | int16(r.Key[1]); version {
	case 0, 1:
		e.commit = new(kmsg.OffsetCommitKey)
		if err := e.commit.ReadFrom(r.Key); err != nil {
			t.Fatalf("offset commit key at %d: %v", r.Offset, err)
		}
		if r.Value != nil {
			e.value = new(kmsg.OffsetCommitValue)
			if err := e.value.ReadFrom(r.Value); err != nil || e.value.Version != 3 {
				t.Fatalf("offset commit value at %d: version %d, %v", r.Offset, e.value.Version, err)
			}
		}
	case 2:
		if r.Value != nil {
			e.group = new(kmsg.GroupMetadataValue)
			if err := e.group.ReadFrom(r.Value); err != nil || e.group.Version != 3 {
				t.Fatalf("group metadata value at %d: version %d, %v", r.Offset, e.group.Version, err)
			}
		}
	default:
		t.Fatalf("record at %d: key version %d", r.Offset, version)
	}
	return e
}

// TestConsumerOffsetsTopicReadOnly: __consumer_offsets is listed as
// Kafka lists it, internal and of 50 partitions; a group's commits and
// membership are records of its partition (Java's hash of its id), in
// Kafka's schemas, the latest commit of each partition its committed
// offset; franz-go's regex consumer skips it, kcat reads it, a write to it
// is refused as Kafka refuses it, and it cannot be created. It survives
// its leader, the coordinator, SIGKILLed.
func TestConsumerOffsetsTopicReadOnly(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c.CreateTopic("ledger", 3, 3, nil)
	producer := c.Client(kgo.DefaultProduceTopic("ledger"))
	for i := range 60 {
		if err := producer.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumer := c.Client(kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("ledger"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if _, err := brokertest.ConsumeN(ctx, consumer, 60); err != nil {
		t.Fatal(err)
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	adm := c.Admin()
	listed, err := adm.ListTopicsWithInternal(ctx, meta.OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	internal := listed[meta.OffsetsTopic]
	if internal.Err != nil || !internal.IsInternal || len(internal.Partitions) != 50 || internal.Partitions[0].Leader != md.Controller {
		t.Fatalf("%s in Metadata: %+v, want internal, 50 partitions, led by the coordinator %d", meta.OffsetsTopic, internal, md.Controller)
	}
	waitFor(t, 10*time.Second, "the group's membership recorded", func() bool {
		return slices.ContainsFunc(readOffsetsTopic(ctx, t, c, meta.OffsetsPartition("billing")), func(e offsetsEntry) bool { return e.group != nil })
	})
	checkOffsetsTopicOfGroup(ctx, t, c, "billing", "ledger")

	consumer.Close() // leaves: the group empties
	checkOffsetsTopicEdges(ctx, t, c)

	c.Kill(int(md.Controller))
	waitFor(t, 20*time.Second, "a new coordinator to serve "+meta.OffsetsTopic, func() bool {
		// A client of its own each time: kadm answers from its client's
		// cached metadata.
		next, err := kadm.NewClient(c.Client()).BrokerMetadata(ctx)
		return err == nil && next.Controller >= 0 && next.Controller != md.Controller
	})
	checkOffsetsTopicOfGroup(ctx, t, c, "billing", "ledger")
}

// checkOffsetsTopicOfGroup: the group's records, in order, end with its
// committed offsets, and hold its membership.
func checkOffsetsTopicOfGroup(ctx context.Context, t *testing.T, c *brokertest.Cluster, group, topic string) {
	t.Helper()
	// Asked again while the client's first dial goes to a seed the test
	// killed.
	var committed kadm.OffsetResponses
	waitFor(t, 20*time.Second, "the committed offsets of "+group, func() bool {
		cl := c.Client()
		defer cl.Close()
		var err error
		committed, err = kadm.NewClient(cl).FetchOffsets(ctx, group)
		return err == nil
	})
	last := map[int32]int64{}
	members := -1
	var prev int64 = -1
	for _, e := range readOffsetsTopic(ctx, t, c, meta.OffsetsPartition(group)) {
		if e.offset <= prev {
			t.Fatalf("offset %d after %d", e.offset, prev)
		}
		prev = e.offset
		switch {
		case e.commit != nil && e.commit.Group == group && e.value != nil:
			last[e.commit.Partition] = e.value.Offset
		case e.group != nil && e.group.ProtocolType == "consumer":
			members = len(e.group.Members)
		}
	}
	for p := range int32(3) {
		want, _ := committed.Lookup(topic, p)
		if last[p] != want.At || want.At <= 0 {
			t.Errorf("%s/%d: the last commit in %s is %d, the group committed %d", topic, p, meta.OffsetsTopic, last[p], want.At)
		}
	}
	if members < 0 {
		t.Errorf("no group metadata record of %s", group)
	}
}

// checkOffsetsTopicEdges: the regex consumer skips the topic, kcat reads
// it, a produce to it and its creation are refused.
func checkOffsetsTopicEdges(ctx context.Context, t *testing.T, c *brokertest.Cluster) {
	t.Helper()
	regex := c.Client(kgo.ConsumeRegex(), kgo.ConsumeTopics(".*"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	records, err := brokertest.ConsumeN(ctx, regex, 60)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		if r.Topic != "ledger" {
			t.Fatalf("the regex consumer read %s", r.Topic)
		}
	}
	p := meta.OffsetsPartition("billing")
	out := kcat(t, "", "-b", c.AllAddrs()[0], "-C", "-t", meta.OffsetsTopic, "-p", strconv.Itoa(int(p)), "-o", "beginning", "-e", "-f", "%o %K\n")
	if lines := strings.Count(out, "\n"); lines < 4 {
		t.Errorf("kcat read %d records of %s/%d:\n%s", lines, meta.OffsetsTopic, p, out)
	}
	err = c.Client().ProduceSync(ctx, &kgo.Record{Topic: meta.OffsetsTopic, Partition: 0, Value: []byte("forged")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Errorf("a produce to %s: %v, want INVALID_TOPIC_EXCEPTION", meta.OffsetsTopic, err)
	}
	created, err := c.Admin().CreateTopic(ctx, 1, 3, nil, meta.OffsetsTopic)
	if err == nil {
		err = created.Err
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Errorf("creating %s: %v, want TOPIC_ALREADY_EXISTS", meta.OffsetsTopic, err)
	}
}
