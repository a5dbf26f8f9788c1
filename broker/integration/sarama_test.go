package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"

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

// TestSaramaAdminCallsOfKafkasTools makes, through sarama's cluster admin,
// the calls Kafka's command-line tools make: kafka-topics.sh (with
// --replica-assignment), kafka-configs.sh on a broker, kafka-delete-records.sh,
// kafka-get-offsets.sh, kafka-consumer-groups.sh (list, describe,
// --reset-offsets), kafka-reassign-partitions.sh (cancel, move, --list) and
// kafka-leader-election.sh. Each outcome is read back from the brokers.
func TestSaramaAdminCallsOfKafkasTools(t *testing.T) {
	c := brokertest.Start(t, brokertest.Options{Brokers: 3})
	admin, err := sarama.NewClusterAdmin(c.AllAddrs(), saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Close() }()
	c.CreateTopic("tools", 1, 3, nil) // once every broker registered
	brokers, _, err := admin.DescribeCluster()
	if err != nil || len(brokers) != 3 {
		t.Fatalf("describe cluster: %d brokers, %v", len(brokers), err)
	}
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "tools", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.DeleteRecords("tools", map[int32]int64{0: 10}); err != nil {
		t.Fatalf("delete records: %v", err)
	}
	listed, err := admin.ListOffsets(map[string]map[int32]int64{"tools": {0: sarama.OffsetOldest}}, nil)
	if err != nil || listed["tools"][0].Offset != 10 {
		t.Fatalf("list offsets after deleting records before 10: %+v, %v", listed["tools"][0], err)
	}

	const group = "tools-group"
	if _, err := admin.AlterConsumerGroupOffsets(group, map[string]map[int32]sarama.OffsetAndMetadata{"tools": {0: {Offset: 15}}}, nil); err != nil {
		t.Fatalf("reset the group's offsets: %v", err)
	}
	groups, err := admin.ListConsumerGroups()
	if _, ok := groups[group]; err != nil || !ok {
		t.Fatalf("list consumer groups: %v, %v", groups, err)
	}
	described, err := admin.DescribeConsumerGroups([]string{group})
	if err != nil || len(described) != 1 || described[0].State != "Empty" {
		t.Fatalf("describe consumer groups: %+v, %v", described, err)
	}
	committed, err := admin.ListConsumerGroupOffsets(group, nil)
	if err != nil || committed.GetBlock("tools", 0) == nil || committed.GetBlock("tools", 0).Offset != 15 {
		t.Fatalf("list the group's offsets: %+v, %v", committed, err)
	}

	saramaReassign(t, admin)
}

// saramaReassign: a topic created on brokers [2,1] and [0,2] grows a
// partition on [1,2], the throttle is set on a broker, cancelling a move
// that does not exist fails as Kafka says, partition 0 moves to [0,1], and
// a preferred election makes its first replica lead, or needs no change.
func saramaReassign(t *testing.T, admin sarama.ClusterAdmin) {
	const moved = "tools-moved"
	if err := admin.CreateTopic(moved, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: map[int32][]int32{0: {2, 1}, 1: {0, 2}}}, false); err != nil {
		t.Fatalf("create a topic on given brokers: %v", err)
	}
	if err := admin.CreatePartitions(moved, 3, [][]int32{{1, 2}}, false); err != nil {
		t.Fatalf("grow a partition on given brokers: %v", err)
	}
	if err := admin.IncrementalAlterConfig(sarama.BrokerResource, "0", map[string]sarama.IncrementalAlterConfigsEntry{
		"follower.replication.throttled.rate": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: ptrTo("10000000")}}, false); err != nil {
		t.Fatalf("set a broker's throttle: %v", err)
	}
	if err := admin.AlterPartitionReassignments(moved, [][]int32{nil}); !errors.Is(err, sarama.ErrNoReassignmentInProgress) {
		t.Fatalf("cancelling a move that does not exist: %v, want NO_REASSIGNMENT_IN_PROGRESS", err)
	}
	if err := admin.AlterPartitionReassignments(moved, [][]int32{{0, 1}}); err != nil {
		t.Fatalf("move partition 0 to [0,1]: %v", err)
	}
	waitFor(t, 30*time.Second, "the move to finish", func() bool {
		moving, err := admin.ListPartitionReassignments(moved, []int32{0, 1, 2})
		if err != nil {
			t.Fatal(err)
		}
		return len(moving[moved]) == 0
	})
	md, err := admin.DescribeTopics([]string{moved})
	if err != nil || len(md) != 1 || len(md[0].Partitions) != 3 {
		t.Fatalf("describe %s: %+v, %v", moved, md, err)
	}
	replicas := map[int32][]int32{}
	for _, p := range md[0].Partitions {
		replicas[p.ID] = p.Replicas
	}
	if !slices.Equal(replicas[0], []int32{0, 1}) || !slices.Equal(replicas[2], []int32{1, 2}) {
		t.Fatalf("replicas after the move %v, of the new partition %v", replicas[0], replicas[2])
	}
	elected, err := admin.ElectLeaders(sarama.PreferredElection, map[string][]int32{moved: {0}})
	if err != nil {
		t.Fatalf("elect leaders: %v", err)
	}
	if r := elected[moved][0]; r == nil || (r.ErrorCode != sarama.ErrNoError && r.ErrorCode != sarama.ErrElectionNotNeeded) {
		t.Fatalf("preferred election of a partition its preferred replica leads: %+v", r)
	}
}
