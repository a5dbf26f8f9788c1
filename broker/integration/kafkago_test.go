package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"

	"github.com/raftka/raftka/broker/brokertest"
)

// TestKafkaGoProduceAndGroupConsume: segmentio/kafka-go, a protocol
// implementation of its own that asks for older API versions than franz-go,
// creates a topic, writes with acks=all and reads in a consumer group with
// synchronous commits that the brokers then report.
func TestKafkaGoProduceAndGroupConsume(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	addr := kafka.TCP(c.AllAddrs()...)

	client := &kafka.Client{Addr: addr, Timeout: 10 * time.Second}
	created, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: "kafkago", NumPartitions: 3, ReplicationFactor: 3,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "min.insync.replicas", ConfigValue: "2"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := created.Errors["kafkago"]; err != nil {
		t.Fatalf("create topic: %v", err)
	}

	w := &kafka.Writer{Addr: addr, Topic: "kafkago", Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
		BatchTimeout: 10 * time.Millisecond, MaxAttempts: 10}
	const n = 300
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte(fmt.Sprintf("k%d", i%11)), Value: []byte(fmt.Sprint(i))}
	}
	// The topic's leaders may still be settling: the writer retries
	// leader-not-available itself, up to MaxAttempts.
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.AllAddrs(), GroupID: "kafkago-group", Topic: "kafkago",
		StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond})
	defer func() { _ = r.Close() }()
	seen := map[string]int{}
	ends := map[int]int64{}
	for len(seen) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("fetch after %d records: %v", len(seen), err)
		}
		seen[string(m.Value)]++
		if seen[string(m.Value)] > 1 {
			t.Fatalf("record %s read twice", m.Value)
		}
		if m.Offset+1 > ends[m.Partition] {
			ends[m.Partition] = m.Offset + 1
		}
		if err := r.CommitMessages(ctx, m); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}

	offsets, err := c.Admin().FetchOffsets(ctx, "kafkago-group")
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	for p, end := range ends {
		got, ok := offsets.Lookup("kafkago", int32(p))
		if !ok || got.At != end {
			t.Fatalf("partition %d: committed %+v, want %d", p, got, end)
		}
		committed += got.At
	}
	if committed != n {
		t.Fatalf("commits cover %d records, want %d", committed, n)
	}
}
