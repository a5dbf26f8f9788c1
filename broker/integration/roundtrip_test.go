package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

// consumeAll reads a topic from the start until want records arrived.
func consumeAll(t *testing.T, c *brokertest.Cluster, topic string, want int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := c.Client(append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := brokertest.ConsumeN(ctx, cl, want)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestProduceConsumeRoundTrip(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	c.CreateTopic("orders", 6, 3, nil)
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("orders"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 3000
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("k%d", i%17)
		producer.Produce(ctx, &kgo.Record{Key: []byte(key), Value: []byte(fmt.Sprintf("%d", i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := consumeAll(t, c, "orders", n)
	if len(got) != n {
		t.Fatalf("got %d records, want %d", len(got), n)
	}
	// Per key, values arrive in the order produced; per partition, offsets
	// are dense from 0.
	lastByKey := map[string]int{}
	nextOffset := map[int32]int64{}
	seen := map[string]bool{}
	for _, r := range got {
		var v int
		if _, err := fmt.Sscanf(string(r.Value), "%d", &v); err != nil {
			t.Fatalf("value %q: %v", r.Value, err)
		}
		if last, ok := lastByKey[string(r.Key)]; ok && v <= last {
			t.Fatalf("key %s: value %d after %d", r.Key, v, last)
		}
		lastByKey[string(r.Key)] = v
		if r.Offset != nextOffset[r.Partition] {
			t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, nextOffset[r.Partition])
		}
		nextOffset[r.Partition]++
		if seen[string(r.Value)] {
			t.Fatalf("value %s read twice", r.Value)
		}
		seen[string(r.Value)] = true
	}
	// The end offsets the brokers report add up to what was produced.
	ends, err := c.Admin().ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadmOffset) { total += o.Offset })
	if total != n {
		t.Fatalf("end offsets sum to %d, want %d", total, n)
	}
}

// TestLogAppendTimeTopic: on a topic with message.timestamp.type
// LogAppendTime the brokers replace the producer's timestamps with the
// leader's clock, which every replica keeps (it is read after the leader
// is gone) and which kcat reads too.
func TestLogAppendTimeTopic(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	appendTime := "LogAppendTime"
	c.CreateTopic("stamped", 1, 3, map[string]*string{"message.timestamp.type": &appendTime})
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("stamped"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	before := time.Now().Add(-time.Second) // the brokers' clock is this machine's
	created := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 10; i++ {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(itoa(i)), Timestamp: created}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	after := time.Now().Add(time.Second)
	c.Kill(c.LeaderOf("stamped", 0))
	for _, r := range consumeAll(t, c, "stamped", 10) {
		if r.Timestamp.Before(before) || r.Timestamp.After(after) || r.Attrs.TimestampType() != 1 {
			t.Fatalf("record %d: %v (type %d), want the append time between %v and %v", r.Offset, r.Timestamp, r.Attrs.TimestampType(), before, after)
		}
	}
	out := kcat(t, "", "-C", "-b", strings.Join(c.AllAddrs(), ","), "-t", "stamped", "-o", "beginning", "-e", "-q", "-f", "%T\n")
	for _, line := range strings.Fields(out) {
		ms, err := strconv.ParseInt(line, 10, 64)
		if err != nil || ms < before.UnixMilli() || ms > after.UnixMilli() {
			t.Fatalf("kcat read timestamp %q, want the append time", line)
		}
	}
}

// A topic's compression.type other than "producer" has the leader compress
// each batch again in the topic's codec, as Kafka's broker does: every
// replica stores that codec (the leader is killed before the read), the
// records are as produced for franz-go and kcat, and a change of the
// setting applies to the batches produced after it.
func TestTopicCompressionType(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	zstd, uncompressed := "zstd", "uncompressed"
	c.CreateTopic("zstd-topic", 1, 3, map[string]*string{"compression.type": &zstd})
	c.CreateTopic("plain-topic", 1, 3, map[string]*string{"compression.type": &uncompressed})
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(topic string, from, to int) {
		t.Helper()
		var batch []*kgo.Record
		for i := from; i < to; i++ {
			batch = append(batch, &kgo.Record{Topic: topic, Key: []byte(itoa(i)), Value: []byte(strings.Repeat("value-"+itoa(i), 20))})
		}
		if err := producer.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(records []*kgo.Record, from int, codec uint8) {
		t.Helper()
		for i, r := range records {
			if want := strings.Repeat("value-"+itoa(from+i), 20); string(r.Value) != want || r.Attrs.CompressionType() != codec {
				t.Fatalf("offset %d: codec %d, value %.20q..., want codec %d and %.20q...", r.Offset, r.Attrs.CompressionType(), r.Value, codec, want)
			}
		}
	}
	produce("zstd-topic", 0, 20)
	produce("plain-topic", 0, 20)
	c.Kill(c.LeaderOf("zstd-topic", 0))
	check(consumeAll(t, c, "zstd-topic", 20), 0, 4)
	check(consumeAll(t, c, "plain-topic", 20), 0, 0)
	out := kcat(t, "", "-C", "-b", strings.Join(c.AllAddrs(), ","), "-t", "zstd-topic", "-o", "beginning", "-e", "-q", "-f", "%s\n")
	if lines := strings.Fields(out); len(lines) != 20 || lines[19] != strings.Repeat("value-19", 20) {
		t.Fatalf("kcat read %d records, the last %.30q...", len(lines), lines[len(lines)-1])
	}

	lz4 := "lz4"
	resps, err := c.Admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "compression.type", Value: &lz4}}, "plain-topic")
	if err == nil {
		err = resps[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	// The leader applies the change once its copy of the metadata has it,
	// as a Kafka broker does once the change reaches it.
	leader, cl := c.LeaderOf("plain-topic", 0), c.Client()
	waitFor(t, 10*time.Second, "the leader to see compression.type=lz4", func() bool {
		req := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeTopic, "plain-topic", []string{"compression.type"}
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, cl.Broker(leader))
		return err == nil && len(resp.Resources) == 1 && len(resp.Resources[0].Configs) == 1 &&
			resp.Resources[0].Configs[0].Value != nil && *resp.Resources[0].Configs[0].Value == lz4
	})
	produce("plain-topic", 20, 25)
	all := consumeAll(t, c, "plain-topic", 25)
	check(all[:20], 0, 0)
	check(all[20:], 20, 3)
}
