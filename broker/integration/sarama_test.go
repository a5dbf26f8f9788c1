package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/raftka/raftka/broker/brokertest"
)

// saramaConfig is what a sarama user sets for no loss and no duplicates.
func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.ClientID = "sarama-test"
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 10
	cfg.Net.MaxOpenRequests = 1
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRoundRobin()}
	return cfg
}

// TestSaramaAdminProduceAndGroupConsume: IBM/sarama creates a topic through
// its cluster admin, produces idempotently with acks=all, and consumes it in
// a group with manual commits that the brokers then report.
func TestSaramaAdminProduceAndGroupConsume(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	cfg := saramaConfig()

	admin, err := sarama.NewClusterAdmin(c.AllAddrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	if err := admin.CreateTopic("sarama", &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 3,
		ConfigEntries: map[string]*string{"min.insync.replicas": ptrTo("2")}}, false); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	topics, err := admin.DescribeTopics([]string{"sarama"})
	if err != nil || len(topics) != 1 || topics[0].Err != sarama.ErrNoError || len(topics[0].Partitions) != 3 {
		t.Fatalf("describe topics: %v %+v", err, topics)
	}

	producer, err := sarama.NewSyncProducer(c.AllAddrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	next := map[int32]int64{}
	for i := 0; i < n; i++ {
		msg := &sarama.ProducerMessage{Topic: "sarama", Key: sarama.StringEncoder(fmt.Sprintf("k%d", i%11)), Value: sarama.StringEncoder(fmt.Sprint(i))}
		partition, offset, err := producer.SendMessage(msg)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if offset != next[partition] {
			t.Fatalf("record %d got offset %d on partition %d, want %d", i, offset, partition, next[partition])
		}
		next[partition]++
	}
	if err := producer.Close(); err != nil {
		t.Fatal(err)
	}

	group, err := sarama.NewConsumerGroup(c.AllAddrs(), "sarama-group", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = group.Close() }()
	handler := &collectingHandler{want: n, done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if err := group.Consume(ctx, []string{"sarama"}, handler); err != nil && ctx.Err() == nil {
				t.Logf("consume: %v", err)
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	select {
	case <-handler.done:
	case <-ctx.Done():
		t.Fatalf("consumed %d of %d records", handler.count(), n)
	}
	cancel()

	// The group's commits are on the brokers: every partition at its end.
	offsets, err := c.Admin().FetchOffsets(context.Background(), "sarama-group")
	if err != nil {
		t.Fatal(err)
	}
	for p, end := range next {
		got, ok := offsets.Lookup("sarama", p)
		if !ok || got.At != end {
			t.Fatalf("partition %d: committed %+v, want %d", p, got, end)
		}
	}
	if dup := handler.duplicates(); dup > 0 {
		t.Fatalf("%d records consumed twice", dup)
	}
}

func ptrTo(s string) *string { return &s }

// collectingHandler consumes until it has seen want distinct records,
// committing whenever a claim has caught up with its partition.
type collectingHandler struct {
	mu   sync.Mutex
	seen map[string]int
	want int
	done chan struct{}
	once sync.Once
}

func (h *collectingHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *collectingHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *collectingHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		h.mu.Lock()
		if h.seen == nil {
			h.seen = map[string]int{}
		}
		h.seen[string(msg.Value)]++
		complete := len(h.seen) >= h.want
		h.mu.Unlock()
		sess.MarkMessage(msg, "")
		if msg.Offset+1 == claim.HighWaterMarkOffset() {
			sess.Commit() // caught up: commit what this claim consumed
		}
		if complete {
			h.once.Do(func() { close(h.done) })
		}
	}
	return nil
}

func (h *collectingHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

func (h *collectingHandler) duplicates() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	dup := 0
	for _, n := range h.seen {
		dup += n - 1
	}
	return dup
}
