package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/raftka/raftka/broker/brokertest"
)

// eagerlyCompacted is the config of a compacted topic whose 1 MiB segments
// are cleaned as soon as anything in them is superseded, tombstones
// included.
func eagerlyCompacted() map[string]*string {
	configs := map[string]*string{}
	for k, v := range map[string]string{"cleanup.policy": "compact", "segment.bytes": "1048576",
		"delete.retention.ms": "0", "min.cleanable.dirty.ratio": "0.01"} {
		configs[k] = &v
	}
	return configs
}

// readCompacted reads a partition from its start to its high watermark and
// returns every record, as a consumer of a compacted topic sees it.
func readCompacted(t *testing.T, c *brokertest.Cluster, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var end kadm.ListedOffset
	waitFor(t, 30*time.Second, "the partition's end offset", func() bool {
		ends, err := c.Admin().ListEndOffsets(ctx, topic)
		if err == nil {
			end, _ = ends.Lookup(topic, 0)
		}
		return err == nil && end.Err == nil
	})
	cl := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset < end.Offset-1 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d records, the last at %v; end offset %d: %v", len(out), out[len(out)-1:], end.Offset, err)
		}
		fetches.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		out = append(out, fetches.Records()...)
	}
	return out
}

// TestCompactedTopicKeepsTheNewestValueOfEachKey: on a compacted topic,
// every replica ends up holding the newest record of each key at its
// original offset, and no deleted key, whichever replica leads and
// whichever client reads (franz-go, kcat); a record without a key is
// refused.
func TestCompactedTopicKeepsTheNewestValueOfEachKey(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, ExtraFlags: []string{"--log-cleaner-interval", "200ms"}})
	c.CreateTopic("compacted", 1, 3, eagerlyCompacted())
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("compacted"),
		kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Values that compression cannot shrink, so the records fill segments.
	rng := rand.New(rand.NewPCG(1, 2))
	pad := func() string {
		b := make([]byte, 4096)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	newest := map[string]*kgo.Record{} // what survives, with the offset it was given
	send := func(key string, value []byte) {
		r := &kgo.Record{Key: []byte(key), Value: value}
		if err := producer.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		newest[key] = r
	}
	for round := 0; round < 5; round++ {
		for k := 0; k < 100; k++ {
			send(fmt.Sprint("key-", k), []byte(fmt.Sprint("round-", round, pad())))
		}
	}
	for k := 0; k < 10; k++ {
		send(fmt.Sprint("key-", k), nil) // deleted
	}
	for i := 0; i < 300; i++ { // about 1.2 MB: everything above is in segments no longer written
		send(fmt.Sprint("filler-", i), []byte(pad()))
	}
	err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("a keyless record on a compacted topic: %v, want INVALID_RECORD", err)
	}

	// 4 older values of 90 keys, and all 5 values and the tombstone of 10.
	const removed = 4*90 + 6*10
	for i := range c.Brokers {
		waitFor(t, 30*time.Second, fmt.Sprintf("broker %d to compact its replica", i), func() bool {
			n, _ := c.Metric(i, "raftka_log_cleaner_records_removed_total")
			if n > removed {
				t.Fatalf("broker %d removed %v records, only %d are superseded", i, n, removed)
			}
			return n == removed
		})
	}
	check := func(got []*kgo.Record) {
		t.Helper()
		seen := map[string]bool{}
		for _, r := range got {
			k := string(r.Key)
			want := newest[k]
			switch {
			case seen[k]:
				t.Fatalf("key %s read twice", k)
			case want == nil || want.Value == nil:
				t.Fatalf("deleted key %s read at %d", k, r.Offset)
			case r.Offset != want.Offset || string(r.Value) != string(want.Value):
				t.Fatalf("key %s: %.12q at %d, want %.12q at %d", k, r.Value, r.Offset, want.Value, want.Offset)
			}
			seen[k] = true
		}
		if len(got) != 390 {
			t.Fatalf("read %d records, want 390 (90 keys and 300 fillers)", len(got))
		}
	}
	check(readCompacted(t, c, "compacted"))

	keys := strings.Fields(kcat(t, "", "-C", "-b", strings.Join(c.AllAddrs(), ","), "-t", "compacted", "-o", "beginning", "-e", "-q", "-f", "%k\n"))
	sort.Strings(keys)
	if len(keys) != 390 || keys[0] != "filler-0" || keys[len(keys)-1] != "key-99" {
		t.Fatalf("kcat read %d keys, from %v to %v", len(keys), keys[:1], keys[len(keys)-1:])
	}

	// Every replica compacted its own log: a new leader serves the same.
	c.Kill(c.LeaderOf("compacted", 0))
	check(readCompacted(t, c, "compacted"))
}

// replicaTable reads broker i's own replica of a one-partition topic (a
// follower fetch, which any replica answers from its log) and returns the
// table a consumer would build from it: the last value of every key, with
// tombstones deleting.
func replicaTable(t *testing.T, c *brokertest.Cluster, i int, topic string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := c.Client()
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	table := map[string]string{}
	for from := int64(0); ; {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = 1000, 1000, -1
		req.MaxBytes = 16 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, details[topic].ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = from, 8<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		kresp, err := cl.Broker(i).Request(ctx, req)
		if err != nil {
			t.Fatalf("fetch from broker %d: %v", i, err)
		}
		resp := kresp.(*kmsg.FetchResponse)
		part := resp.Topics[0].Partitions[0]
		if part.ErrorCode != 0 {
			t.Fatalf("fetch from broker %d at %d: %v", i, from, kerr.ErrorForCode(part.ErrorCode))
		}
		fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: from, Topic: topic}, &part, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			t.Fatalf("broker %d's batches at %d: %v", i, from, fp.Err)
		}
		for _, r := range fp.Records {
			if r.Value == nil {
				delete(table, string(r.Key))
			} else {
				table[string(r.Key)] = string(r.Value)
			}
		}
		if next >= part.HighWatermark || len(part.RecordBatches) == 0 {
			return table
		}
		from = next
	}
}

// TestEveryReplicaCompactsToTheSameTable: while a compacted topic is
// written (deletes included) and its replicas are SIGKILLed and restarted,
// so that passes are cut short and restarted replicas catch up, every
// replica's own log still reads as the table of everything produced.
func TestEveryReplicaCompactsToTheSameTable(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3, ExtraFlags: []string{"--log-cleaner-interval", "100ms"}})
	c.CreateTopic("table", 1, 3, eagerlyCompacted())
	producer := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("table"),
		kgo.ProducerBatchCompression(kgo.SnappyCompression()), kgo.RecordDeliveryTimeout(30*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rng := rand.New(rand.NewPCG(3, 4))
	truth := map[string]string{}
	for round := 0; round < 12; round++ {
		if round%4 == 2 {
			victim := (c.LeaderOf("table", 0) + 1 + round/4) % 3
			c.Kill(victim)
			defer func() {
				if !c.Running(victim) {
					c.Restart(victim)
				}
			}()
		}
		if round%4 == 3 {
			for i := range c.Brokers {
				if !c.Running(i) {
					c.Restart(i)
					c.WaitReady(i)
				}
			}
		}
		for k := 0; k < 40; k++ {
			key := fmt.Sprint("key-", k)
			r := &kgo.Record{Key: []byte(key)}
			if rng.IntN(8) > 0 {
				value := make([]byte, 4096)
				for i := range value {
					value[i] = byte('a' + rng.IntN(26))
				}
				r.Value = value
			}
			if err := producer.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("round %d, %s: %v", round, key, err)
			}
			if r.Value == nil {
				delete(truth, key)
			} else {
				truth[key] = string(r.Value)
			}
		}
	}
	for i := range c.Brokers {
		if !c.Running(i) {
			c.Restart(i)
			c.WaitReady(i)
		}
	}
	for i := range c.Brokers {
		// 480 records of 4 KiB, 2 MB: compacted (by the replica itself or,
		// caught up from a peer, before it) the closed segments shrink to
		// about one record per key, and the active one holds at most 1 MiB.
		waitFor(t, 30*time.Second, fmt.Sprintf("broker %d to catch up and compact", i), func() bool {
			hw, _ := c.Metric(i, "raftka_partition_high_watermark", `topic="table"`)
			size, _ := c.Metric(i, "raftka_partition_size_bytes", `topic="table"`)
			return hw == 480 && size < 1.5*(1<<20)
		})
		if got := replicaTable(t, c, i, "table"); fmt.Sprint(got) != fmt.Sprint(truth) {
			t.Fatalf("broker %d's replica reads as %d keys, want %d; the first differing key tells which", i, len(got), len(truth))
		}
	}
}
